"""The generation panel's behaviour: prompt and settings to requests, Generate/Reroll/Cancel,
and the worker's answers (progress, new takes, failures)."""

from __future__ import annotations

import logging
import secrets
from dataclasses import replace

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut

from app.common.gpu_jobs import BATCH, KEEP, GeneratedTake, Job, Reroll, StepProgress, batch_job
from app.common.gpu_service import GpuService
from app.common.notifier import Notifier
from app.common.remedy_words import RUNS_ON
from app.common.session import TakeModel
from app.common.session_take import Take
from app.common.texts import NEGATIVE_OFF_HELP
from app.common.worker import Submitted
from app.generate.panel import GenerationPanel
from app.generate.requests import SEED_RANGE, panel_request, read_seed
from engines.durations import duration_text
from engines.errors import CancelledError, StudioError
from engines.finish.quality import describe_flag
from engines.request import GenerationRequest, ValidatedRequest, checked_request, default_seconds

log = logging.getLogger(__name__)

REROLL_LIMIT = 3  # new seeds tried for a flagged take before the last one is kept


def cancel_words(backend: str | None) -> str:
    """The status line when Cancel is pressed, true for the backend running the take (see the
    progress and cancel contract in engines.backends.base); None when it is not known yet."""
    if backend == "onnxruntime":
        return "Cancelling after the current step..."
    if backend == "tensorrt":
        return ("Cancelling after the take under way (the graphics card makes a take in one "
                "piece and cannot stop it part way)...")
    return ("Cancelling after the current step (on the graphics card, after the take under "
            "way)...")


