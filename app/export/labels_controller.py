"""Settings > Labels and UCS list...: keeping the studio's names (engines.delivery.labels reads
them for every file delivered) and importing the user's UCS list."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QWidget

from app.common.expected_errors import SETTINGS_ERRORS
from app.common.notifier import Notifier
from app.export.labels_dialog import LabelsDialog
from engines import paths
from engines import settings as stored_settings
from engines.delivery.labels import studio_names
from engines.delivery.ucs import import_ucs_csv, load_user_list


def ucs_status() -> str:
    """The imported list in words, for the dialog."""
    try:
        ucs = load_user_list()
    except SETTINGS_ERRORS as exc:  # the dialog says it; importing again fixes it
        return str(exc)
    if ucs is None:
        return "No UCS list imported: category IDs are used as you type them."
    return f"{len(ucs)} categories imported."


class LabelsController(QObject):
    """Settings > Labels and UCS list... (connected by app.shell.studio); `window` is the
    dialog's parent."""

    def __init__(self, window: QWidget, notifier: Notifier, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.window = window
        self.notifier = notifier
        self.dialog: LabelsDialog | None = None

    def open_dialog(self) -> LabelsDialog:
        """Show the dialog (not modal, so tests and assistive tools can drive it)."""
        try:
            values = studio_names()
        except SETTINGS_ERRORS as exc:  # an unreadable data folder: empty fields
            self.notifier.failed("Could not read the label settings", exc)
            values = {}
        dialog = self.dialog = LabelsDialog(values, ucs_status(), self.window)
        dialog.import_button.clicked.connect(lambda: self.import_list())
        dialog.accepted.connect(lambda: self.keep(dialog.values()))
        dialog.show()
        return dialog

    def import_list(self, path: str | None = None) -> bool:
        dialog = self.dialog
        if path is None and dialog is not None:
            path = dialog.choose_ucs_file()
        if not path:
            return False
        try:
            ucs = import_ucs_csv(Path(path))
        except SETTINGS_ERRORS as exc:  # one sentence; the earlier list is kept
            self.notifier.failed("Could not import the UCS list", exc)
            return False
        if dialog is not None:
            dialog.ucs_label.setText(ucs_status())
        self.notifier.status(f"Imported the UCS list: {len(ucs)} categories.")
        return True

    def keep(self, values: dict[str, str]) -> bool:
        try:
            stored_settings.update_settings(paths.data_dir(), values)
        except SETTINGS_ERRORS as exc:  # one sentence; nothing else changes
            self.notifier.failed("Could not keep the label settings", exc)
            return False
        self.notifier.status("Labels kept: every file delivered from now on carries them.")
        return True
