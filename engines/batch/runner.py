"""The batch loop: hand takes to the renderer (this process or the workers), write each one as
it comes back, record it in the manifest and save the manifest, every take.

Ctrl+C (SIGINT) asks to stop: no new take is started, the takes being rendered are finished and
written, and the manifest stays valid, so a rerun continues where this one stopped. A second
Ctrl+C stops at once (KeyboardInterrupt); the manifest saved after the last written take still
holds, because nothing is ever marked done before its file is in place.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol

from engines.batch.items import for_list
from engines.batch.manifest import Manifest
from engines.batch.output import TakeWriter
from engines.batch.plan import Plan, PlannedTake
from engines.batch.progress import Progress
from engines.batch.resume import file_facts
from engines.batch.workers import RenderedTake, TakeJob, unexpected
from engines.error_sentences import sentence, shown
from engines.errors import StudioError, join
from engines.finish.quality import describe_flag

log = logging.getLogger(__name__)


class RenderQueue(Protocol):
    """Where the batch loop hands takes to be rendered: in this process (InlineRenderer) or in
    worker processes (WorkerPool); rendered takes come back in the order they finish."""

    def has_room(self) -> bool: ...

    def submit(self, job: TakeJob) -> None: ...

    def next_result(self) -> RenderedTake: ...

    def close(self, wait: bool = True) -> None: ...


@dataclass
class BatchOutcome:
    cancelled: bool = False
    manifest_error: str | None = None
    audio_seconds: float = 0.0
    wall_s: float = 0.0


class StopRequest:
    """Ctrl+C while the batch runs: the first asks to stop after the current takes, the second
    stops now. SIGTERM (a service manager, `kill`) stops now, like a second Ctrl+C: the
    workers are terminated and the manifest saved on the way out, where the default action
    would leave the workers behind. A context manager that puts the previous handlers back."""

    def __init__(self, progress: Progress) -> None:
        self.requested = False
        self._progress = progress
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        self._progress.say("cancelled", "stopping after the current take; press Ctrl+C again "
                                        "to stop at once.")

    def _terminate(self, signum: int, frame: Any) -> None:
        self.requested = True
        raise KeyboardInterrupt

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():
            self._previous[signal.SIGINT] = signal.signal(signal.SIGINT, self._handle)
            self._previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, self._terminate)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._previous.items():
            if previous is not None:  # None: a handler set outside Python, left as it is
                signal.signal(signum, previous)


def run_batch(plan: Plan, manifest: Manifest, renderer: RenderQueue, writer: TakeWriter,
              progress: Progress, stop: StopRequest,
              unavailable: dict[int, str] | None = None) -> BatchOutcome:
    """Render every take of `plan` that is not skipped. `unavailable`: takes that cannot run
    here (index -> reason), failed without rendering."""
    run = _BatchRun(manifest, writer, progress)
    started = time.perf_counter()
    todo: deque[PlannedTake] = deque()
    for take in plan.to_render:
        if unavailable and take.index in unavailable:
            run.record(take, {"status": "failed",
                              "reason": f"{take.where}: {unavailable[take.index]}"}, 0.0)
        else:
            todo.append(take)
    run.save()  # the plan, with its seeds, before the first take: a rerun reuses them
    in_flight: dict[int, PlannedTake] = {}
    finished_normally = False
    try:
        while True:
            while todo and not stop.requested and renderer.has_room():
                take = todo.popleft()
                in_flight[take.index] = take
                renderer.submit(TakeJob(take.index, take.spec.request(take.seed),
                                        take.finishing))
            if not in_flight:
                break
            rendered = renderer.next_result()
            run.finish(in_flight.pop(rendered.index), rendered)
        finished_normally = True
    finally:
        renderer.close(wait=finished_normally)
        if finished_normally and todo and not stop.requested:  # every worker died for good
            for take in todo:
                run.record(take, {"status": "failed", "reason": f"{take.where}: no worker "
                                  "process was left to render it; render it again."}, 0.0)
        run.save()
    return BatchOutcome(stop.requested and bool(todo), run.manifest_error, run.audio_seconds,
                   time.perf_counter() - started)


class _BatchRun:
    def __init__(self, manifest: Manifest, writer: TakeWriter, progress: Progress) -> None:
        self.manifest = manifest
        self.writer = writer
        self.progress = progress
        self.manifest_error: str | None = None
        self.audio_seconds = 0.0

    def finish(self, take: PlannedTake, rendered: RenderedTake) -> None:
        started = time.perf_counter()
        if rendered.failure is not None:
            changes = {"status": "failed", "reason": f"{take.where}: {rendered.failure}"}
        else:
            # Said for a sound list (the row's cfg, not --cfg) in the sidecar and the manifest.
            rendered.result.warnings = [for_list(w) for w in rendered.result.warnings]
            changes = self._write(take, rendered)
            if changes["status"] == "ok":
                changes.update(self._facts(take))
            changes["warnings"] = self._warnings(take, rendered)
            if changes["status"] == "ok":
                self.audio_seconds += changes["seconds"]
        wall_s = (rendered.engine_ms + rendered.finish_ms) / 1e3 + time.perf_counter() - started
        self.record(take, changes, wall_s)
        self.save()

    def _write(self, take: PlannedTake, rendered: RenderedTake) -> dict[str, Any]:
        try:
            return self.writer.write(take, rendered)
        except StudioError as exc:
            reason = str(exc)
        except OSError as exc:
            reason = sentence(f"Could not write {shown(take.file)}", exc)
        except Exception as exc:  # a bug in one take must not kill the batch: log it, go on
            log.exception("writing %s failed unexpectedly", take.file)
            reason = unexpected(exc)
        return {"status": "failed", "reason": f"{take.where}: {reason}"}

    def _facts(self, take: PlannedTake) -> dict[str, int]:
        """The written file's frames and bytes, which a rerun checks before it skips the take
        (engines.batch.resume); none when it cannot be read back, so the rerun renders it."""
        try:
            return file_facts(self.manifest.path.parent / take.file)  # beside the manifest
        except Exception:  # noqa: BLE001 - the take is written; only resuming it is in doubt
            log.warning("could not read back %s", take.file, exc_info=True)
            return {}

    def _warnings(self, take: PlannedTake, rendered: RenderedTake) -> list[str]:
        result, finished = rendered.result, rendered.finished
        warnings = [*result.warnings, *(f"quality: {describe_flag(flag)}"
                                        for flag in result.quality),
                    *(finished.warnings if finished is not None else [])]
        for warning in warnings:  # remedies kept, so each front end words them its own way
            self.progress.say("warning", join(f"{take.file}: ", warning))
        return [for_list(warning) for warning in warnings]

    def record(self, take: PlannedTake, changes: dict[str, Any], wall_s: float) -> None:
        timings = dict(changes.pop("timings_ms", {}) or {})
        if changes.get("status") == "ok":
            timings["wall"] = round(wall_s * 1e3, 1)
        self.manifest.update(take.index, **changes, timings_ms=timings)
        status = changes["status"]
        self.progress.take_done(take.file, status, wall_s)
        if status == "failed":
            self.progress.say("error", changes["reason"])

    def save(self) -> None:
        try:
            self.manifest.save()
        except OSError as exc:
            message = sentence(f"Could not write the manifest {shown(self.manifest.path)}", exc,
                               "the files are written, but a rerun cannot tell which; make "
                               "room there and run the batch again")
            if message != self.manifest_error:
                self.progress.say("error", message)
            self.manifest_error = message
        else:
            self.manifest_error = None
