"""Getting a take out of the app: drag-out (takes list or waveform), Copy, and Save As."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData, QObject, Qt, QUrl
from PySide6.QtGui import QDrag, QGuiApplication
from PySide6.QtWidgets import QFileDialog, QListWidgetItem

from app.export import drag_file, save_take_as, take_basename
from app.services import Notifier, TakeModel
from app.takes import Take
from engines import paths
from engines.failures import shown

SAVE_FILTERS = {"WAV 16-bit (*.wav)": "wav16", "WAV 24-bit (*.wav)": "wav24",
                "FLAC (*.flac)": "flac", "OGG Vorbis (*.ogg)": "ogg"}


class ExportController(QObject):
    def __init__(self, view, notifier: Notifier, session: TakeModel,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.view = view
        self.notifier = notifier
        self.session = session
        w = view
        w.takes_list.drag_source = self.mime_for_item
        w.waveform.dragOutRequested.connect(self.start_drag_current)
        w.export_button.clicked.connect(self.save_as)
        w.save_action.triggered.connect(self.save_as)
        w.copy_button.clicked.connect(self.copy_current)
        w.copy_action.triggered.connect(self.copy_current)

    def takes_dir(self) -> Path:
        return paths.library_dir() / "takes"

    def mime_for_take(self, take: Take) -> QMimeData | None:
        """The file URL of the take's drag-out file; None (and one sentence) when it cannot be
        written. Called from Qt's drag machinery, so nothing may escape from here."""
        try:
            path = drag_file(take, self.takes_dir())
        except Exception as exc:  # noqa: BLE001 - one sentence, the traceback to the log
            self.notifier.failed("Could not write the take's file for dragging", exc)
            return None
        data = QMimeData()
        data.setUrls([QUrl.fromLocalFile(str(path))])
        return data

    def mime_for_item(self, item: QListWidgetItem) -> QMimeData | None:
        take = self.session.take_for(item)
        return None if take is None else self.mime_for_take(take)

    def start_drag_current(self) -> None:
        take = self.session.current_take()
        if take is None:
            return
        data = self.mime_for_take(take)
        if data is None:
            return
        drag = QDrag(self.view.waveform)
        drag.setMimeData(data)
        drag.exec(Qt.DropAction.CopyAction)

    def copy_current(self) -> None:
        take = self.session.current_take()
        if take is None:
            self.notifier.error("Select a take to copy.")
            return
        data = self.mime_for_take(take)
        if data is not None:
            data.setText(data.urls()[0].toString())
            QGuiApplication.clipboard().setMimeData(data)
            self.notifier.status(f"Copied {data.urls()[0].toLocalFile()} to the clipboard.")

    def save_as(self) -> None:
        take = self.session.current_take()
        if take is None:
            self.notifier.error("Select a take to save.")
            return
        suggested = str(Path.home() / f"{take_basename(take.prompt, take.seed)}.wav")
        path, chosen = QFileDialog.getSaveFileName(self.view, "Save take as", suggested,
                                                   ";;".join(SAVE_FILTERS))
        if path:
            self.save_take(take, Path(path), SAVE_FILTERS.get(chosen))

    def save_take(self, take: Take, path: Path, fmt: str | None = None) -> Path | None:
        """Save As: the file the user named is replaced only by a complete new one; any
        failure leaves it (and its sidecar) as it was, and says so in one sentence."""
        from engines.audio_io import format_for_path

        try:
            fmt = fmt or format_for_path(path)
            written = save_take_as(take, path, fmt)
        except Exception as exc:  # noqa: BLE001 - one sentence, the traceback to the log
            self.notifier.failed(f"Could not save {shown(path)}", exc)
            return None
        sidecar = " with its .json sidecar" if take.result is not None else ""
        self.notifier.status(f"Saved {written}{sidecar}.")
        return written
