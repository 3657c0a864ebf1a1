"""The Finish panel's preset controls: choosing a preset, saving the panel as one, deleting one,
and the export name template beside them.

Its own class because none of it touches a take: it fills the panel and then asks the finish
controller to apply what the panel now says (`apply`), as any other edit of the panel does.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QInputDialog

from app.common.expected_errors import SETTINGS_ERRORS
from app.common.notifier import Notifier
from app.finish.panel import FinishPanel
from app.finish.presets import (
    delete_named_preset,
    load_template,
    preset_names,
    save_panel_preset,
    store_template,
)
from engines import paths
from engines.finish.presets import get_preset

RAW = "Raw"  # the preset that finishes nothing: the take leaves as it was made


class PresetPicker:
    """Wires the preset combo, its buttons and the template edit of `panel`."""

    def __init__(self, panel: FinishPanel, notifier: Notifier, apply: Callable[[], None],
                 has_take: Callable[[], bool]) -> None:
        self.panel = panel
        self.notifier = notifier
        self._apply = apply
        self._has_take = has_take
        # the preset chosen last: new takes get it; remembered by app.common.window_state
        self.last_preset = RAW
        panel.preset_combo.setToolTip(panel.preset_combo.toolTip() + "; new takes are finished "
                                      "with the one chosen last")
        panel.preset_combo.activated.connect(self._chosen)
        panel.save_preset_button.clicked.connect(self._ask_name)
        panel.delete_preset_button.clicked.connect(self.delete_current)
        panel.template_edit.editingFinished.connect(self._template_edited)
        self.refresh(RAW)
        panel.template_edit.setText(load_template(notifier))

    def refresh(self, current: str | None) -> None:
        self.panel.set_presets(preset_names(self.notifier), current)

    def _chosen(self, index: int) -> None:
        self.choose(self.panel.preset_combo.itemText(index))

    def choose(self, name: str) -> None:
        """Fill the panel from the preset `name` and finish the selected take with it."""
        try:
            settings = get_preset(paths.data_dir(), name)
        except SETTINGS_ERRORS as exc:  # one sentence
            self.notifier.failed(f"Could not use the preset {name!r}", exc)
            return
        self.panel.set_settings(settings)
        self.panel.show_preset(name)
        self.last_preset = name
        self._apply()

    def offer(self, name: str) -> bool:
        """Show `name` (the preset chosen last time) until a take is selected - new takes are
        finished with it (`apply_to_new_take`); a preset that no longer exists is not offered."""
        if self.panel.preset_combo.findText(name) < 0:
            return False
        self.last_preset = name
        if not self._has_take():
            self.panel.show_preset(name)
        return True

    def apply_to_new_take(self) -> None:
        """The selected take was just generated: finish it with the preset chosen last, as
        choosing it would (Raw: nothing to do; a preset deleted meanwhile: it stays raw, and
        says so once)."""
        if self.last_preset == RAW:
            return
        try:
            settings = get_preset(paths.data_dir(), self.last_preset)
        except SETTINGS_ERRORS as exc:  # one sentence; new takes stay raw
            self.notifier.failed(f"Could not finish the new take with {self.last_preset!r}", exc)
            self.last_preset = RAW
            return
        self.panel.set_settings(settings)
        self.panel.show_preset(settings.preset)
        self._apply()

    def _ask_name(self) -> None:
        name, ok = QInputDialog.getText(self.panel.window(), "Save preset",
                                        "Name of the new preset:")
        if ok and name.strip():
            self.save_as(name)

    def save_as(self, name: str) -> str | None:
        stored = save_panel_preset(self.notifier, name, self.panel.settings())
        if stored is not None:
            self.refresh(stored)
            self.last_preset = stored
            self.panel.set_hidden(preset=stored)
            self._apply()
        return stored

    def delete_current(self) -> None:
        name = self.panel.preset_combo.currentText()
        if delete_named_preset(self.notifier, name):
            self.refresh(RAW)

    def _template_edited(self) -> None:
        edit = self.panel.template_edit
        edit.setText(store_template(self.notifier, edit.text()))
