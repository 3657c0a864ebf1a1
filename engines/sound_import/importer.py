"""Importing folders of sound files in place, and rescanning them.

One pass: walk every folder, compare each file's stat with what the library has (equal: nothing
is read), read the header and metadata of the new and changed files (a few threads: the work is
file I/O and libsndfile, which release the GIL), then write in batches, each its own short
transaction, so a cancelled or interrupted import keeps what it did and the next rescan
finishes the rest.

What a rescan does with each file:
- unchanged (same size and mtime): nothing;
- added: a new row;
- changed: read again; the row keeps what the user gave it (rating, tags, notes, a name of
  their own); its peaks and embedding are made again (engines.sound_import.extras);
- moved or renamed (a new path whose fingerprint is that of a file gone since): the row
  follows it, with its ratings, tags, embedding and peaks;
- deleted (gone while its folder could be walked): its row is removed, so the library shows
  what the folder holds. A folder that cannot be reached (an unplugged drive) or a subfolder
  that cannot be listed removes nothing: its sounds stay, shown as missing, until it is back.
A sound the user emptied out of the trash is not imported again (engines.store.sound_files).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from engines.error_sentences import sentence, shown
from engines.sound_import.probe import NotReadable, SoundEntry, read_sound
from engines.sound_import.sound_rows import changed_take_columns, file_row, new_take_row
from engines.sound_import.ucs_filename import user_ucs_list
from engines.sound_import.walk import FoundFile, walk_folder
from engines.store.rows import created_now
from engines.store.sound_files import KnownFile

if TYPE_CHECKING:
    from engines.store.library import ClipLibrary

log = logging.getLogger(__name__)

READ_WORKERS = 4  # threads reading headers: I/O and libsndfile release the GIL
READ_CHUNK = 64  # files handed to the threads at a time (cancel is checked between)
WRITE_BATCH = 500  # rows per write transaction
PROGRESS_INTERVAL_S = 0.05  # at most about 20 progress calls a second


class Cancel(Protocol):
    def is_set(self) -> bool: ...


@dataclass(frozen=True)
class ImportProgress:
    """phase: "listing" (total 0: not known yet), "reading", "writing"; the file just done."""

    phase: str
    done: int
    total: int
    path: str | None = None


Progress = Callable[[ImportProgress], None]


@dataclass
class ImportReport:
    imported: int = 0
    updated: int = 0
    moved: int = 0
    removed: int = 0
    unchanged: int = 0
    skipped: int = 0
    ignored: int = 0  # files that are no sound and not named like one (texts, images)
    skipped_files: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    folder_problems: list[str] = field(default_factory=list)  # one sentence each
    folders: list[str] = field(default_factory=list)  # the roots scanned
    cancelled: bool = False
    seconds: float = 0.0

    def sentence(self) -> str:
        """One line for a status bar or the end of a command's output."""
        where = f"{len(self.folders)} folder{'s' if len(self.folders) != 1 else ''}"
        head = "Import cancelled after" if self.cancelled else "Scanned"
        return (f"{head} {where}: {self.imported} new, {self.updated} changed, {self.moved} "
                f"moved, {self.removed} removed, {self.unchanged} unchanged, {self.skipped} "
                f"skipped ({self.seconds:.1f} s).")


class _Throttled:
    """Calls progress at most every PROGRESS_INTERVAL_S, and always at a phase's end."""

    def __init__(self, progress: Progress | None) -> None:
        self._progress = progress
        self._last = 0.0

    def __call__(self, phase: str, done: int, total: int, path: str | None = None,
                 *, force: bool = False) -> None:
        if self._progress is None:
            return
        now = time.monotonic()
        if force or now - self._last >= PROGRESS_INTERVAL_S:
            self._last = now
            self._progress(ImportProgress(phase, done, total, path))


