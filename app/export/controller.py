"""Getting a take out of the app: drag-out (takes list, waveform, library rows), Copy, and
Save As, all through app.export.files and the one delivery layer. A take with a finishing chain
leaves as its finished file, any other take as it was made; both are named by the Finish
panel's export name template. Save and Copy in the File menu are connected by app.shell.studio.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData, QObject, Qt, QUrl
from PySide6.QtGui import QDrag, QGuiApplication
from PySide6.QtWidgets import QFileDialog, QListWidgetItem

from app.common.expected_errors import FILE_ERRORS
from app.common.notifier import Notifier
from app.common.session import TakeModel
from app.common.session_take import Take
from app.finish.panel import FinishPanel
from app.takes.panel import SessionPanel
from app.widgets.waveform import WaveformView
from engines import paths
from engines.audio_io.formats import FORMATS, suffix_for
from engines.delivery.names import DEFAULT_TEMPLATE
from engines.error_sentences import shown
from engines.errors import StudioError
from engines.lazy import lazy_import

# Loaded on the first drag or Save As, not before the window's first paint (issue 32): it
# pulls the whole delivery writer.
export_files = lazy_import("app.export.files")

# The Save As dialog's file types, from the one format table: "WAV 16-bit (*.wav)" ...
SAVE_FILTERS = {f"{spec.label} (*{spec.suffix})": key for key, spec in FORMATS.items()}
STILL_FINISHING = ("The finished take is still being prepared; try again in a moment (or "
                   "choose the Raw preset to take the raw file).")


class ExportController(QObject):
    """The takes panel's Save As and Copy, and drag-out from its list and from the waveform;
    names come from `finish_panel`'s export name template."""

    def __init__(self, panel: SessionPanel, waveform: WaveformView, finish_panel: FinishPanel,
                 notifier: Notifier, session: TakeModel, library=None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.panel = panel
        self.waveform = waveform
        self.finish_panel = finish_panel
        self.library = library  # the session's library, to describe the takes it holds
        self.notifier = notifier
        self.session = session
        self.last_folder: Path | None = None  # where Save As saved last (app.common.window_state)
        panel.takes_list.drag_source = self.mime_for_item
        waveform.dragOutRequested.connect(self.start_drag_current)
        panel.export_button.clicked.connect(self.save_as)
        panel.copy_button.clicked.connect(self.copy_current)

    def takes_dir(self) -> Path:
        return paths.library_dir() / "takes"

    def finished_dir(self) -> Path:
        return paths.library_dir() / "finished"

    def name_template(self) -> str:
        return self.finish_panel.template_edit.text().strip() or DEFAULT_TEMPLATE

    @staticmethod
    def finished_for(take: Take):
        """The take's finished audio for its current chain; None for a raw take. Raises a
        StudioError while the chain's audio is still being made."""
        if take.finishing is None:
            return None
        rendered = take.finished
        if rendered is None or not rendered.matches(take.finishing, take.loop):
            raise StudioError(STILL_FINISHING)
        return rendered

    def file_for(self, take: Take) -> Path:
        """The file a drag or Copy hands out: the finished file, else the raw one."""
        rendered = self.finished_for(take)
        folder = self.takes_dir() if rendered is None else self.finished_dir()
        return export_files.drag_file(take, folder, self.name_template(), self.library)

    def mime_for_take(self, take: Take) -> QMimeData | None:
        """The file URL of the take's drag-out file; None (and one sentence) when it cannot be
        written. Called from Qt's drag machinery, so nothing may escape from here."""
        try:
            path = self.file_for(take)
        except Exception as exc:  # noqa: BLE001 - inside Qt's drag: an escape aborts the app
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
        drag = QDrag(self.waveform)
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
        try:
            self.finished_for(take)
            name = export_files.file_stem(take, self.name_template(), self.library)
        except FILE_ERRORS as exc:  # one sentence, the traceback to the log
            self.notifier.failed("Could not save the take", exc)
            return
        filters = SAVE_FILTERS
        fmt = export_files.take_format(take)
        chosen = next(label for label, value in filters.items() if value == fmt)
        folder = self.last_folder if self.last_folder and self.last_folder.is_dir() \
            else Path.home()
        suggested = str(folder / f"{name}{suffix_for(fmt)}")
        path, chosen = QFileDialog.getSaveFileName(self.panel.window(), "Save take as", suggested,
                                                   ";;".join(filters), chosen)
        if path:
            self.save_take(take, Path(path), filters.get(chosen))

    def save_take(self, take: Take, path: Path, fmt: str | None = None) -> Path | None:
        """Save As: the file the user named is replaced only by a complete new one; any
        failure leaves it (and its sidecar) as it was, and says so in one sentence."""
        try:
            self.finished_for(take)
            written = export_files.save_take_as(take, path, fmt, self.library)
        except FILE_ERRORS as exc:  # one sentence, the traceback to the log
            self.notifier.failed(f"Could not save {shown(path)}", exc)
            return None
        self.last_folder = Path(written).parent
        self.notifier.status(f"Saved {written} with its .json sidecar.")
        return written
