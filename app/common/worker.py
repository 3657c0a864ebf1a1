"""The one GPU worker: a QObject on a dedicated QThread that owns the Generator (and with it
every CUDA/TensorRT or ONNX Runtime object) for its whole life.

Requests arrive by queued signal; results go back as GenerationResult objects whose arrays are
owned copies. Cancel is a thread-safe flag the engines check between steps. Heavy per-take
display data (waveform peak pyramid, spectrogram) is computed here too, so the GUI thread
only draws. Model loops (engines.finish.loop) run here as well: they regenerate a seam with
the same Generator, so they queue behind (and never beside) the takes being generated; so do
live audition's renders (engines.live: one at a time, the newest change wins).
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QThread, Signal, Slot

from app.common.notifier import user_sentence
from app.common.threads import stop_thread
from engines.audio_io import float_from_pcm16
from engines.errors import CancelledError, StudioError
from engines.finish.loop import make_loop
from engines.live.worker import serve_pending
from engines.request import MAX_SEED, GenerationRequest

if TYPE_CHECKING:
    from engines.generation_result import GenerationResult

log = logging.getLogger(__name__)


@dataclass
class Job:
    """One take to generate; `index`/`total` place it in its batch (variations)."""

    request: GenerationRequest
    index: int = 0
    total: int = 1
    label: str = ""
    replace_id: int | None = None  # library row whose missing audio this take restores
    parent_id: int | None = None  # library row of the init audio (lineage)
    init_source: str | None = None  # the init audio's original file, if imported
    reroll_flagged: int = 0  # a take with quality flags is made again with a new seed, so often
    from_live: bool = False  # kept from live audition, where it is already playing


@dataclass
class Batch:
    batch_id: int
    jobs: list[Job] = field(default_factory=list)


@dataclass
class GeneratedTake:
    """What the GUI receives for one generated take (GpuWorker.takeReady)."""

    batch_id: int
    job: Job
    result: GenerationResult
    display: dict  # precomputed view data (see app.common.displaydata)
    library_id: int | None = None  # its row in the sound library
    library_error: str | None = None
    rejected: list[tuple[int, list[str]]] = field(default_factory=list)  # (seed, flags) rerolled


@dataclass
class Reroll:
    """A flagged take of a batch is being made again with a new seed (said in the status)."""

    batch_id: int
    index: int
    total: int
    seed: int  # the flagged take's seed
    flags: list[str]
    new_seed: int
    attempt: int
    limit: int


@dataclass
class LoopJob:
    """A model loop (engines.finish.loop.make_loop) run with the Generator this thread owns."""

    job_id: int
    audio: object  # float (N, 2) at 44.1 kHz: the raw take
    request: object  # the take's request: the seam is regenerated with its prompt and settings
    seam_s: float
    seed: int | None = None  # the seam's seed (None: a new one); a stored chain names its seed


@dataclass
class ListJob:
    """A sound list (app.batch.run) rendered with the Generator this thread owns:
    fn(generator, cancel_event) -> summary; it reports each take through its own callbacks."""

    job_id: int
    fn: Callable


@dataclass
class LiveWork:
    """Live audition (engines.live): what `scheduler` holds is rendered here, one change at a
    time, by render(generator, change, cancel) with the Generator this thread owns."""

    scheduler: object  # engines.live.scheduler.LiveScheduler
    render: Callable


@dataclass
class Task:
    """Other GPU work (engine builds, the self-test): fn(report, cancel_event) -> result."""

    task_id: int
    fn: Callable
    label: str = ""


class GpuWorker(QObject):
    progress = Signal(int, int, int, str, int, int)  # batch, index, total, stage, done, steps
    taskProgress = Signal(int, str)  # task, one line
    taskDone = Signal(int, object)
    taskFailed = Signal(int, str)
    takeReady = Signal(object)  # GeneratedTake
    failed = Signal(int, str)  # batch, one-sentence message
    cancelled = Signal(int)
    batchDone = Signal(int)
    rerolled = Signal(object)  # Reroll
    loopDone = Signal(int, object)  # job, engines.finish.loop.LoopResult
    loopFailed = Signal(int, str)  # job, one sentence
    listDone = Signal(int, object)  # list job, its summary (engines.batch.session.BatchSummary)
    listFailed = Signal(int, str)  # list job, one sentence
    liveRendered = Signal(object)  # engines.live.scheduler.LiveOutcome of a live render

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
        engine object (a Task's fn may call it, since tasks run here too)."""
        if self._generator is None:
            self._generator = self._make_generator()
        return self._generator

    @Slot(object)
    def run_batch(self, batch: Batch) -> None:
        try:
            self.generator()
            for job in batch.jobs:
                if self.cancel_flag.is_set():
                    self.cancelled.emit(batch.batch_id)
                    return

                def report(stage: str, done: int, total: int, job=job) -> None:
                    self.progress.emit(batch.batch_id, job.index, job.total, stage, done, total)

                result, rejected = self._generate(batch.batch_id, job, report)
                display = self._make_display(result) if self._make_display else {}
                finished = GeneratedTake(batch.batch_id, job, result, display, rejected=rejected)
                self._record(job, finished)
                self.takeReady.emit(finished)
        except CancelledError:
            self.cancelled.emit(batch.batch_id)
        except StudioError as exc:
            log.info("generation refused: %s", exc, exc_info=True)
            self.failed.emit(batch.batch_id, str(exc))
        except Exception as exc:  # a bug: one sentence for the user, the traceback to the log
            log.exception("generation failed")
            self.failed.emit(batch.batch_id, f"Generation failed unexpectedly ({type(exc).__name__}"
                                             f": {exc}); details are in the log file.")
        finally:
            self.batchDone.emit(batch.batch_id)

    def _generate(self, batch_id: int, job: Job, report) -> tuple[object, list]:
        """One take of the batch; a flagged one (silence, clipping, ...) is replaced by a new
        seed up to job.reroll_flagged times, the last one kept whatever its flags."""
        result = self._generator.generate(job.request, report, self.cancel_flag.is_set)
        rejected: list[tuple[int, list[str]]] = []
        for attempt in range(1, job.reroll_flagged + 1):
            if not result.quality or self.cancel_flag.is_set():
                break
            seed = secrets.randbelow(MAX_SEED + 1)
            rejected.append((result.seed, list(result.quality)))
            self.rerolled.emit(Reroll(batch_id, job.index, job.total, result.seed,
                                      list(result.quality), seed, attempt, job.reroll_flagged))
            result = self._generator.generate(replace(job.request, seed=seed), report,
                                              self.cancel_flag.is_set)
        return result, rejected

    @Slot(object)
    def run_loop(self, job: LoopJob) -> None:
        """Make a seamless loop of a take by regenerating its seam with the model."""
        try:
            generator = self.generator()

            def generate(request):
                return float_from_pcm16(generator.generate(request, None,
                                                           self.cancel_flag.is_set).pcm)

            result = make_loop(job.audio, job.request, generate, seam_s=job.seam_s,
                               seed=job.seed)
        except CancelledError:
            self.loopFailed.emit(job.job_id, "The loop was cancelled; the take is unchanged.")
        except StudioError as exc:
            log.info("loop refused: %s", exc, exc_info=True)
            self.loopFailed.emit(job.job_id, str(exc))
        except Exception as exc:  # noqa: BLE001 - one sentence for the user, details in the log
            log.exception("making a loop failed")
            self.loopFailed.emit(job.job_id, user_sentence("Could not make the loop", exc))
        else:
            self.loopDone.emit(job.job_id, result)

    @Slot(object)
    def run_list(self, job: ListJob) -> None:
        """Render a sound list take by take with this thread's Generator; the cancel flag stops
        it after the current take (the list's manifest stays valid)."""
        try:
            summary = job.fn(self.generator(), self.cancel_flag)
        except StudioError as exc:
            log.info("sound list refused: %s", exc, exc_info=True)
            self.listFailed.emit(job.job_id, str(exc))
        except Exception as exc:  # noqa: BLE001 - one sentence for the user, details in the log
            log.exception("rendering a sound list failed")
            self.listFailed.emit(job.job_id, user_sentence("Could not render the sound list",
                                                           exc))
        else:
            self.listDone.emit(job.job_id, summary)

    @Slot(object)
    def run_live(self, work: LiveWork) -> None:
        """Render what live audition has pending, newest first and one at a time (a render
        that went stale meanwhile is dropped); each outcome goes back by liveRendered. A
        failure is an outcome too (engines.live.worker), never an escape from this slot."""
        serve_pending(work.scheduler,
                      lambda change, cancel: work.render(self.generator(), change, cancel),
                      self.liveRendered.emit)

    @Slot(object)
    def keep_take(self, finished: GeneratedTake) -> None:
        """A take rendered already (live audition's Keep) joins the session and the library as
        a generated one does: its display data, its library record from here, then takeReady."""
        try:
            if self._make_display is not None:
                finished.display = self._make_display(finished.result)
        except Exception:  # noqa: BLE001 - the views compute what is missing themselves
            log.exception("preparing the kept take's views failed")
        self._record(finished.job, finished)
        self.takeReady.emit(finished)

    @Slot(object)
    def run_task(self, task: Task) -> None:
        """Engine builds and the self-test also run here: CUDA/TensorRT objects live on this
        thread only."""
        try:
            result = task.fn(lambda text: self.taskProgress.emit(task.task_id, str(text)),
                             self.cancel_flag)
        except CancelledError:
            self.taskFailed.emit(task.task_id, "Cancelled; nothing incomplete was kept.")
        except StudioError as exc:
            log.info("task refused: %s", exc, exc_info=True)
            self.taskFailed.emit(task.task_id, str(exc))
        except Exception as exc:  # noqa: BLE001 - one sentence for the user, details in the log
            log.info("task failed", exc_info=True)
            self.taskFailed.emit(task.task_id, f"{task.label or 'The task'} failed unexpectedly "
                                               f"({type(exc).__name__}: {exc}); details are in "
                                               f"the log file.")
        else:
            self.taskDone.emit(task.task_id, result)

    def _record(self, job: Job, finished: GeneratedTake) -> None:
        """Keep the take in the library from this thread: writing the audio and hashing new
        engine files (seconds for a GB engine, once) never stall the window."""
        if self._make_library is None:
            return
        try:
            if self._library is None:
                self._library = self._make_library()
            if job.replace_id is not None:
                record = self._library.replace_audio(job.replace_id, finished.result)
            else:
                # Its number in the Variations it was made with: {n} and UCS numbering.
                record = self._library.add(finished.result, parent_id=job.parent_id,
                                           init_source=job.init_source,
                                           variation=job.index + 1, variations=job.total)
            finished.library_id = record.id
        except StudioError as exc:
            log.info("library refused the take: %s", exc, exc_info=True)
            finished.library_error = str(exc)
        except Exception as exc:  # noqa: BLE001 - the take itself is fine: keep it
            log.exception("recording the take failed")
            finished.library_error = user_sentence("Could not keep the take in the library",
                                                   exc)

    @Slot()
    def shutdown(self) -> None:
        """Release engines on the thread that created them."""
        if self._generator is not None:
            try:
                self._generator.close()
            except Exception:  # noqa: BLE001 - shutting down; log and go on
                log.exception("closing the generator failed")
            self._generator = None
        if self._library is not None:
            try:
                self._library.close()
            except Exception:  # noqa: BLE001
                log.exception("closing the worker's library connection failed")
            self._library = None