def import_folders(library: ClipLibrary, folders: Sequence[str | os.PathLike[str]] | None, *,
                   progress: Progress | None = None, cancel: Cancel | None = None,
                   workers: int = READ_WORKERS) -> ImportReport:
    """Import `folders` (None: rescan every folder imported before); see the module docstring.
    Bad folders are reported in the result, never raised; LibraryError (one sentence) only
    when the library cannot be written."""
    started = time.perf_counter()
    library.require_writable()
    report = ImportReport()
    stopped = (lambda: cancel.is_set()) if cancel is not None else (lambda: False)
    tell = _Throttled(progress)
    roots = _checked_roots(library, folders, report)
    if not roots:
        report.seconds = time.perf_counter() - started
        return report
    found: dict[str, list[FoundFile]] = {}
    blind: dict[str, list[str]] = {}  # root -> subfolders that could not be listed
    count = 0
    for root in roots:
        files, blind[root] = [], []

        def unreadable(path: str, err: OSError, root: str = root) -> None:
            blind[root].append(path)
            report.skipped_files.append((path, sentence("This folder could not be read",
                                                        err).split(": ", 1)[1]))

        for item in walk_folder(root, stopped, unreadable):
            files.append(item)
            count += 1
            tell("listing", count, 0, item.path)
        found[root] = files
    tell("listing", count, 0, force=True)
    if stopped():
        report.cancelled = True
    else:
        _apply(library, roots, found, blind, report, tell, stopped, workers)
    report.folders = roots
    report.seconds = time.perf_counter() - started
    log.info("%s", report.sentence())
    return report


def _checked_roots(library: ClipLibrary, folders: Sequence[str | os.PathLike[str]] | None,
                   report: ImportReport) -> list[str]:
    """The folders to scan, each as its real path; a bad one becomes a folder problem."""
    rescan = folders is None
    known = {folder.root: folder.sounds for folder in library.sound_folders()}
    wanted = list(known) if rescan else [os.fspath(folder) for folder in folders]
    roots: list[str] = []
    library_root = os.path.realpath(library.root)
    for folder in wanted:
        real = os.path.realpath(os.path.abspath(folder))
        problem = _folder_problem(folder, real, library_root, known)
        if problem:
            report.folder_problems.append(problem)
        elif real not in roots:
            roots.append(real)
    return roots


def _folder_problem(given: str, real: str, library_root: str, known: dict[str, int]) -> str:
    if not os.path.exists(real):
        if real in known:
            return (f"The folder {shown(given)} cannot be reached, so its {known[real]} "
                    "sounds were kept as they were; connect its drive and rescan.")
        return f"The folder {shown(given)} does not exist; check the path and try again."
    if not os.path.isdir(real):
        return (f"{shown(given)} is a file, not a folder; give the folder that holds your "
                "sounds.")
    if real == library_root or real.startswith(library_root + os.sep):
        return (f"The folder {shown(given)} is inside the library itself; import a folder "
                "of your own sounds.")
    try:
        with os.scandir(real):
            pass
    except OSError as err:
        return sentence(f"The folder {shown(given)} could not be read", err)
    return ""


def _apply(library: ClipLibrary, roots: list[str], found: dict[str, list[FoundFile]],
           blind: dict[str, list[str]], report: ImportReport, tell: _Throttled,
           stopped: Callable[[], bool], workers: int) -> None:
    sounds = library.sounds
    known_by_root = {root: sounds.known(root) for root in roots}
    library_inside = os.path.realpath(library.root) + os.sep
    owner: dict[str, str] = {}  # path -> the root whose row it has, across every folder
    for folder in library.sound_folders():
        for path in sounds.known(folder.root) if folder.root not in known_by_root \
                else known_by_root[folder.root]:
            owner[path] = folder.root
    to_read: list[tuple[FoundFile, str, KnownFile | None]] = []
    seen: set[str] = set()
    for root in roots:
        known = known_by_root[root]
        for item in found[root]:
            if item.path in seen or item.path.startswith(library_inside):
                continue
            seen.add(item.path)
            row = known.get(item.path)
            if row is None and owner.get(item.path, root) != root:
                report.unchanged += 1  # kept by another imported folder that holds this one
                continue
            if row is not None and row.forgotten:
                continue  # emptied out of the trash by the user: not imported again
            if row is not None and (row.size, row.mtime_ns) == (item.size, item.mtime_ns):
                report.unchanged += 1
            else:
                to_read.append((item, root, row))
    gone = [row for root in roots for path, row in known_by_root[root].items()
            if path not in seen and not _under_any(path, blind[root])]
    entries = _read_all(to_read, report, tell, stopped, workers)
    if stopped():
        report.cancelled = True
        return
    _write(library, roots, entries, gone, report, tell, stopped)


