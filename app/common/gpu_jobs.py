"""The GPU jobs the window runs, each one GpuJob (app.common.worker) made here: a batch of takes,
a model loop, a sound list, live audition's renders, a kept live take, and other tasks (engine
builds, the self-test, tier comparisons, exports). Their functions run on the GPU worker thread
with its Generator; what they report while running goes back as JobProgress values."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from app.common.notifier import user_sentence
from app.common.worker import GpuJob, JobContext
from engines.audio_io import float_from_pcm16
from engines.errors import CancelledError, StudioError
from engines.finish.loop import make_loop
from engines.live.worker import serve_pending
from engines.request import MAX_SEED, GenerationRequest, ValidatedRequest

if TYPE_CHECKING:
    from engines.generation_result import GenerationResult

log = logging.getLogger(__name__)

BATCH, LOOP, LIST, LIVE, KEEP, TASK = "batch", "loop", "list", "live", "keep", "task"


@dataclass
class Job:
    """One take to generate; `index`/`total` place it in its batch (variations)."""

    # Checked by the window (engines.request.checked_request): the generator runs it as it is.
    # A raw one (the library's regenerate) is checked once, by the generator.
    request: ValidatedRequest | GenerationRequest
    index: int = 0
    total: int = 1
    label: str = ""
    replace_id: int | None = None  # library row whose missing audio this take restores
    parent_id: int | None = None  # library row of the init audio (lineage)
    init_source: str | None = None  # the init audio's original file, if imported
    reroll_flagged: int = 0  # a take with quality flags is made again with a new seed, so often
    from_live: bool = False  # kept from live audition, where it is already playing


@dataclass
class StepProgress:
    """A batch's take is at `stage` (text, encode, sample step done/steps, decode)."""

    index: int
    total: int
    stage: str
    done: int
    steps: int


@dataclass
class GeneratedTake:
    """What the GUI receives for one generated take (a batch's or a kept live one's progress)."""

    job: Job
    result: GenerationResult
    display: dict  # precomputed view data (see app.common.displaydata)
    library_id: int | None = None  # its row in the sound library
    library_error: str | None = None
    rejected: list[tuple[int, list[str]]] = field(default_factory=list)  # (seed, flags) rerolled


@dataclass
class Reroll:
    """A flagged take of a batch is being made again with a new seed (said in the status)."""

    index: int
    total: int
    seed: int  # the flagged take's seed
    flags: list[str]
    new_seed: int
    attempt: int
    limit: int


def batch_job(jobs: list[Job]) -> GpuJob:
    """Generate the takes one by one; each arrives as a GeneratedTake progress value."""

    def run(context: JobContext) -> None:
        generator = context.generator()
        for job in jobs:
            if context.cancel.is_set():
                raise CancelledError()

            def report(stage: str, done: int, steps: int, job=job) -> None:
                context.report(StepProgress(job.index, job.total, stage, done, steps))

            result, rejected = _generate(generator, context, job, report)
            display = context.display(result) if context.display else {}
            finished = GeneratedTake(job, result, display, rejected=rejected)
            _record(context, job, finished)
            context.report(finished)

    return GpuJob(BATCH, run, failure="Generation failed", exclusive=True,
                  cancelled="Cancelled; takes already finished are kept.", payload=len(jobs))


def _generate(generator, context: JobContext, job: Job, report) -> tuple[object, list]:
    """One take of the batch; a flagged one (silence, clipping, ...) is replaced by a new seed
    up to job.reroll_flagged times, the last one kept whatever its flags."""
    result = generator.generate(job.request, report, context.cancel.is_set)
    rejected: list[tuple[int, list[str]]] = []
    for attempt in range(1, job.reroll_flagged + 1):
        if not result.quality or context.cancel.is_set():
            break
        seed = secrets.randbelow(MAX_SEED + 1)
        rejected.append((result.seed, list(result.quality)))
        context.report(Reroll(job.index, job.total, result.seed, list(result.quality), seed,
                              attempt, job.reroll_flagged))
        result = generator.generate(replace(job.request, seed=seed), report,
                                    context.cancel.is_set)
    return result, rejected


def _record(context: JobContext, job: Job, finished: GeneratedTake) -> None:
    """Keep the take in the library from the worker thread: writing the audio and hashing new
    engine files (seconds for a GB engine, once) never stall the window."""
    if context.library is None:
        return
    try:
        library = context.library()
        if job.replace_id is not None:
            record = library.replace_audio(job.replace_id, finished.result)
        else:
            # Its number in the Variations it was made with: {n} and UCS numbering.
            record = library.add(finished.result, parent_id=job.parent_id,
                                 init_source=job.init_source, variation=job.index + 1,
                                 variations=job.total)
        finished.library_id = record.id
    except StudioError as exc:
        log.info("library refused the take: %s", exc, exc_info=True)
        finished.library_error = str(exc)
    except Exception as exc:  # noqa: BLE001 - the take itself is fine: keep it in the session
        log.exception("recording the take failed")
        finished.library_error = user_sentence("Could not keep the take in the library", exc)


def keep_job(result: GenerationResult, parent_id: int | None,
             init_source: str | None) -> GpuJob:
    """A take rendered already (live audition's Keep) joins the session and the library as a
    generated one does: its display data, its library record, then a GeneratedTake."""
    job = Job(request=result.request, label=result.request.prompt, parent_id=parent_id,
              init_source=init_source, from_live=True)

    def run(context: JobContext) -> None:
        finished = GeneratedTake(job, result, {})
        try:
            if context.display is not None:
                finished.display = context.display(result)
        except Exception:  # noqa: BLE001 - the views compute what is missing themselves
            log.exception("preparing the kept take's views failed")
        _record(context, job, finished)
        context.report(finished)

    return GpuJob(KEEP, run, failure="Could not keep the take", clears_cancel=False)


def loop_job(audio, request, seam_s: float, seed: int | None = None) -> GpuJob:
    """A model loop (engines.finish.loop.make_loop): the seam regenerated with the take's
    prompt and settings; the outcome's value is the LoopResult."""

    def run(context: JobContext):
        generator = context.generator()

        def generate(seam_request):
            return float_from_pcm16(generator.generate(seam_request, None,
                                                       context.cancel.is_set).pcm)

        return make_loop(audio, request, generate, seam_s=seam_s, seed=seed)

    return GpuJob(LOOP, run, failure="Could not make the loop", exclusive=True,
                  cancelled="The loop was cancelled; the take is unchanged.")


def list_job(fn: Callable) -> GpuJob:
    """A sound list: fn(generator, cancel_event) -> its summary; the cancel flag stops it after
    the current take (the list's manifest stays valid)."""
    return GpuJob(LIST, lambda context: fn(context.generator(), context.cancel),
                  failure="Could not render the sound list", exclusive=True)


def live_job(scheduler, render: Callable) -> GpuJob:
    """Render what live audition has pending, newest first and one at a time; each
    engines.live outcome (a failure too) is a progress value."""

    def run(context: JobContext) -> None:
        serve_pending(scheduler,
                      lambda change, cancel: render(context.generator(), change, cancel),
                      context.report)

    return GpuJob(LIVE, run, failure="Live audition failed", clears_cancel=False)


def task_job(fn: Callable, label: str) -> GpuJob:
    """Other GPU work: fn(report_line, cancel_event) -> result; lines are progress values."""
    return GpuJob(TASK, lambda context: fn(lambda text: context.report(str(text)),
                                           context.cancel),
                  failure=f"{label} failed" if label else "The task failed")
