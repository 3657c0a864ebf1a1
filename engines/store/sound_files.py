"""Sound files referenced in place (schema 5): the rows engines.sound_import writes and reads.

A referenced sound is a row of the takes table like any other (so search, filters, ratings,
trash and sound search treat both kinds alike) whose `audio_file` is the absolute path of the
user's own file and whose `source_root` is the folder it was imported from; its sound_files row
keeps what a rescan compares (size, mtime_ns, fingerprint) and what reading the file told
(header, metadata, the words its search text adds, its peaks). The user's file is never opened
for writing by anything here.

A sound_files row whose take is gone (emptied out of the trash) is kept on purpose: it marks a
file the user removed from the library, which a rescan must not bring back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

import numpy as np

from engines.store import schema
from engines.store.database import LibraryDatabase
from engines.store.schema import EMBEDDINGS_TABLE

PEAK_COLUMNS = 256  # min/max pairs kept per sound: a thumbnail of up to this many pixels


@dataclass(frozen=True)
class SoundFolder:
    """A folder the user imported: its root as stored, when, when last scanned, its sounds."""

    root: str
    added: str
    scanned: str | None
    sounds: int


@dataclass
class SoundFile:
    """What the library keeps about one referenced file (the sound_files row)."""

    take_id: int
    path: str
    root: str
    size: int
    mtime_ns: int
    fingerprint: str
    format: str = ""
    subtype: str = ""
    channels: int = 0
    sample_rate: int = 0
    frames: int = 0
    metadata: dict = field(default_factory=dict)


@dataclass(frozen=True)
class KnownFile:
    """A rescan's view of a sound already in the library."""

    take_id: int
    path: str
    size: int
    mtime_ns: int
    fingerprint: str
    forgotten: bool  # its take was emptied out of the trash: never imported again


_FILE_COLUMNS = ("path", "root", "size", "mtime_ns", "fingerprint", "format", "subtype",
                 "channels", "sample_rate", "frames", "metadata", "words")


