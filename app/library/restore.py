"""Restore settings and Regenerate from the library: a kept take's settings back into the
generation panel, and the take made again exactly (same seed, same init audio, same latents).

Both replace what the generation panel holds. What the user set up there and would lose - init
audio, the spans painted on it, a locked seed - is never replaced silently: a question names it
and offers to keep it (`ask_to_replace`, a seam tests answer through the real dialog).
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QMessageBox, QWidget

from app.adapters.state import panel_entries, restore_adapters, stored_strength
from app.common.expected_errors import LIBRARY_ERRORS
from app.common.gpu_jobs import Job, batch_job
from app.common.gpu_service import GpuService
from app.common.notifier import Notifier
from app.common.session import TakeModel
from app.common.session_take import Take
from app.common.tiers import choose
from app.generate.panel import GenerationPanel
from engines.errors import StudioError

log = logging.getLogger(__name__)

REPLACE = "Replace and {verb}"
KEEP = "Keep my setup"
DOING = {"restore": "Restoring the settings of", "regenerate": "Regenerating"}


def ask_to_replace(parent: QWidget, title: str, text: str, verb: str) -> bool:
    """A question with a clear choice: True to replace the generation panel's setup."""
    box = QMessageBox(QMessageBox.Icon.Question, title, text, parent=parent)
    box.setObjectName("replaceSetupQuestion")
    replace = box.addButton(REPLACE.format(verb=verb), QMessageBox.ButtonRole.AcceptRole)
    keep = box.addButton(KEEP, QMessageBox.ButtonRole.RejectRole)
    box.setDefaultButton(keep)
    box.setEscapeButton(keep)
    box.exec()
    return box.clickedButton() is replace


def and_list(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


class SettingsRestore(QObject):
    """Restore settings and Regenerate of the library page. `load_take(take_id)` brings a
    library take into the session (the init audio an audio-to-audio take was made from)."""

    def __init__(self, generation: GenerationPanel, notifier: Notifier, session: TakeModel,
                 gpu: GpuService, library, load_take, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.generation = generation
        self.notifier = notifier
        self.session = session
        self.gpu = gpu
        self.library = library
        self.load_take = load_take
        self.missing_adapters: list = []  # of the last restore (engines.adapter_restore)

    def setup_lost(self, record) -> list[str]:
        """What restoring `record` would take away from the generation panel, in words."""
        lost = []
        init: Take | None = self.session.init_take
        keeps_init = (record.parent_id is not None and record.mode != "t2a" and init is not None
                      and init.library_id == record.parent_id)
        if init is not None and not keeps_init:
            spans = len(self.session.spans)
            painted = f" and the {spans} span{'s' if spans != 1 else ''} painted on it" \
                if spans else ""
            lost.append(f"the init audio \u201c{init.title()}\u201d{painted}")
        elif init is not None and self.session.spans and \
                [tuple(s) for s in record.inpaint_spans] != list(self.session.spans):
            lost.append("the spans painted on the init audio")
        seed = self.generation.seed_edit.text().strip()
        if self.generation.seed_lock.isChecked() and seed and seed != str(record.seed):
            lost.append(f"the locked seed {seed}")
        # strengths as the panel shows them (two decimals): a restored take's own adapters
        # are not a setup to lose
        ours = [(e.sha256, round(e.strength, 2), e.enabled) for e in
                panel_entries(self.generation.adapters_panel)]
        if ours and ours != [(a.get("sha256"), round(stored_strength(a), 2),
                              a.get("enabled", True))
                             for a in getattr(record, "adapters", [])]:
            lost.append(f"the {len(ours)} adapter{'s' if len(ours) != 1 else ''} in the "
                        "Adapters panel")
        return lost

    def confirmed(self, record, verb: str) -> bool:
        """True when nothing the user set up would be lost, or they chose to replace it."""
        lost = self.setup_lost(record)
        if not lost:
            return True
        text = (f"{DOING[verb]} take #{record.id} puts its settings into the generation panel, "
                f"which replaces {and_list(lost)}.")
        return ask_to_replace(self.generation.window(),
                              f"{verb.capitalize()} take #{record.id}?", text, verb)

    def restore_settings(self, record) -> None:
        """Every parameter of a library take back into the generation panel."""
        w = self.generation
        w.prompt_edit.setPlainText(record.prompt)
        w.negative_edit.setText(record.negative_prompt)
        index = w.model_combo.findData(record.model)
        if index >= 0:
            w.model_combo.setCurrentIndex(index)
        found = w.decoder_combo.findData(record.decoder)
        w.decoder_combo.setCurrentIndex(found if found >= 0 else 0)
        # each choice refills the next (app.generate.tier_combos): decoder, precision, codec tier
        choose(w.precision_combo, record.precision)
        choose(w.codec_tier_combo, record.decoder_tier)
        w.seconds_spin.setValue(record.seconds)
        w.steps_spin.setValue(record.steps)
        w.cfg_spin.setValue(record.cfg)
        w.apg_spin.setValue(record.apg)
        w.seed_edit.setText(str(record.seed))
        w.seed_lock.setChecked(True)
        w.variations_spin.setValue(1)
        if record.parent_id is not None and record.mode != "t2a":
            parent = self.load_take(record.parent_id)
            if parent is not None:
                self.session.set_init(parent)
                self.session.restore_spans(record.inpaint_spans)
        elif self.session.init_take is not None:
            self.session.clear_init()
        if record.init_noise_level is not None:
            w.init_noise_slider.setValue(round(record.init_noise_level * 100))
        w.seconds_spin.setValue(record.seconds)
        # the adapters it was made with, found by SHA-256; one not found stays listed, marked
        self.missing_adapters = restore_adapters(w.adapters_panel,
                                                 getattr(record, "adapters", []))

    def restore(self, record) -> None:
        if record is None:
            self.notifier.error("Select a take in the library first.")
            return
        if record.model == "imported":
            self.notifier.error("That is imported audio, not a generation; double-click it to "
                                "use it.")
            return
        if not self.confirmed(record, "restore"):
            self.notifier.status("Kept your setup; nothing was restored.")
            return
        self.restore_settings(record)
        if self.missing_adapters:  # what the take needs and is not here: the one sentence
            self.notifier.failed("Could not find an adapter", self.missing_adapters[0])
            return
        self.notifier.status(f"Settings of library take #{record.id} restored (seed "
                             f"{record.seed}).")

    def regenerate(self, record) -> None:
        """Re-run a library take exactly (same seed, same latents); a missing file is
        written back into the same library row."""
        if record is None or record.model == "imported":
            self.notifier.error("Select a generated take in the library to regenerate it.")
            return
        if (why := self.gpu.refusal()) is not None:
            self.notifier.status(why)
            return
        if not self.confirmed(record, "regenerate"):
            self.notifier.status("Kept your setup; nothing was regenerated.")
            return
        self.restore_settings(record)
        try:
            request = self.library.regeneration_request(record.id)
        except LIBRARY_ERRORS as exc:
            self.notifier.failed(f"Could not regenerate take #{record.id}", exc)
            return
        parent_id, source = self.session.init_lineage()
        job = Job(request=request, label=request.prompt,
                  replace_id=record.id if record.missing else None, parent_id=parent_id,
                  init_source=source)
        try:
            self.gpu.submit(batch_job([job]))
        except StudioError as exc:  # refused: the GPU took other work meanwhile
            self.notifier.status(str(exc))