def _under_any(path: str, folders: Iterable[str]) -> bool:
    return any(path.startswith(folder.rstrip(os.sep) + os.sep) for folder in folders)


def _read_all(to_read: list[tuple[FoundFile, str, KnownFile | None]], report: ImportReport,
              tell: _Throttled, stopped: Callable[[], bool], workers: int
              ) -> list[tuple[SoundEntry, KnownFile | None]]:
    ucs = user_ucs_list() if to_read else None

    def read(job: tuple[FoundFile, str, KnownFile | None]) -> SoundEntry | NotReadable:
        try:
            return read_sound(job[0], job[1], ucs)
        except NotReadable as err:
            return err

    entries: list[tuple[SoundEntry, KnownFile | None]] = []
    total = len(to_read)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for start in range(0, total, READ_CHUNK):
            if stopped():
                break
            chunk = to_read[start:start + READ_CHUNK]
            for job, result in zip(chunk, pool.map(read, chunk), strict=True):
                if isinstance(result, NotReadable):
                    if result.sound_like:
                        report.skipped += 1
                        report.skipped_files.append((job[0].path, result.reason))
                    else:
                        report.ignored += 1
                else:
                    entries.append((result, job[2]))
            tell("reading", min(start + READ_CHUNK, total), total, chunk[-1][0].path)
    tell("reading", total, total, force=True)
    return entries


def _write(library: ClipLibrary, roots: list[str],
           entries: list[tuple[SoundEntry, KnownFile | None]], gone: list[KnownFile],
           report: ImportReport, tell: _Throttled, stopped: Callable[[], bool]) -> None:
    """Moves are matched here: a new file whose fingerprint is a gone file's takes its row."""
    sounds = library.sounds
    gone_by_print: dict[str, list[KnownFile]] = {}
    for row in gone:
        gone_by_print.setdefault(row.fingerprint, []).append(row)
    jobs: list[tuple[str, SoundEntry, KnownFile | None]] = []
    for entry, row in entries:
        if row is None and gone_by_print.get(entry.fingerprint):
            jobs.append(("move", entry, gone_by_print[entry.fingerprint].pop()))
        else:
            jobs.append(("change" if row is not None else "add", entry, row))
    removed = [row for rows in gone_by_print.values() for row in rows]
    now = created_now()
    total = len(jobs) + len(removed)
    with sounds.write():
        for root in roots:
            sounds.add_folder(root, now)
    for start in range(0, len(jobs), WRITE_BATCH):
        if stopped():
            report.cancelled = True
            return
        batch = jobs[start:start + WRITE_BATCH]
        records = {row.take_id: library.get(row.take_id) for _, _, row in batch
                   if row is not None}
        with sounds.write():
            next_id = sounds.next_id()
            for kind, entry, row in batch:
                if row is None:
                    sounds.add_sound(new_take_row(entry, next_id), file_row(entry))
                    next_id += 1
                    report.imported += 1
                else:
                    changes = changed_take_columns(entry, records[row.take_id], row.path)
                    sounds.replace(row.take_id, changes, file_row(entry),
                                   same_audio=kind == "move")
                    if kind == "move":
                        report.moved += 1
                    else:
                        report.updated += 1
        tell("writing", start + len(batch), total, batch[-1][1].path)
    if stopped():
        report.cancelled = True
        return
    with sounds.write():
        sounds.remove(row.take_id for row in removed)
        for root in roots:
            sounds.folder_scanned(root, now)
    report.removed = len(removed)
    tell("writing", total, total, force=True)