class SoundFiles:
    """Reads and writes of the sound tables; every write runs inside the caller's
    `db.write()` transaction (engines.sound_import batches them)."""

    def __init__(self, db: LibraryDatabase) -> None:
        self._db = db

    def write(self) -> AbstractContextManager[list[Callable[[], None]]]:
        """The library's write transaction (LibraryDatabase.write), for a batch of changes."""
        return self._db.write()

    def next_id(self) -> int:
        """The id the next take gets (inside a write transaction)."""
        return self._db.next_id()

    @property
    def read_only(self) -> bool:
        return self._db.read_only

    def _has_tables(self) -> bool:
        return self._db.conn.execute("SELECT count(*) FROM sqlite_master WHERE name = "
                                     "'sound_files'").fetchone()[0] > 0

    # ---- reading ---------------------------------------------------------------------------

    def sound_folders(self) -> list[SoundFolder]:
        if not self._has_tables():  # a read-only library of an older schema
            return []
        rows = self._db.rows("SELECT f.root, f.added, f.scanned, (SELECT count(*) FROM takes t "
                             "WHERE t.source_root = f.root AND t.deleted = 0) FROM "
                             "sound_folders f ORDER BY f.root")
        return [SoundFolder(row[0], row[1], row[2], row[3]) for row in rows]

    def sound_file(self, take_id: int) -> SoundFile | None:
        if not self._has_tables():
            return None
        row = self._db.row("SELECT * FROM sound_files WHERE take_id = ?", (int(take_id),))
        if row is None:
            return None
        try:
            metadata = json.loads(row["metadata"])
        except ValueError:
            metadata = {}
        return SoundFile(take_id=row["take_id"], path=row["path"], root=row["root"],
                         size=row["size"], mtime_ns=row["mtime_ns"],
                         fingerprint=row["fingerprint"], format=row["format"],
                         subtype=row["subtype"], channels=row["channels"],
                         sample_rate=row["sample_rate"], frames=row["frames"],
                         metadata=metadata if isinstance(metadata, dict) else {})

    def sound_peaks(self, take_id: int) -> np.ndarray | None:
        """float32 (2, PEAK_COLUMNS) min/max in -1..1, or None until they were made."""
        if not self._has_tables():
            return None
        row = self._db.row("SELECT peaks FROM sound_files WHERE take_id = ?", (int(take_id),))
        if row is None or row[0] is None or len(row[0]) != 2 * PEAK_COLUMNS * 2:
            return None
        return np.frombuffer(bytes(row[0]), dtype="<f2").astype(np.float32).reshape(2, -1)

    def known(self, root: str) -> dict[str, KnownFile]:
        """Every sound of the folder `root`, by path."""
        rows = self._db.rows("SELECT s.take_id, s.path, s.size, s.mtime_ns, s.fingerprint, "
                             "t.id IS NULL FROM sound_files s LEFT JOIN takes t ON "
                             "t.id = s.take_id WHERE s.root = ?", (root,))
        return {row[1]: KnownFile(row[0], row[1], row[2], row[3], row[4], bool(row[5]))
                for row in rows}

    def needing_extras(self, embedding_version: int, limit: int) -> list[tuple[int, str, bool,
                                                                           bool]]:
        """(take id, path, needs peaks, needs an embedding) of referenced sounds in the library
        (not in the trash) lacking either, oldest first, at most `limit`."""
        return [(row[0], row[1], bool(row[2]), bool(row[3])) for row in self._db.rows(
            "SELECT s.take_id, s.path, s.peaks IS NULL, e.take_id IS NULL OR e.version != ? "
            f"FROM sound_files s JOIN takes t ON t.id = s.take_id LEFT JOIN {EMBEDDINGS_TABLE} "
            "e ON e.take_id = s.take_id WHERE t.deleted = 0 AND (s.peaks IS NULL OR "
            "e.take_id IS NULL OR e.version != ?) ORDER BY s.take_id LIMIT ?",
            (embedding_version, embedding_version, int(limit)))]

    def words(self, take_id: int) -> str:
        """The words a referenced sound's search text adds (labels, keywords, its path in its
        folder), '' for any other take."""
        if not self._has_tables():
            return ""
        row = self._db.row("SELECT words FROM sound_files WHERE take_id = ?", (int(take_id),))
        return row[0] if row is not None else ""

    # ---- writing (inside the caller's transaction) -----------------------------------------

    def add_folder(self, root: str, now: str) -> None:
        self._db.conn.execute("INSERT OR IGNORE INTO sound_folders (root, added) VALUES (?, ?)",
                              (root, now))

    def folder_scanned(self, root: str, now: str) -> None:
        self._db.conn.execute("UPDATE sound_folders SET scanned = ? WHERE root = ?", (now, root))

    def add_sound(self, take_row: dict, file_row: dict) -> None:
        """A new referenced sound: its takes row (with id) and its sound_files row."""
        self._db.insert_take(take_row)
        self._put_file(take_row["id"], file_row)

    def replace(self, take_id: int, take_changes: dict, file_row: dict, *,
                same_audio: bool) -> None:
        """A sound read again (changed, or moved: `same_audio`): the takes columns the file
        decides, and its file row. What the user gave it (rating, tags, notes) stays; the
        peaks and embedding of audio that changed are dropped, to be made again."""
        assignments = ", ".join(f"{key} = ?" for key in take_changes)
        conn = self._db.conn
        conn.execute(f"UPDATE takes SET {assignments} WHERE id = ?",
                     (*take_changes.values(), take_id))
        if "search_text" in take_changes and self._db.use_fts:
            conn.execute(f"UPDATE {schema.FTS_TABLE} SET search_text = ? WHERE rowid = ?",
                         (take_changes["search_text"], take_id))
        assignments = ", ".join(f"{key} = ?" for key in _FILE_COLUMNS)
        conn.execute(f"UPDATE sound_files SET {assignments} WHERE take_id = ?",
                     (*(file_row.get(key, "") for key in _FILE_COLUMNS), take_id))
        if not same_audio:
            conn.execute("UPDATE sound_files SET peaks = NULL WHERE take_id = ?", (take_id,))
            conn.execute(f"DELETE FROM {EMBEDDINGS_TABLE} WHERE take_id = ?", (take_id,))

    def remove(self, take_ids: Iterable[int]) -> None:
        """Sounds whose files were deleted: their rows, text index entries and embeddings."""
        gone = [(int(i),) for i in take_ids]
        conn = self._db.conn
        conn.executemany("DELETE FROM takes WHERE id = ?", gone)
        if self._db.use_fts:
            conn.executemany(f"DELETE FROM {schema.FTS_TABLE} WHERE rowid = ?", gone)
        conn.executemany(f"DELETE FROM {EMBEDDINGS_TABLE} WHERE take_id = ?", gone)
        conn.executemany("DELETE FROM sound_files WHERE take_id = ?", gone)

    def forget_files(self, take_ids: Iterable[int]) -> None:
        """sound_files rows of forgotten sounds whose files are gone too."""
        self._db.conn.executemany("DELETE FROM sound_files WHERE take_id = ?",
                                  [(int(i),) for i in take_ids])

    def set_peaks(self, items: Iterable[tuple[int, np.ndarray]]) -> None:
        self._db.conn.executemany("UPDATE sound_files SET peaks = ? WHERE take_id = ?", [
            (np.asarray(peaks, dtype="<f2").tobytes(), int(take_id)) for take_id, peaks in items])

    def _put_file(self, take_id: int, file_row: dict) -> None:
        values = [file_row.get(key, "") for key in _FILE_COLUMNS]
        names = ", ".join(("take_id", *_FILE_COLUMNS))
        marks = ", ".join("?" for _ in range(len(_FILE_COLUMNS) + 1))
        self._db.conn.execute(f"INSERT INTO sound_files ({names}) VALUES ({marks})",
                              (take_id, *values))
