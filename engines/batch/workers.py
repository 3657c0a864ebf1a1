"""Rendering one take (the engine, then finishing) in this process or in worker processes.

Each worker process owns one Generator for its whole life, so engines load once per worker.
Workers are started with the spawn context (a fork would copy the parent's CUDA state and
threads), ignore SIGINT (the parent decides when to stop: after the current takes), and with
TensorRT each gets its own GPU through CUDA_VISIBLE_DEVICES, set before anything loads CUDA.
The parent hands a worker one take at a time, so a worker that dies costs only that take.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engines.audio_io import float_from_pcm16
from engines.error_sentences import reason, sentence
from engines.errors import Advice, Remedy, StudioError
from engines.finish.chain import finish
from engines.finish.finished_take import FinishedTake, finish_take
from engines.finish.loop import make_loop
from engines.models.gpu_runtime_site import activate_gpu_runtime
from engines.models.inventory import default_catalog
from engines.paths import log_file, setup_logging
from engines.request import MAX_SEED, GenerationRequest

if TYPE_CHECKING:
    import numpy as np

    from engines.catalog import Catalog
    from engines.finish.settings import FinishSettings
    from engines.generation_result import GenerationResult

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
EXIT_ORPHANED = 75  # a worker whose batch went away
_QUIET_TRACKER = "ignore::UserWarning:multiprocessing.resource_tracker"
LOOP_SEED_OFFSET = 0x9E3779B9  # odd and far from 0: a loop seam never reuses the take's seed
MAX_RESTARTS_PER_WORKER = 3
POLL_S = 0.2


@dataclass(frozen=True)
class TakeJob:
    index: int
    request: GenerationRequest
    finishing: FinishSettings | None


@dataclass
class RenderedTake:
    index: int
    result: GenerationResult | None = None  # its step latents dropped: nothing reads them
    finished: FinishedTake | None = None
    failure: str | None = None
    engine_ms: float = 0.0
    finish_ms: float = 0.0


class TakeRenderer:
    """A Generator over the models folder, and the finishing of what it makes."""

    def __init__(self, models_dir: Path | None, catalog: Catalog | None = None) -> None:
        # Here, not at the top: Generator loads all 35 backend modules, which --help need not.
        from engines.generator import Generator

        self.generator = Generator(catalog if catalog is not None
                                   else default_catalog(models_dir))

    def render(self, job: TakeJob) -> RenderedTake:
        """The take, or its failure as one sentence: one bad take never stops the batch."""
        started = time.perf_counter()
        try:
            result = self.generator.generate(job.request)
            result = dataclasses.replace(result, step_latents=result.step_latents[:0])
            engine_ms = (time.perf_counter() - started) * 1e3
            finished = None if job.finishing is None else self._finish(result, job.finishing)
        except StudioError as exc:
            return RenderedTake(job.index, failure=str(exc))
        except OSError as exc:
            return RenderedTake(job.index, failure=sentence("Could not render the take", exc))
        except Exception as exc:  # a bug in one take must not kill the batch: log it, go on
            log.exception("take %d failed unexpectedly", job.index)
            return RenderedTake(job.index, failure=unexpected(exc))
        finish_ms = (time.perf_counter() - started) * 1e3 - engine_ms
        return RenderedTake(job.index, result, finished, None, engine_ms, finish_ms)

    def _finish(self, result: GenerationResult, settings: FinishSettings) -> FinishedTake:
        """finish_take, except that a model loop's seam gets a seed derived from the take's, so
        a rerun (or another worker) makes the same loop."""

        def generate(request: GenerationRequest) -> np.ndarray:
            return float_from_pcm16(self.generator.generate(request).pcm)

        audio = float_from_pcm16(result.pcm)
        if not settings.loop:
            return finish_take(audio, settings, request=result.request, generate=generate)
        settings.validate()
        seed = (result.seed + LOOP_SEED_OFFSET) % (MAX_SEED + 1)
        if settings.loop_method == "crossfade":  # no model, no seed: the same loop every run
            loop = make_loop(audio, None, None, seam_s=settings.loop_seam_s)
        else:
            loop = make_loop(audio, result.request, generate, seam_s=settings.loop_seam_s,
                             seed=seed)
        return FinishedTake(finish(loop.audio, settings), settings, loop)

    def close(self) -> None:
        self.generator.close()


def unexpected(exc: BaseException) -> str:
    happened, _ = reason(exc)
    where = log_file()
    details = f"details are in {where}" if where is not None else "render it again to retry"
    return f"The take failed unexpectedly ({happened}); {details}."


# ---- worker processes ----------------------------------------------------------------------


def worker_main(models_dir: Path | None, cuda_devices: str | None, tasks: Any,
                results: Any) -> None:
    """A worker process: render the takes it is handed until it gets None."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # already ignored (_sigint_ignored); be sure
    if cuda_devices is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = cuda_devices  # before anything loads CUDA

    setup_logging("sa3-studio.batch-worker", console_level=logging.CRITICAL)
    activate_gpu_runtime()  # spawn passes sys.path on, not the NVRTC the parent preloaded
    renderer = TakeRenderer(models_dir)
    try:
        while (job := tasks.get()) is not None:
            results.put(renderer.render(job))
    finally:
        renderer.close()


