"""Getting a take out of the app: drag-out (takes list or waveform), Copy, and Save As."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData, QObject, Qt, QUrl
from PySide6.QtGui import QDrag, QGuiApplication
from PySide6.QtWidgets import QFileDialog, QListWidgetItem

from app.export import drag_file, take_basename, write_take
from app.services import Notifier, TakeModel
from app.takes import Take
from engines import paths
from engines.errors import StudioError

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
        try:
            path = drag_file(take, self.takes_dir())
        except StudioError as exc:
            self.notifier.error(str(exc))
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
        from engines.audio_io import format_for_path

        try:
            fmt = fmt or format_for_path(path)
            written = write_take(take, path.parent, fmt, name=path.stem)
        except StudioError as exc:
            self.notifier.error(str(exc))
            return None
        except OSError as exc:
            self.notifier.error(f"Could not save to {path.parent} ({exc.strerror or exc}); "
                                f"choose another folder.")
            return None
        self.notifier.status(f"Saved {written} with its .json sidecar.")
        return written
