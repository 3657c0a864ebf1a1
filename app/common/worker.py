"""The one GPU worker: a QObject on a dedicated QThread that owns the Generator (and with it
every CUDA/TensorRT or ONNX Runtime object) for its whole life.

Work arrives as one job type (GpuJob: a function run here with a JobContext) through one queued
signal, and goes back as one outcome signal carrying JobOutcome(key, value, error) - the shape
of superqt's worker and our background_jobs. Takes, loops, sound lists, live renders, engine
builds and the self-test are all such jobs (app.common.gpu_jobs builds them), so they queue
behind, never beside, each other. What a job reports while it runs (a step, a finished take of
a batch, a live render) goes back by the one progress signal. Cancel is a thread-safe flag the
engines check between steps.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QObject, QThread, Signal, Slot

from app.common.background_jobs import JobOutcome
from app.common.notifier import user_sentence
from app.common.threads import stop_thread
from engines.errors import CancelledError, StudioError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobKey:
    """Names one submitted job in its progress and outcome: its kind and its number."""

    kind: str  # app.common.gpu_jobs: BATCH, LOOP, LIST, LIVE, KEEP, TASK
    number: int


@dataclass
class JobProgress:
    """Something a running job reports (a step, a finished take, a live render, a line)."""

    key: JobKey
    value: object


@dataclass
class Submitted:
    """The first progress value of every job, sent by GpuService.submit on the GUI thread."""

    payload: object


@dataclass
class JobContext:
    """What a job's function may use on the worker thread."""

    generator: Callable[[], object]  # the Generator, made on first use
    report: Callable[[object], None]  # sends a JobProgress for this job
    cancel: threading.Event
    display: Callable[[object], dict] | None  # precomputed view data for a result
    library: Callable[[], object] | None  # this thread's library connection, made on first use


@dataclass
class GpuJob:
    """One unit of GPU work: run(context) on the worker thread -> the outcome's value."""

    kind: str
    run: Callable[[JobContext], object]
    failure: str = "The GPU job failed"  # leads the sentence of an unexpected failure
    cancelled: str = "Cancelled; nothing incomplete was kept."
    exclusive: bool = False  # counts toward GpuService.busy (new exclusive work is refused)
    clears_cancel: bool = True  # live renders stop by going stale, not by the cancel flag
    payload: object = None  # what the submitter wants back with the outcome (ids, counts)
    key: JobKey | None = None  # given by GpuService.submit


class GpuWorker(QObject):
    progress = Signal(object)  # JobProgress
    outcome = Signal(object)  # JobOutcome: value, or error as a StudioError worded for users

    def __init__(self, make_generator: Callable[[], object],
                 make_display: Callable[[object], dict] | None = None,
                 make_library: Callable[[], object] | None = None) -> None:
        super().__init__()
        self._make_generator = make_generator
        self._make_display = make_display
        self._make_library = make_library
        self._generator = None
        self._library = None
        self.cancel_flag = threading.Event()

    def generator(self):
        """The Generator, created on first use. Call it on this thread only: it owns every
        engine object."""
        if self._generator is None:
            self._generator = self._make_generator()
        return self._generator

    def library(self):
        if self._library is None and self._make_library is not None:
            self._library = self._make_library()
        return self._library

    @Slot(object)
    def run(self, job: GpuJob) -> None:
        """The one job runner: every failure becomes one sentence for the user (a
        StudioError in the outcome), the traceback of a bug goes to the log."""
        context = JobContext(self.generator, lambda value: self.progress.emit(
            JobProgress(job.key, value)), self.cancel_flag, self._make_display,
            self.library if self._make_library is not None else None)
        try:
            outcome = JobOutcome(job.key, value=job.run(context))
        except CancelledError:
            outcome = JobOutcome(job.key, error=CancelledError(job.cancelled))
        except StudioError as exc:
            log.info("GPU job %s refused: %s", job.kind, exc, exc_info=True)
            outcome = JobOutcome(job.key, error=exc)
        except Exception as exc:  # noqa: BLE001 - the one safety net of GPU work: a bug
            log.exception("GPU job %s failed", job.kind)
            outcome = JobOutcome(job.key, error=StudioError(user_sentence(job.failure, exc)))
        self.outcome.emit(outcome)

    @Slot()
    def shutdown(self) -> None:
        """Release engines on the thread that created them."""
        for name in ("_generator", "_library"):
            held = getattr(self, name)
            if held is None:
                continue
            try:
                held.close()
            except Exception:  # noqa: BLE001 - shutting down: log and release the rest
                log.exception("closing the worker's %s failed", name.strip("_"))
            setattr(self, name, None)


class WorkerHost(QObject):
    """Owns the QThread; `submit(job)` queues work, `stop()` shuts down cleanly."""

    submitted = Signal(object)
    shutdownRequested = Signal()

    def __init__(self, worker: GpuWorker, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.worker = worker
        self.thread = QThread()
        self.thread.setObjectName("gpuWorkerThread")
        worker.moveToThread(self.thread)
        self.submitted.connect(worker.run)
        self.shutdownRequested.connect(worker.shutdown)
        self.thread.start()

    def submit(self, job: GpuJob) -> None:
        if job.clears_cancel:
            self.worker.cancel_flag.clear()
        self.submitted.emit(job)

    def cancel(self) -> None:
        self.worker.cancel_flag.set()

    def stop(self, timeout_ms: int = 30000) -> None:
        """Cancel what runs, release the engines on their thread, and end it."""
        if not self.thread.isRunning():
            return
        self.worker.cancel_flag.set()
        self.shutdownRequested.emit()
        stop_thread(self.thread, timeout_ms)
