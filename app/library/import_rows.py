"""Imported sounds beside takes on the Library page: what a row can do depends on its kind.

Playing, dragging out, Find similar, search, labels and ratings work on both kinds. Restore
settings and Regenerate need the settings a take was made with, which an imported sound has
not: for such a row they are disabled, and their tooltip says why. Use as init audio (button and
the table's menu) brings the selected row - imported or generated - into the session and makes
it the Generate panel's init audio, ready for audio-to-audio or for painting inpaint spans.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject

from app.common.notifier import Notifier
from app.common.session import TakeModel
from app.common.session_take import Take
from app.library.panel import LibraryPanel

NOT_GENERATED = ("{what} does not apply to an imported sound: it was not generated here, so "
                 "there are no settings to use. Use as init audio starts from its sound instead.")
NOTHING_SELECTED = "Select a sound in the library first, then use it as init audio."


class ImportedRows(QObject):
    """`load(take_id)` brings a library row into the session (LibraryController's)."""

    def __init__(self, panel: LibraryPanel, notifier: Notifier, session: TakeModel,
                 load: Callable[[int], Take | None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.panel = panel
        self.notifier = notifier
        self.session = session
        self.load = load
        self._settings_actions = (
            ("Restore settings", panel.restore_button, panel.restore_action),
            ("Regenerate", panel.regenerate_button, panel.regenerate_action))
        self._tips = {button: button.toolTip() for _what, button, _a in self._settings_actions}
        panel.use_init_button.clicked.connect(self.use_selected_as_init)
        panel.use_init_action.triggered.connect(self.use_selected_as_init)

    def selection_changed(self, record) -> None:
        """Enable what applies to the selected row; say why what does not is disabled."""
        imported = record is not None and bool(getattr(record, "is_imported", False))
        for what, button, action in self._settings_actions:
            button.setEnabled(not imported)
            action.setEnabled(not imported)
            tip = NOT_GENERATED.format(what=what) if imported else self._tips[button]
            button.setToolTip(tip)
            action.setToolTip(tip)
            action.setStatusTip(tip if imported else "")
        self.panel.use_init_button.setEnabled(record is not None)
        self.panel.use_init_action.setEnabled(record is not None)

    def use_selected_as_init(self) -> Take | None:
        """The selected row as init audio: in the session (selected there), then the init."""
        record = self.panel.current_record()
        if record is None:
            self.notifier.error(NOTHING_SELECTED)
            return None
        take = self.load(record.id)  # says why when the file cannot be read
        if take is None:
            return None
        self.session.set_init(take)  # the init box, the length and the words follow
        return take
