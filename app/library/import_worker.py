"""Importing sound folders off the GUI thread: listing and reading the files
(engines.sound_import.import_folders), then their thumbnails and sound embeddings
(make_sound_extras), on a thread of its own.

A SQLite connection serves only the thread that opened it, so this thread opens a ClipLibrary of
its own (on the same folder as the window's) on first use and closes it as the thread ends.
The engine calls `progress` at most ~20 times a second; each call becomes a queued signal, so the
GUI thread only moves a progress bar. Cancel is a flag the engine checks between two files: what
was done stays, and the next rescan finishes the job.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from app.common.threads import stop_thread
from engines.lazy import lazy_import
from engines.store.library import ClipLibrary

sound_import = lazy_import("engines.sound_import")  # its readers load on the first import

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImportJob:
    """Folders to import, or None: rescan every folder imported before."""

    serial: int
    folders: tuple[Path, ...] | None


class _ImportWorker(QObject):
    progress = Signal(object)  # engines.sound_import.ImportProgress
    listed = Signal(object, object)  # ImportJob, ImportReport: the sounds are searchable now
    done = Signal(object, object, object)  # ImportJob, ImportReport, ExtrasReport | None
    failed = Signal(object, object)  # ImportJob, the exception (worded by the notifier)

    def __init__(self, library_root: Path) -> None:
        super().__init__()
        self.library_root = library_root
        self.cancel = threading.Event()
        self._library = None

    @Slot(object)
    def run(self, job: ImportJob) -> None:
        try:
            library = self._open()
            folders = None if job.folders is None else list(job.folders)
            report = sound_import.import_folders(library, folders, progress=self.progress.emit,
                                                 cancel=self.cancel)
            self.listed.emit(job, report)
            extras = None
            if not self.cancel.is_set():
                extras = sound_import.make_sound_extras(library, progress=self.progress.emit,
                                                        cancel=self.cancel)
        except Exception as exc:  # noqa: BLE001 - top of the import thread: one sentence
            log.info("importing %s failed", job.folders, exc_info=True)
            self.failed.emit(job, exc)
            return
        self.done.emit(job, report, extras)

    def _open(self):
        if self._library is None:
            self._library = ClipLibrary(self.library_root)
        return self._library

    def close(self) -> None:
        """On the worker's thread, as it ends (the connection is that thread's)."""
        library, self._library = self._library, None
        if library is not None:
            try:
                library.close()
            except Exception:  # noqa: BLE001 - closing goes on
                log.warning("closing the import thread's library failed", exc_info=True)


class SoundImportThread(QObject):
    """The import thread as the import controller uses it (started on first use). One job at a
    time: `busy` until `done` or `failed` comes back."""

    progress = Signal(object)
    listed = Signal(object, object)
    done = Signal(object, object, object)
    failed = Signal(object, object)
    _asked = Signal(object)

    def __init__(self, library_root: Path, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.serial = 0
        self.busy = False
        self._thread: QThread | None = None
        self._worker = _ImportWorker(library_root)
        self._closed = False
        self._worker.progress.connect(self.progress)
        self._worker.listed.connect(self.listed)
        self._worker.done.connect(self._finished)
        self._worker.failed.connect(self._failed)

    def start(self, folders: list[Path] | None) -> ImportJob | None:
        """Start importing `folders` (None: rescan them all); None when busy or shut down."""
        if self._closed or self.busy:
            return None
        if self._thread is None:
            thread = self._thread = QThread(self)
            thread.setObjectName("soundImportThread")
            self._worker.moveToThread(thread)
            self._asked.connect(self._worker.run)
            thread.finished.connect(self._worker.close, Qt.ConnectionType.DirectConnection)
            thread.start(QThread.Priority.LowPriority)  # the GUI thread comes first
        self.serial += 1
        self.busy = True
        self._worker.cancel.clear()
        job = ImportJob(self.serial, None if folders is None else tuple(folders))
        self._asked.emit(job)
        return job

    def cancel(self) -> None:
        self._worker.cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._worker.cancel.is_set()

    def _finished(self, job, report, extras) -> None:
        self.busy = False
        self.done.emit(job, report, extras)

    def _failed(self, job, exc) -> None:
        self.busy = False
        self.failed.emit(job, exc)

    def shutdown(self) -> None:
        """Stop an import under way (between two files), end the thread; idempotent."""
        self._closed = True
        self._worker.cancel.set()
        if self._thread is not None:
            stop_thread(self._thread)
