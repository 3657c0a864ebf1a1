"""Making a seamless loop of a take, for app.finish.controller.

By the model when it can: the GPU worker regenerates the seam with the take's own prompt and
settings (its GenerationResult request, or the library's record of it) and a new seed. By an
equal-power crossfade on the thread pool otherwise: while the worker is busy (said in the
status line, so the user knows why and can make it again later), or when the user chose it -
the only way for an imported take, which has no prompt for the model to write with.
"""

from __future__ import annotations

import logging
from functools import partial

from PySide6.QtCore import QObject, Signal

from app.common.background_jobs import BackgroundJobs, JobOutcome
from app.common.expected_errors import LIBRARY_ERRORS
from app.common.gpu_jobs import loop_job
from app.common.gpu_service import GpuService
from app.common.notifier import Notifier, user_sentence
from app.common.session import TakeModel
from app.common.session_take import Take
from app.finish.render import raw_audio
from engines.finish.loop import make_loop

log = logging.getLogger(__name__)

IMPORTED = ("This take has no prompt for the model to rewrite its seam with (it was "
            "imported); choose Crossfade as the loop method to loop it.")
BUSY = ("The GPU is busy generating, so this loop was made by crossfade; press New seam when "
        "it is free for a loop the model writes.")
NO_WORKER = "The GPU worker is not running, so this loop was made by crossfade."


def _crossfade(audio, seam_s: float):
    return make_loop(audio, None, None, seam_s=seam_s)


class LoopMaker(QObject):
    made = Signal(object, object)  # take, engines.finish.loop.LoopResult
    failed = Signal(object)  # take (its one sentence is already shown)

    def __init__(self, notifier: Notifier, session: TakeModel, gpu: GpuService, library,
                 jobs: BackgroundJobs, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.notifier = notifier
        self.session = session
        self.gpu = gpu
        self.library = library
        self.jobs = jobs
        self.making: dict[int, str] = {}  # take id -> "model" | "crossfade", while it runs
        self._model_jobs: dict[object, tuple[int, float]] = {}  # GPU job -> (take id, seam)
        gpu.outcome.connect(self._model_outcome)
        jobs.done.connect(self._crossfade_done)

    def request_for(self, take: Take):
        """The request whose prompt and settings rewrite the seam; None for imported audio."""
        if take.result is not None:
            return take.result.request
        if take.model == "imported" or take.library_id is None:
            return None
        try:
            return self.library.regeneration_request(take.library_id)
        except LIBRARY_ERRORS:  # no request: the caller offers the crossfade
            log.info("no regeneration request for library take %s", take.library_id,
                     exc_info=True)
            return None

    def make(self, take: Take, seam_s: float, method: str) -> str | None:
        """Start a loop of `take`; returns how ("model" or "crossfade"), or None when refused
        (said in one sentence). The answer comes as `made` or `failed`."""
        if take.take_id in self.making:
            return self.making[take.take_id]
        recipe = take.loop_recipe or {}
        seed = recipe.get("seed") if recipe.get("method") == method else None
        request = None
        if method == "model":
            request = self.request_for(take)
            if request is None:
                self.notifier.error(IMPORTED)
                return None
            if self.gpu.busy or self.gpu.host is None:
                self.notifier.status(BUSY if self.gpu.host is not None else NO_WORKER)
                method = "crossfade"
        audio = raw_audio(take.pcm)
        self.making[take.take_id] = method
        if method == "model":
            key = self.gpu.submit(loop_job(audio, request, seam_s, seed))
            self._model_jobs[key] = (take.take_id, seam_s)
            self.notifier.status("Making a seamless loop: the model rewrites the seam...")
        else:
            self.jobs.submit(("crossfade", take.take_id, seam_s),
                             partial(_crossfade, audio, seam_s))
        return method

    def is_making(self, take: Take | None) -> bool:
        return take is not None and take.take_id in self.making

    # ------------------------------------------------------------------ answers
    def _answer(self, take_id: int, seam_s: float, loop, error_text: str | None) -> None:
        self.making.pop(take_id, None)
        take = self.session.takes.get(take_id)
        if take is None:
            return  # removed from the session meanwhile
        if loop is None:
            self.notifier.error(error_text or "Could not make the loop.")
            self.failed.emit(take)
            return
        loop.report["requested_seam_s"] = seam_s  # a changed seam width makes it again
        take.loop_recipe = None  # made: a stored seed has been used
        self.made.emit(take, loop)

    def _model_outcome(self, outcome) -> None:
        if outcome.key in self._model_jobs:
            take_id, seam = self._model_jobs.pop(outcome.key)
            error = None if outcome.error is None else str(outcome.error)
            self._answer(take_id, seam, outcome.value if error is None else None, error)

    def _crossfade_done(self, outcome: JobOutcome) -> None:
        if not (isinstance(outcome.key, tuple) and outcome.key[0] == "crossfade"):
            return
        _, take_id, seam = outcome.key
        if outcome.error is not None:
            self._answer(take_id, seam, None,
                         user_sentence("Could not make the crossfade loop", outcome.error))
        else:
            self._answer(take_id, seam, outcome.value, None)
