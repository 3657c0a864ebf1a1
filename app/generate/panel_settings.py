"""The generation panel's settings as plain data and back: what the next run restores
(app.common.session_memory). Names are a contract with files on users' disks: add, never
rename. A value of the wrong type, or an entry that cannot run here (a model or tier of
another machine), is skipped; applying never raises on a damaged file's values.
"""

from __future__ import annotations

import math

from PySide6.QtWidgets import QComboBox

from app.adapters.state import adapter_settings, apply_adapter_settings
from app.common.tiers import choose, chosen
from app.common.window_state import select_enabled
from app.generate.panel import GenerationPanel


def panel_settings(panel: GenerationPanel) -> dict:
    """Everything the user set in the generation panel."""
    return {
        "prompt": panel.prompt_edit.toPlainText(),
        "negative_prompt": panel.negative_edit.text(),
        "model": panel.model_combo.currentData(),
        "decoder": panel.decoder_combo.currentData(),
        "precision": chosen(panel.precision_combo),
        "codec_tier": chosen(panel.codec_tier_combo),
        "seconds": panel.seconds_spin.value(),
        "steps": panel.steps_spin.value(),
        "cfg": panel.cfg_spin.value(),
        "apg": panel.apg_spin.value(),
        "seed": panel.seed_edit.text(),
        "seed_lock": panel.seed_lock.isChecked(),
        "variations": panel.variations_spin.value(),
        "reroll_flagged": panel.reroll_flagged_check.isChecked(),
        "init_noise": panel.init_noise_slider.value(),
        "adapters": adapter_settings(panel.adapters_panel),  # files, strengths, switches
    }


def apply_panel_settings(panel: GenerationPanel, settings: dict) -> None:
    """Put `settings` (of `panel_settings`) back; each choice refills the next one (model ->
    decoder -> precision -> codec tier), so they are set in that order."""
    get = settings.get
    if isinstance(get("model"), str):
        select_enabled(panel.model_combo, get("model"))
    if isinstance(get("decoder"), str) or get("decoder") is None:
        _choose_data(panel.decoder_combo, get("decoder"))
    for combo, key in ((panel.precision_combo, "precision"),
                       (panel.codec_tier_combo, "codec_tier")):
        value = get(key)
        choose(combo, value if isinstance(value, str) else None)
    for spin, key in ((panel.seconds_spin, "seconds"), (panel.cfg_spin, "cfg"),
                      (panel.apg_spin, "apg")):
        value = get(key)
        # unchanged values are not set again: the Length would count as the user's choice
        # and stop following the model's default (app.generate.controller)
        if _number(value) and float(value) != spin.value():
            spin.setValue(float(value))
    for spin, key in ((panel.steps_spin, "steps"), (panel.variations_spin, "variations"),
                      (panel.init_noise_slider, "init_noise")):
        value = get(key)
        if _number(value) and int(value) == value and int(value) != spin.value():
            spin.setValue(int(value))
    for edit, key in ((panel.negative_edit, "negative_prompt"), (panel.seed_edit, "seed")):
        if isinstance(get(key), str):
            edit.setText(get(key))
    if isinstance(get("prompt"), str):
        panel.prompt_edit.setPlainText(get("prompt"))
    apply_adapter_settings(panel.adapters_panel, get("adapters"))
    for check, key in ((panel.seed_lock, "seed_lock"),
                       (panel.reroll_flagged_check, "reroll_flagged")):
        if isinstance(get(key), bool):
            check.setChecked(get(key))


def _number(value) -> bool:
    """A finite number (a file edited by hand may hold anything)."""
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value))


def _choose_data(combo: QComboBox, data: str | None) -> None:
    """The entry whose data is `data` (None: the decoder paired with the model)."""
    index = next((i for i in range(combo.count()) if combo.itemData(i) == data), -1)
    if index >= 0 and combo.currentIndex() != index:
        combo.setCurrentIndex(index)
