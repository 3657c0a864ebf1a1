"""Importing sound folders off the GUI thread: listing and reading the files
(engines.sound_import.import_folders), then their thumbnails and sound embeddings
(make_sound_extras).

The work runs in a process of its own (app.library.import_child: the window keeps its GIL and
its share of the cores), which this thread starts and relays: each line it prints becomes a
queued signal, so the GUI thread only moves a progress bar. Cancel sends "cancel"; the engine
stops between two files, what was done stays, and the next rescan finishes the job. A bundled
app (no `python -m`) runs the same calls on this thread instead, with a ClipLibrary of its own
(a SQLite connection serves only the thread that opened it), closed as the thread ends.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from app.common.expected_errors import FILE_ERRORS, LIBRARY_ERRORS
from app.common.threads import stop_thread
from engines.lazy import lazy_import
from engines.store.library import ClipLibrary
from engines.store.records import LibraryError

sound_import = lazy_import("engines.sound_import")  # its readers load on the first import

log = logging.getLogger(__name__)

CODE_ROOT = Path(__file__).resolve().parents[2]
CHILD_STOP_S = 10.0  # a cancelled child ends after the file it reads; then it is killed


# One thread for the child's numeric libraries (read before numpy loads there): the two cores
# of a small machine stay shared with the window.
ONE_THREAD = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                     "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")}
UNEXPECTED = "The import stopped unexpectedly; the details are in the log."


def child_command(library_root: Path, folders: list[Path] | None) -> list[str] | None:
    """`python -m app.library.import_child ...`; None in a bundle (no interpreter to run)."""
    if getattr(sys, "frozen", False):
        return None
    return [sys.executable, "-m", "app.library.import_child", str(library_root),
            *(str(folder) for folder in folders or ())]


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
        self._child: subprocess.Popen | None = None
        self._child_lock = threading.Lock()

    @Slot(object)
    def run(self, job: ImportJob) -> None:
        folders = None if job.folders is None else list(job.folders)
        command = child_command(self.library_root, folders)
        if command is None:
            self._run_here(job)
        else:
            self._run_child(job, command)

    # ---- in a process of its own ---------------------------------------------------------
    def _run_child(self, job: ImportJob, command: list[str]) -> None:
        env = {**os.environ, **ONE_THREAD}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(CODE_ROOT), env.get("PYTHONPATH"))
                                            if p)
        try:
            child = subprocess.Popen(command, env=env, cwd=str(CODE_ROOT), text=True,
                                     encoding="utf-8", stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0))
        except OSError as exc:
            log.warning("could not start the import process", exc_info=True)
            reason = exc.strerror or str(exc)
            self.failed.emit(job, LibraryError(f"The import could not start ({reason}); try "
                                               "again."))
            return
        with self._child_lock:
            self._child = child
        if self.cancel.is_set():
            self.stop_child()
        threading.Thread(target=_log_lines, args=(child.stderr,), daemon=True).start()
        outcome = None
        try:
            for line in child.stdout:  # (the GIL is free while this waits)
                outcome = self._relay(job, line) or outcome
        finally:
            child.wait()
            with self._child_lock:
                self._child = None
        if outcome is None:
            log.warning("the import process ended (%s) without its report", child.returncode)
            self.failed.emit(job, LibraryError(UNEXPECTED))

    def _relay(self, job: ImportJob, line: str):
        """One line of the child's: a signal; the final outcome when it is one."""
        try:
            said = json.loads(line)
            kind, value = next(iter(said.items()))
        except (ValueError, StopIteration, AttributeError):
            log.info("import process: %s", line.rstrip())
            return None
        if kind == "progress":
            self.progress.emit(sound_import.ImportProgress(**value))
        elif kind == "listed":
            self.listed.emit(job, _report(value))
        elif kind == "done":
            report, extras = value
            self.done.emit(job, _report(report),
                           None if extras is None else sound_import.ExtrasReport(**extras))
            return kind
        elif kind == "error":
            self.failed.emit(job, LibraryError(str(value)))
            return kind
        return None

    def stop_child(self) -> None:
        """Ask the child to stop between two files (any thread)."""
        with self._child_lock:
            child = self._child
        if child is None or child.poll() is not None:
            return
        try:
            child.stdin.write("cancel\n")
            child.stdin.flush()
        except (OSError, ValueError):  # it is ending anyway
            log.debug("the import process had gone", exc_info=True)

    def kill_child(self) -> None:
        """The window closes: a child that does not stop within CHILD_STOP_S is ended."""
        self.stop_child()
        with self._child_lock:
            child = self._child
        if child is None:
            return
        try:
            child.wait(CHILD_STOP_S)
        except subprocess.TimeoutExpired:
            log.warning("the import process did not stop; ending it")
            child.kill()

    # ---- on this thread (a bundle) -------------------------------------------------------
    def _run_here(self, job: ImportJob) -> None:
        answered = False
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
            self.done.emit(job, report, extras)
            answered = True
        except (*LIBRARY_ERRORS, *FILE_ERRORS) as exc:  # one sentence, worded by the notifier
            log.info("importing %s failed", job.folders, exc_info=True)
            self.failed.emit(job, exc)
            answered = True
        finally:
            if not answered:  # a bug: it travels on to the log; the window is told and freed
                self.failed.emit(job, LibraryError(UNEXPECTED))

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
            except LIBRARY_ERRORS:  # closing goes on
                log.warning("closing the import thread's library failed", exc_info=True)


def _report(value: dict):
    report = sound_import.ImportReport(**value)
    report.skipped_files = [tuple(pair) for pair in report.skipped_files]
    return report


def _log_lines(stream) -> None:
    """The child's log (stderr) into this process's log file."""
    for line in stream:
        log.info("import process: %s", line.rstrip())


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
        self._worker.stop_child()

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
        self._worker.kill_child()
        if self._thread is not None:
            stop_thread(self._thread)