class GenerationController(QObject):
    libraryChanged = Signal()  # the worker recorded a take in the library
    takeGenerated = Signal(object)  # a new take is in the session and selected

    def __init__(self, panel: GenerationPanel, notifier: Notifier, session: TakeModel,
                 gpu: GpuService, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.panel = panel
        self.notifier = notifier
        self.session = session
        self.gpu = gpu
        # Which backend ran each model set's takes (the window asks for "auto"), so Cancel
        # can say when it takes effect; the model set of the batch under way, if it is ours.
        self._backend_of_model: dict[str, str] = {}
        self._submitted_model: str | None = None
        self._running_model: str | None = None
        w = panel
        w.generate_button.clicked.connect(self.generate)
        w.reroll_button.clicked.connect(self.reroll)
        w.cancel_button.clicked.connect(self.cancel)
        w.dice_button.clicked.connect(self.roll_dice)
        w.cfg_spin.valueChanged.connect(self._update_negative_state)
        # The Length follows the model set (engines.request.default_seconds, the CLI's rule
        # too) until the user sets one: from then on this session keeps theirs.
        self._length_chosen = False
        self._setting_length = False
        w.seconds_spin.valueChanged.connect(self._length_edited)
        w.model_combo.currentIndexChanged.connect(self.apply_default_length)
        for button in w.preset_buttons:
            button.clicked.connect(lambda _=False, b=button: w.seconds_spin.setValue(
                float(b.property("seconds"))))
        gpu.progress.connect(self._progress)
        gpu.outcome.connect(self._outcome)
        for keys in ("Ctrl+Return", "Ctrl+Enter"):
            shortcut = QShortcut(QKeySequence(keys), w)
            shortcut.setContext(Qt.ShortcutContext.WindowShortcut)
            shortcut.activated.connect(self.generate)
        self._update_negative_state()
        self.apply_default_length()

    def apply_default_length(self, *_args) -> None:
        """The model's default length in the Length box, unless the user chose one."""
        key = self.panel.model_combo.currentData()
        if self._length_chosen or not key:
            return
        try:
            seconds = default_seconds(key)
        except StudioError:  # a name the catalog does not know: leave the box alone
            return
        self._setting_length = True
        try:
            self.panel.seconds_spin.setValue(min(seconds, self.panel.seconds_spin.maximum()))
        finally:
            self._setting_length = False

    def _length_edited(self, _value: float) -> None:
        if not self._setting_length:
            self._length_chosen = True

    def _update_negative_state(self, *_args) -> None:
        active = self.panel.cfg_spin.value() != 1.0
        self.panel.negative_edit.setEnabled(active)
        self.panel.negative_hint.setVisible(not active)
        self.panel.negative_edit.setToolTip("" if active else NEGATIVE_OFF_HELP)

    # ------------------------------------------------------------------ requests
    def read_seed(self) -> int | None:
        return read_seed(self.panel)

    def build_request(self, seed: int, init_audio=None) -> GenerationRequest:
        """The panel as a request; `init_audio` (float) may be passed in so variations share
        one conversion of the init take."""
        return panel_request(self.panel, self.session, seed, init_audio)

    def start_seed(self) -> int:
        seed = self.read_seed()
        if seed is not None and self.panel.seed_lock.isChecked():
            return seed
        return secrets.randbelow(SEED_RANGE)

    def generate(self) -> None:
        if (why := self.gpu.refusal()) is not None:
            self.notifier.status(why)
            return
        try:
            first = self.start_seed()
            count = self.panel.variations_spin.value()
            init_take = self.session.init_take
            init = init_take.float_audio() if init_take is not None else None
            # Checked once here, the window's edge; the GPU job and the generator run the
            # checked request as it is. Variations differ only in their seed, so they share
            # the one check (and its one copy of the init audio).
            checked = checked_request(self.build_request(first, init))
            requests = [replace(checked, seed=(first + i) % SEED_RANGE) for i in range(count)]
        except StudioError as exc:
            self.notifier.error(str(exc))
            return
        reroll = REROLL_LIMIT if self.panel.reroll_flagged_check.isChecked() else 0
        self.submit(requests, reroll_flagged=reroll)

    def reroll(self) -> None:
        """Same settings, one take, a new random seed."""
        if (why := self.gpu.refusal()) is not None:
            self.notifier.status(why)
            return
        try:
            request = checked_request(self.build_request(secrets.randbelow(SEED_RANGE)))
        except StudioError as exc:
            self.notifier.error(str(exc))
            return
        self.submit([request])

    def submit(self, requests: list[ValidatedRequest], reroll_flagged: int = 0) -> None:
        parent_id, source = self.session.init_lineage()
        self.queue_takes([Job(request=r, index=i, total=len(requests), label=r.prompt,
                              parent_id=parent_id, init_source=source,
                              reroll_flagged=reroll_flagged)
                          for i, r in enumerate(requests)], requests[0].model)

    def queue_takes(self, jobs: list[Job], model: str | None = None) -> None:
        """Queue a batch of takes (the library's regenerate comes here too)."""
        self._submitted_model = model
        try:
            self.gpu.submit(batch_job(jobs))
        except StudioError as exc:  # refused: another batch, loop or list is under way
            self.notifier.status(str(exc))

    def cancel(self) -> None:
        if self.gpu.cancel(BATCH):
            backend = self._backend_of_model.get(self._running_model or "")
            self.notifier.status(cancel_words(backend))

    def roll_dice(self) -> None:
        self.panel.seed_edit.setText(str(secrets.randbelow(SEED_RANGE)))

    def _set_busy(self, busy: bool) -> None:
        self.panel.generate_button.setEnabled(not busy)
        self.panel.reroll_button.setEnabled(not busy)
        self.panel.cancel_button.setEnabled(busy)

    # ------------------------------------------------------------------ worker signals
    def _progress(self, progress) -> None:
        if progress.key.kind not in (BATCH, KEEP):
            return
        value = progress.value
        if isinstance(value, Submitted) and progress.key.kind == BATCH:
            # Batches submitted elsewhere (the library's regenerate) leave the model unknown.
            self._running_model, self._submitted_model = self._submitted_model, None
            self._set_busy(True)
            self.notifier.status(f"Generating {value.payload} take(s)...")
        elif isinstance(value, GeneratedTake):
            self._take_ready(value)
        elif isinstance(value, Reroll):
            self._rerolled(value)
        elif isinstance(value, StepProgress):
            what = {"text": "reading the prompt", "encode": "encoding the init audio",
                    "sample": f"step {value.done}/{value.steps}",
                    "decode": "decoding"}.get(value.stage, value.stage)
            self.notifier.status(f"Take {value.index + 1}/{value.total}: {what}")

    def _take_ready(self, finished: GeneratedTake) -> None:
        result = finished.result
        req = result.request
        self._backend_of_model[req.model] = result.backend
        init_take = self.session.init_take
        init_path = init_take.init_path if init_take is not None else None
        take = Take(prompt=req.prompt, pcm=result.pcm, seed=result.seed, model=req.model,
                    result=result, init_path=init_path, display=finished.display)
        take.library_id = finished.library_id
        take.quality = list(getattr(result, "quality", []) or [])
        take.variation = finished.job.index + 1
        self.libraryChanged.emit()
        self.session.add_take(take, select=True)
        self.panel.seed_edit.setText(str(result.seed))
        self.panel.seed_used_label.setText(f"Seed used: {result.seed}")
        for warning in result.warnings:
            log.info("warning: %s", warning)
        ms = result.timings_ms.get("total", 0.0)
        note = f" ({result.warnings[0]})" if result.warnings else ""
        if finished.rejected:
            seeds = ", ".join(str(seed) for seed, _flags in finished.rejected)
            still = (f"; still flagged after {len(finished.rejected)} retries: "
                     f"{describe_flag(take.quality[0])}") if take.quality else ""
            note += f" (rerolled flagged seed(s) {seeds}{still})"
        self.notifier.status(f"Take {finished.job.index + 1}/{finished.job.total} ready: seed "
                             f"{result.seed}, {duration_text(take.seconds)} in {ms:.0f} ms on "
                             f"{RUNS_ON.get(result.backend, result.backend)}{note}")
        if finished.library_error:  # after the ready line, which would hide it
            self.notifier.error(f"The take is in the session but not in the library: "
                                f"{finished.library_error}")
        if not finished.job.from_live:  # a kept live take is playing already: no restart
            self.takeGenerated.emit(take)

    def _rerolled(self, reroll: Reroll) -> None:
        flags = ", ".join(reroll.flags)
        self.notifier.status(f"Take {reroll.index + 1}/{reroll.total}: seed {reroll.seed} was "
                             f"flagged ({flags}); trying seed {reroll.new_seed} (retry "
                             f"{reroll.attempt} of {reroll.limit}).")

    def _outcome(self, outcome) -> None:
        if outcome.key.kind != BATCH:
            return
        self._set_busy(False)
        if isinstance(outcome.error, CancelledError):
            self.notifier.status(str(outcome.error))
        elif outcome.error is not None:
            self.notifier.error(str(outcome.error))