def die_with_parent() -> None:
    """End this worker when the batch that started it is gone (SIGKILL, SIGTERM, a crash):
    it would otherwise wait on its task queue for ever, holding its engines' memory, since it
    holds the queue's write end itself and never sees the pipe close.

    On Linux the kernel sends SIGKILL when the parent dies (prctl PR_SET_PDEATHSIG; the pool
    is made and restarted by the parent's main thread, whose exit is the process's). Everywhere,
    a watchdog thread waits on multiprocessing's sentinel for the parent and exits when it
    fires; it also covers a parent that died before the prctl call took effect."""
    import multiprocessing

    parent = multiprocessing.parent_process()
    if parent is None:  # run in the parent's own process (tests): nothing to watch
        return
    _parent_death_signal()
    threading.Thread(target=_exit_with, args=(parent,), daemon=True,
                     name="sa3-parent-watchdog").start()


def _parent_death_signal() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            log.warning("prctl(PR_SET_PDEATHSIG) failed (errno %d)", ctypes.get_errno())
    except (OSError, AttributeError):  # no libc prctl here: the watchdog alone
        log.warning("prctl is not available; the watchdog ends orphaned workers", exc_info=True)


def _exit_with(parent: Any) -> None:
    parent.join()  # returns when the parent's sentinel pipe closes: the parent is gone
    os._exit(EXIT_ORPHANED)  # no cleanup to wait for: the takes in hand have no one to go to


