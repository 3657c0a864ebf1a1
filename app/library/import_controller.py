"""File > Import sound folder... and File > Rescan sound folders: the designer's own sound files
referenced in place (never copied, never changed), listed in the Library page beside the takes.

The work runs on the import thread (app.library.import_worker): first the files are listed and
read (their headers and metadata: they are searchable as soon as that is done, and the table
shows them), then their waveform thumbnails and sound embeddings are made in the background. The
progress row under the table says where it is and cancels; the status bar says it in words.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog

from app.common.expected_errors import LIBRARY_ERRORS
from app.common.library_access import UnavailableLibrary
from app.common.notifier import Notifier
from app.library.import_progress import ImportProgressRow
from app.library.import_sources import SourceFilter
from app.library.import_worker import SoundImportThread

log = logging.getLogger(__name__)

STATUS_EVERY_S = 0.5  # the status bar's words change at most this often (the bar moves more)
BUSY = "Sounds are being imported; wait for it to finish, or cancel it under the library table."
NO_FOLDERS = ("No sound folder is imported yet; choose File > Import sound folder... to add "
              "one.")


def _sounds(count: int) -> str:
    return f"{count:,} sound{'s' if count != 1 else ''}"


def extras_sentence(extras) -> str:
    """What the background pass made, in words ("" when it had nothing to do)."""
    if extras is None:
        return ""
    made = max(extras.thumbnails, extras.embeddings)
    text = f"Waveforms and sound search ready for {_sounds(made)}." if made else ""
    if extras.failed:
        text += (f" {_sounds(extras.failed)} could not be read for them; they are listed all "
                 "the same.")
    return text.strip()


class SoundFolderImport(QObject):
    """`libraryChanged` asks the Library page to list again (the sounds arrived or changed)."""

    libraryChanged = Signal()
    started = Signal()  # an import began: the Library page shows its progress

    def __init__(self, progress: ImportProgressRow, sources: SourceFilter, notifier: Notifier,
                 library, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.progress = progress
        self.sources = sources
        self.notifier = notifier
        self.library = library
        self.last_folder = ""
        self.thread: SoundImportThread | None = None
        self._said_at = 0.0
        self._phase = ""
        progress.cancel_button.clicked.connect(self.cancel)

    @property
    def busy(self) -> bool:
        return self.thread is not None and self.thread.busy

    # ------------------------------------------------------------------ asking
    def choose_folder(self) -> None:
        """File > Import sound folder...: pick a folder, import it."""
        if self._refused():
            return
        folder = QFileDialog.getExistingDirectory(self.progress.window(), "Import sound folder",
                                                  self.last_folder)
        if folder:
            self.import_folders([Path(folder)])

    def import_folders(self, folders: list[Path]) -> bool:
        """Import `folders` in the background; False when it cannot start now (said why)."""
        if self._refused():
            return False
        self.last_folder = str(folders[-1]) if folders else self.last_folder
        return self._start(list(folders))

    def rescan(self) -> bool:
        """File > Rescan sound folders: added, changed, moved and deleted files of every
        folder imported before."""
        if self._refused():
            return False
        try:
            known = self.library.sound_folders()
        except LIBRARY_ERRORS as exc:
            self.notifier.failed("Could not list the imported sound folders", exc)
            return False
        if not known:
            self.notifier.error(NO_FOLDERS)
            return False
        return self._start(None)

    def cancel(self) -> None:
        if self.busy:
            self.thread.cancel()
            self.progress.cancelling()
            self.notifier.status("Cancelling the import after the file being read...")

    def _refused(self) -> bool:
        if isinstance(self.library, UnavailableLibrary):
            self.notifier.error(self.library.notice)
            return True
        if self.busy:
            self.notifier.error(BUSY)
            return True
        return False

    def _start(self, folders: list[Path] | None) -> bool:
        if self.thread is None:
            self.thread = SoundImportThread(Path(self.library.root), self)
            self.thread.progress.connect(self._progress)
            self.thread.listed.connect(self._listed)
            self.thread.done.connect(self._done)
            self.thread.failed.connect(self._failed)
        if self.thread.start(folders) is None:
            return False
        self._phase = ""
        self._show("listing", 0, 0)
        self.started.emit()
        return True

    # ------------------------------------------------------------------ answers
    def _progress(self, progress) -> None:
        if self.thread is not None and self.thread.cancelled:
            return  # the row says it is cancelling
        self._show(progress.phase, progress.done, progress.total)

    def _show(self, phase: str, done: int, total: int) -> None:
        words = self.progress.show_progress(phase, done, total)
        now = time.monotonic()
        if phase != self._phase or now - self._said_at >= STATUS_EVERY_S:
            self._phase, self._said_at = phase, now
            self.notifier.status(words)

    def _listed(self, _job, report) -> None:
        """The files are in the library: list them now, while their extras are made."""
        self.refresh_sources()
        self.libraryChanged.emit()
        if not report.cancelled:
            self.notifier.status(f"{report.sentence()} Their waveforms and sound search are "
                                 "being prepared in the background.")

    def _done(self, _job, report, extras) -> None:
        self.progress.finish()
        self.refresh_sources()
        self.libraryChanged.emit()
        lines = list(report.folder_problems)
        summary = report.sentence()
        if report.cancelled or (self.thread is not None and self.thread.cancelled):
            summary = (f"Import cancelled. {summary} Import the folder again, or rescan the "
                       "sound folders, to finish the job.")
        lines.append(" ".join(part for part in (summary, extras_sentence(extras)) if part))
        self.notifier.notices(lines)

    def _failed(self, _job, exc) -> None:
        self.progress.finish()
        self.libraryChanged.emit()  # what was kept before the failure is listed
        self.notifier.failed("Could not import the sound folder", exc)

    # ------------------------------------------------------------------ the Source filter
    def refresh_sources(self) -> None:
        """The Source filter lists the folders imported so far."""
        if isinstance(self.library, UnavailableLibrary):
            return
        try:
            folders = self.library.sound_folders()
        except LIBRARY_ERRORS:  # the filter keeps its old list; the page goes on
            log.info("could not list the imported sound folders", exc_info=True)
            return
        self.sources.set_folders([folder.root for folder in folders])

    def shutdown(self) -> None:
        if self.thread is not None:
            self.thread.shutdown()
