"""The "Download and set up" button of the Models dialog: get the set recommended for this
machine (engines.models.recommend), then build its engines where none are published for this
card, then run the self-test where a graphics card will run it. One step at a time, each said
on the page ("Step 2 of 3: ..."), stopping with one sentence at the first failure or Cancel.

It drives the dialog's own download and GPU-task machinery; it adds no way of its own to fetch
or build anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject

from app.common.remedy_words import MODELS, for_window
from app.models.gpu_tasks import BUILD, SELFTEST, ModelsGpuTasks
from engines.errors import join
from engines.models.recommend import Recommendation, recommend

if TYPE_CHECKING:
    from app.models.dialog import ModelManagerDialog

DOWNLOAD = "download"


class SetupRun(QObject):
    def __init__(self, dialog: ModelManagerDialog) -> None:
        super().__init__(dialog)
        self.dialog = dialog
        self.page = dialog.first_run
        self.rec: Recommendation | None = None
        self.steps: list[str] = []
        self.active = False
        self.can_start = True
        dialog.gpu_tasks.finished.connect(self._task_finished)
        dialog.gpu_tasks.failed.connect(self._task_failed)

    def show_recommendation(self, catalog) -> None:
        """What to get for this machine, and whether it already runs here."""
        rec = self.rec = recommend(catalog.gpu)
        ready = catalog.resolve(rec.model, precision=rec.precision,
                                backend=rec.backend).runnable
        blocker = None
        if rec.backend == "tensorrt":
            blocker = ModelsGpuTasks.refusal(catalog)
            if blocker:
                blocker += " The download can start now."
        elif not catalog.onnxruntime_available:
            blocker = ("ONNX Runtime is not installed; install it with `pip install "
                       "onnxruntime` and restart SA3 Studio.")
        self.can_start = not ready
        if not self.active:
            shown = for_window(blocker, MODELS) if blocker else None
            self.page.show_recommendation(rec, ready, shown)

    def start(self) -> None:
        rec, dialog = self.rec, self.dialog
        if rec is None or self.active:
            return
        models = dialog.models_dir()
        if models is None:
            return
        gpu = dialog.catalog.gpu
        self.steps = [DOWNLOAD] + ([BUILD] if rec.build_here else []) + (
            [SELFTEST] if rec.backend == "tensorrt" else [])
        self.active = True
        self._step(DOWNLOAD, "asking Hugging Face for the file list...")
        dialog.request_plan({"sets": [rec.model], "precisions": [rec.precision],
                             "fmt": rec.file_kind, "arch": gpu.sm if gpu else "",
                             "models_dir": models})

    def planned(self, plan) -> bool:
        """The file list is in: download it at once (True), if this run asked for it."""
        if not self.active:
            return False
        self._step(DOWNLOAD, f"downloading {plan.summary()}...")
        self.dialog.start_download()
        return True

    def downloaded(self) -> None:
        if self.active:
            self._next(DOWNLOAD)

    def stopped(self, message: str) -> None:
        if self.active:
            self.active = False
            self.page.say_step(for_window(join("Stopped: ", message), MODELS))
            self.dialog.busy(False)

    def _step(self, kind: str, text: str) -> None:
        number = self.steps.index(kind) + 1
        line = f"Step {number} of {len(self.steps)}: {text}"
        self.page.say_step(line)
        self.dialog.say(line)

    def _next(self, finished: str) -> None:
        index = self.steps.index(finished) + 1
        if index == len(self.steps):
            self._finish()
            return
        dialog, rec, kind = self.dialog, self.rec, self.steps[index]
        models = dialog.models_dir()
        if models is None:
            self.stopped("the models folder cannot be used.")
            return
        if kind == BUILD:
            self._step(BUILD, "building the engines on this graphics card (several minutes, "
                              "once)...")
            refusal = dialog.gpu_tasks.build(dialog.catalog, models, rec.model, rec.precision)
        else:
            self._step(SELFTEST, "checking this graphics card with the self-test...")
            refusal = dialog.gpu_tasks.selftest(dialog.catalog, models)
        if refusal:
            dialog.say(refusal)
            self.stopped(refusal)
        else:
            dialog.busy(True)

    def _task_finished(self, kind: str, text: str) -> None:
        self.dialog.gpu_task_ended(kind, text, ok=True)
        if self.active and kind in self.steps:
            self._next(kind)

    def _task_failed(self, kind: str, text: str) -> None:
        self.dialog.gpu_task_ended(kind, text, ok=False)
        self.stopped(text)

    def _finish(self) -> None:
        """The last step is done: say so only if the catalog agrees the set runs here."""
        rec = self.rec
        answer = self.dialog.catalog.resolve(rec.model, precision=rec.precision,
                                             backend=rec.backend)
        if not answer.runnable:
            reason = answer.reason or f"{rec.label} still cannot run here."
            self.dialog.say(reason)
            self.stopped(reason)
            return
        self.active = False
        self.show_recommendation(self.dialog.catalog)  # now "installed and ready"
        if self.dialog.controller.choose_model(rec.model):
            text = f"{rec.label} is ready, and chosen in Model in the main window."
        else:
            text = f"{rec.label} is ready: choose it in Model in the main window."
        self.page.say_step(text)
        self.dialog.say(text)
        self.dialog.busy(False)