def _start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker (it frees the queues' semaphores when this
    process is killed) with its "leaked semaphore objects" warning silenced: after a SIGKILL
    that is the tracker doing its job, nothing a user can act on, yet it would be printed on
    their terminal. Its environment is the only way in; ours is put back at once."""
    if sys.platform == "win32":  # no resource tracker there
        return
    from multiprocessing import resource_tracker

    saved = os.environ.get("PYTHONWARNINGS")
    os.environ["PYTHONWARNINGS"] = ",".join(filter(None, (saved, _QUIET_TRACKER)))
    try:
        resource_tracker.ensure_running()
    finally:
        if saved is None:
            os.environ.pop("PYTHONWARNINGS", None)
        else:
            os.environ["PYTHONWARNINGS"] = saved


@dataclass
class _Worker:
    process: Any
    tasks: Any
    cuda_devices: str | None
    job: TakeJob | None = None
    restarts: int = 0


class WorkerPool:
    """`jobs` worker processes, one take each at a time."""

    def __init__(self, jobs: int, models_dir: Path | None,
                 cuda_devices: list[str | None]) -> None:
        import multiprocessing

        self._ctx = multiprocessing.get_context("spawn")
        _start_resource_tracker()
        self._models_dir = models_dir
        self._results = self._ctx.Queue()
        self._workers: list[_Worker] = []
        for slot in range(jobs):
            self._workers.append(self._start(cuda_devices[slot % len(cuda_devices)]))

    def _start(self, cuda_devices: str | None, restarts: int = 0) -> _Worker:
        tasks = self._ctx.Queue()
        process = self._ctx.Process(target=worker_main, daemon=True, name="sa3-batch-worker",
                                    args=(self._models_dir, cuda_devices, tasks, self._results))
        with _sigint_ignored():  # inherited through exec: Ctrl+C never hits a starting worker
            process.start()
        return _Worker(process, tasks, cuda_devices, restarts=restarts)

    def has_room(self) -> bool:
        return any(w.job is None and w.process.is_alive() for w in self._workers)

    def submit(self, job: TakeJob) -> None:
        worker = next(w for w in self._workers if w.job is None and w.process.is_alive())
        worker.job = job
        worker.tasks.put(job)

    def next_result(self) -> RenderedTake:
        """The next take a worker finished (or lost, when the worker died while on it)."""
        while True:
            try:
                rendered: RenderedTake = self._results.get(timeout=POLL_S)
            except queue.Empty:
                lost = self._lost_take()
                if lost is not None:
                    return lost
                continue
            for worker in self._workers:
                if worker.job is not None and worker.job.index == rendered.index:
                    worker.job = None
                    return rendered
            # A result for a take already reported lost: its worker died after sending it.

    def _lost_take(self) -> RenderedTake | None:
        for slot, worker in enumerate(self._workers):
            if worker.job is None or worker.process.is_alive():
                continue
            job, code = worker.job, worker.process.exitcode
            if worker.restarts < MAX_RESTARTS_PER_WORKER:
                self._workers[slot] = self._start(worker.cuda_devices, worker.restarts + 1)
            else:
                worker.job = None
            return RenderedTake(job.index, failure=Advice(
                f"The worker process rendering this take stopped unexpectedly (exit code "
                f"{code}; out of memory is the usual cause); render it again, or use fewer "
                "{0}.", Remedy.setting("jobs")))
        return None

    def close(self, wait: bool = True) -> None:
        """Ask the workers to finish (or, with wait=False, stop them now)."""
        for worker in self._workers:
            if wait and worker.process.is_alive():
                worker.tasks.put(None)
        for worker in self._workers:
            if wait:
                worker.process.join(timeout=30)
            if worker.process.is_alive():
                worker.process.terminate()
                worker.process.join(timeout=5)
        self._results.close()


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while a worker is started. An ignored signal stays ignored across exec
    and Python then installs no KeyboardInterrupt handler, so a Ctrl+C at the terminal (sent to
    the whole process group) reaches only the parent, which stops after the current takes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class InlineRenderer:
    """The same interface as WorkerPool, rendering in this process (--jobs 1). The window
    hands in `renderer` (over its GPU worker's Generator) and `on_start`, told of each take
    as it starts."""

    def __init__(self, models_dir: Path | None, catalog: Catalog | None = None, *,
                 renderer: TakeRenderer | None = None,
                 on_start: Callable[[TakeJob], None] | None = None) -> None:
        self._renderer = renderer if renderer is not None else TakeRenderer(models_dir, catalog)
        self._on_start = on_start
        self._job: TakeJob | None = None

    def has_room(self) -> bool:
        return self._job is None

    def submit(self, job: TakeJob) -> None:
        self._job = job

    def next_result(self) -> RenderedTake:
        job, self._job = self._job, None
        assert job is not None
        if self._on_start is not None:
            self._on_start(job)
        return self._renderer.render(job)

    def close(self, wait: bool = True) -> None:
        self._renderer.close()
