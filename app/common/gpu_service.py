"""The one GPU worker as a shared service of the window: its thread, one `submit(job)`, one
`outcome` and one `progress` signal (from the worker thread, queued to the GUI thread), and one
`busy` property the controllers ask. `make_generator` is what the worker calls, on its own
thread, to make the Generator that owns every engine object."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from app.common.background_jobs import JobOutcome
from app.common.displaydata import for_result
from app.common.gpu_jobs import LIST
from app.common.texts import LIST_RUNNING
from app.common.worker import GpuJob, GpuWorker, JobKey, JobProgress, Submitted, WorkerHost
from engines.errors import StudioError
from engines.models.inventory import default_catalog

if TYPE_CHECKING:
    from engines.generator import Generator

log = logging.getLogger(__name__)

GENERATION_RUNNING = "A generation is already running; wait for it or press Cancel."
NO_WORKER = "The GPU worker is not running."


def make_generator() -> Generator:
    """Runs on the GPU worker thread (the Generator owns every engine object)."""
    # Imported here, on the worker thread at its first take: the backends' modules load there,
    # never on the GUI thread while the window opens.
    from engines.generator import Generator

    return Generator(default_catalog())


class GpuRefused(StudioError):
    """New exclusive GPU work while other exclusive work runs (or no worker)."""


class GpuService(QObject):
    """The one GPU worker (on its own thread) and the exclusive job it is running."""

    progress = Signal(object)  # JobProgress
    outcome = Signal(object)  # JobOutcome

    def __init__(self, make_generator: Callable[[], object], make_library: Callable[[], object],
                 *, start: bool = True, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.worker = GpuWorker(make_generator, for_result, make_library)
        self.host = WorkerHost(self.worker, self) if start else None
        self._numbers = 0
        self.running: GpuJob | None = None  # the exclusive job under way
        # Connected here first, so `busy` is already False when a controller hears an outcome.
        self.worker.outcome.connect(self._finished)
        self.worker.progress.connect(self.progress)

    @property
    def busy(self) -> bool:
        """Whether exclusive work (takes, a model loop, a sound list) is under way."""
        return bool(self.running)

    def refusal(self) -> str | None:
        """The one sentence saying why new exclusive work cannot start now, or None."""
        if self.host is None:
            return NO_WORKER
        if not self.running:
            return None
        return LIST_RUNNING if self.running.kind == LIST else GENERATION_RUNNING

    def submit(self, job: GpuJob) -> JobKey:
        """Queue `job` on the worker thread; its outcome comes back by `outcome` with the
        returned key. Exclusive work while other exclusive work runs is refused (GpuRefused)."""
        why = self.refusal() if job.exclusive else (NO_WORKER if self.host is None else None)
        if why is not None:
            raise GpuRefused(why)
        self._numbers += 1
        job.key = JobKey(job.kind, self._numbers)
        if job.exclusive:
            self.running = job
        self.host.submit(job)
        self.progress.emit(JobProgress(job.key, Submitted(job.payload)))
        return job.key

    def cancel(self, kind: str | None = None) -> bool:
        """Ask the running exclusive job (of `kind`, if given) to stop: after the current step
        on ONNX Runtime, after the take under way on TensorRT (engines.backends.base); False if
        none is running."""
        if self.running is None or self.host is None:
            return False
        if kind is not None and self.running.kind != kind:
            return False
        self.host.cancel()
        return True

    def _finished(self, outcome: JobOutcome) -> None:
        if self.running is not None and outcome.key == self.running.key:
            self.running = None
        self.outcome.emit(outcome)

    def stop(self) -> None:
        if self.host is not None:
            self.host.stop()
            self.host = None
