"""The one GPU worker as a shared service of the window: its thread, and the batch, model loop,
sound list or task it is running. `make_generator` is what the worker calls, on its own thread,
to make the Generator that owns every engine object."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from app.common.displaydata import for_result
from app.common.worker import (
    Batch,
    GeneratedTake,
    GpuWorker,
    Job,
    ListJob,
    LiveWork,
    LoopJob,
    Task,
    WorkerHost,
)
from engines.models.inventory import default_catalog
from engines.request import GenerationRequest

if TYPE_CHECKING:
    from engines.generation_result import GenerationResult
    from engines.generator import Generator
    from engines.live.scheduler import LiveScheduler

log = logging.getLogger(__name__)


def make_generator() -> Generator:
    """Runs on the GPU worker thread (the Generator owns every engine object)."""
    # Imported here, on the worker thread at its first take: the backends' modules load there,
    # never on the GUI thread while the window opens.
    from engines.generator import Generator

    return Generator(default_catalog())


class GpuService(QObject):
    """The one GPU worker (on its own thread) and the batch, model loop or sound list it is
    running."""

    batchStarted = Signal(int)  # number of takes
    batchFinished = Signal()

    def __init__(self, make_generator: Callable[[], object], make_library: Callable[[], object],
                 *, start: bool = True, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.worker = GpuWorker(make_generator, for_result, make_library)
        self.host = WorkerHost(self.worker, self) if start else None
        self.batch_id = 0
        self.running = False
        self.task_counter = 0
        self.loop_id = 0
        self.loop_running = False
        self.list_id = 0
        self.list_running = False
        self.worker.batchDone.connect(self._batch_done)
        self.worker.loopDone.connect(self._loop_done)
        self.worker.loopFailed.connect(self._loop_done)
        self.worker.listDone.connect(self._list_done)
        self.worker.listFailed.connect(self._list_done)

    @property
    def busy(self) -> bool:
        """Whether the worker is generating or making a loop (new work would wait for it)."""
        return self.running or self.loop_running or self.list_running

    def submit(self, requests: list[GenerationRequest], *, replace_id: int | None = None,
               parent_id: int | None = None, init_source: str | None = None,
               reroll_flagged: int = 0) -> None:
        self.batch_id += 1
        jobs = [Job(request=r, index=i, total=len(requests), label=r.prompt,
                    replace_id=replace_id, parent_id=parent_id, init_source=init_source,
                    reroll_flagged=reroll_flagged)
                for i, r in enumerate(requests)]
        self.running = True
        self.batchStarted.emit(len(requests))
        if self.host is None:
            raise RuntimeError("the GPU worker is not running")
        self.host.submit(Batch(self.batch_id, jobs))

    def cancel(self) -> bool:
        """Ask the running batch to stop: after the current step on ONNX Runtime, after the take
        under way on TensorRT (engines.backends.base); False if none is running."""
        if self.running and self.host is not None:
            self.host.cancel()
            return True
        return False

    def submit_loop(self, audio, request, seam_s: float, seed: int | None = None) -> int:
        """Queue a model loop of a take; its answer comes back as worker.loopDone/loopFailed
        with the returned id."""
        if self.host is None:
            raise RuntimeError("the GPU worker is not running")
        self.loop_id += 1
        self.loop_running = True
        self.host.submit_loop(LoopJob(self.loop_id, audio, request, seam_s, seed))
        return self.loop_id

    def _loop_done(self, job_id: int, _answer: object) -> None:
        if job_id == self.loop_id:
            self.loop_running = False

    def submit_list(self, fn: Callable) -> int:
        """Queue a sound list: fn(generator, cancel_event) runs on the worker thread; its answer
        comes back as worker.listDone/listFailed with the returned id."""
        if self.host is None:
            raise RuntimeError("the GPU worker is not running")
        self.list_id += 1
        self.list_running = True
        self.host.submit_list(ListJob(self.list_id, fn))
        return self.list_id

    def cancel_list(self) -> bool:
        """Ask the running sound list to stop after its current take; False if none runs."""
        if self.list_running and self.host is not None:
            self.host.cancel()
            return True
        return False

    def _list_done(self, job_id: int, _answer: object) -> None:
        if job_id == self.list_id:
            self.list_running = False

    def submit_live(self, scheduler: LiveScheduler, render: Callable) -> None:
        """Wake the worker for live audition: it renders what `scheduler` holds (the newest
        change) with render(generator, change, cancel); outcomes come back as
        worker.liveRendered. Live renders wait behind a batch under way, never beside it."""
        if self.host is None:
            raise RuntimeError("the GPU worker is not running")
        self.host.submit_live(LiveWork(scheduler, render))

    def keep(self, result: GenerationResult, *, parent_id: int | None = None,
             init_source: str | None = None) -> None:
        """A take rendered already (live audition's Keep) becomes an ordinary one: recorded in
        the library on the worker thread, then worker.takeReady as for a generated take."""
        if self.host is None:
            raise RuntimeError("the GPU worker is not running")
        job = Job(request=result.request, label=result.request.prompt, parent_id=parent_id,
                  init_source=init_source, from_live=True)
        self.host.keep(GeneratedTake(0, job, result, {}))

    def new_task(self, fn: Callable, label: str) -> Task:
        self.task_counter += 1
        return Task(self.task_counter, fn, label)

    def _batch_done(self, batch: int) -> None:
        if batch == self.batch_id:
            self.running = False
            self.batchFinished.emit()

    def stop(self) -> None:
        if self.host is not None:
            self.host.stop()
            self.host = None