class WorkerHost(QObject):
    """Owns the QThread; `submit(batch)` queues work, `stop()` shuts down cleanly."""

    submitted = Signal(object)
    taskSubmitted = Signal(object)
    loopSubmitted = Signal(object)
    listSubmitted = Signal(object)
    liveSubmitted = Signal(object)
    keepSubmitted = Signal(object)
    shutdownRequested = Signal()

    def __init__(self, worker: GpuWorker, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.worker = worker
        self.thread = QThread()
        self.thread.setObjectName("gpuWorkerThread")
        worker.moveToThread(self.thread)
        self.submitted.connect(worker.run_batch)
        self.taskSubmitted.connect(worker.run_task)
        self.loopSubmitted.connect(worker.run_loop)
        self.listSubmitted.connect(worker.run_list)
        self.liveSubmitted.connect(worker.run_live)
        self.keepSubmitted.connect(worker.keep_take)
        self.shutdownRequested.connect(worker.shutdown)
        self.thread.start()

    def submit(self, batch: Batch) -> None:
        self.worker.cancel_flag.clear()
        self.submitted.emit(batch)

    def submit_task(self, task: Task) -> None:
        self.worker.cancel_flag.clear()
        self.taskSubmitted.emit(task)

    def submit_loop(self, job: LoopJob) -> None:
        self.worker.cancel_flag.clear()
        self.loopSubmitted.emit(job)

    def submit_list(self, job: ListJob) -> None:
        self.worker.cancel_flag.clear()
        self.listSubmitted.emit(job)

    def submit_live(self, work: LiveWork) -> None:
        # no cancel flag: a live render stops when its change goes stale (engines.live)
        self.liveSubmitted.emit(work)

    def keep(self, finished: GeneratedTake) -> None:
        self.keepSubmitted.emit(finished)

    def cancel(self) -> None:
        self.worker.cancel_flag.set()

    def stop(self, timeout_ms: int = 30000) -> None:
        """Cancel what runs, release the engines on their thread, and end it."""
        if not self.thread.isRunning():
            return
        self.worker.cancel_flag.set()
        self.shutdownRequested.emit()
        stop_thread(self.thread, timeout_ms)
