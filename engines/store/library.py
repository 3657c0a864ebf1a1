"""The sound library: every take kept on disk and in SQLite with what made it.

Layout under the library folder (`engines.paths.library_dir()` unless told otherwise):
    library.sqlite3      one row per take (WAL mode, schema version in PRAGMA user_version)
    audio/               the takes, as WAV with a JSON note in RIFF INFO (see wavmeta)
    trash/               deleted takes' audio; `restore` moves it back

Crash safety: a take's audio is written under a temporary name, synced and renamed into audio/
while the writer holds the database's write lock, and only then is its row inserted and
committed. A writer killed at any moment therefore leaves either a complete take, or at most a
complete file with no row (which the next open adopts from its embedded note) and a temporary
file (which the next open removes): never a row pointing at a half-written file. Deletes move
the file inside the same locked transaction that flips the row's flag, and the next open puts
any file whose move was interrupted where its row says it belongs.

One sqlite3 connection per ClipLibrary, used from the thread that made it (the GUI thread, or
the CLI's main thread); transactions are short. Several processes may open the same library.

ClipLibrary opens the library and keeps new takes; the rest of it is split by job:
    database     opening, repairing and migrating the SQLite file; the write transaction
    rows         a take's row and the note embedded in its audio file
    placement    writing a take's audio file into place
    lookup       finding takes (TakeLookup)
    take_audio   loading a take's audio; regenerating it (TakeAudio)
    editing      rating, tags, notes and names; trash and restore (TakeEditing)
"""

from __future__ import annotations

import datetime as _dt
import logging
import os  # noqa: F401  (the crash tests patch os.replace through this module: L.os.replace)
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engines.store import database, repair, schema, wavmeta
from engines.store.editing import TakeEditing
from engines.store.export import export_name, export_to_folder, export_to_zip
from engines.store.files import as_stereo, content_sha256, copy_atomic, sha256_file
from engines.store.placement import audio_file_name, place_audio
from engines.store.records import IMPORTED, LibraryError, TakeRecord, normalize_tags
from engines.store.rows import imported_row, note_for_row, result_pcm16, result_row
from engines.store.schema import SCHEMA_VERSION
from engines.store.take_audio import TakeAudio

if TYPE_CHECKING:
    from engines.backends.base import GenerationResult

log = logging.getLogger(__name__)

__all__ = ["SCHEMA_VERSION", "ClipLibrary", "LibraryError", "TakeRecord", "copy_atomic",
           "normalize_tags", "sha256_file"]

DB_NAME = "library.sqlite3"
AUDIO_DIR = "audio"
TRASH_DIR = "trash"


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


class ClipLibrary(TakeAudio, TakeEditing):
    """The library in one folder. See the module docstring for the layout and guarantees."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.audio_dir = self.root / AUDIO_DIR
        self.trash_dir = self.root / TRASH_DIR
        self.db_path = self.root / DB_NAME
        self.notice: str | None = None  # one sentence for the user after a repair, else None
        self.migrated_from: int | None = None
        try:
            for folder in (self.root, self.audio_dir, self.trash_dir):
                folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise LibraryError(f"The library folder {self.root} cannot be created "
                               f"({err.strerror or err}); check the disk and its "
                               "permissions.") from err
        self._conn, self.notice = database.open_database(self.db_path, self.root)
        try:
            self._use_fts, self.migrated_from = database.prepare(self._conn, self.db_path,
                                                                 self.root)
            recovered = self._reconcile()
        except BaseException:
            self._conn.close()
            raise
        if self.notice is not None and recovered:
            self.notice = (self.notice.rstrip(".") + f"; {recovered} take"
                           f"{'s were' if recovered != 1 else ' was'} recovered from the "
                           "notes in their audio files.")

    # ---- opening ---------------------------------------------------------------------------

    def _reconcile(self) -> int:
        """Tidy up after any crash (see repair.py); returns how many takes were adopted back."""
        adopted = 0
        with self._write() as _:
            listing = repair.list_folders((self.audio_dir, self.trash_dir))
            rows = self._conn.execute("SELECT id, audio_file, deleted FROM takes").fetchall()
            claimed = repair.settle_files(rows, listing, self.audio_dir, self.trash_dir)
            for path in repair.unclaimed(listing, claimed):
                row = repair.row_from_file(path, deleted=path.parent == self.trash_dir,
                                           now=_now())
                if row is None or self._conn.execute(
                        "SELECT 1 FROM takes WHERE id = ?", (row["id"],)).fetchone() is not None:
                    repair.set_aside(path, self.trash_dir)
                    continue
                self._insert(row)
                adopted += 1
                log.warning("Take #%d had no library entry; it was rebuilt from %s", row["id"],
                            path)
        return adopted

    # ---- transactions ----------------------------------------------------------------------

    def _insert(self, row: dict) -> None:
        names = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        self._conn.execute(f"INSERT INTO takes ({names}) VALUES ({marks})", tuple(row.values()))
        if self._use_fts:
            self._conn.execute(f"INSERT INTO {schema.FTS_TABLE} (rowid, search_text) "
                               "VALUES (?, ?)", (row["id"], row["search_text"]))

    def _next_id(self) -> int:
        seq = self._conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'takes'").fetchone()
        top = self._conn.execute("SELECT max(id) FROM takes").fetchone()[0]
        return max(seq[0] if seq else 0, top or 0) + 1

    # ---- adding ----------------------------------------------------------------------------

    def add(self, result: GenerationResult, *, parent_id: int | None = None, name: str = "",
            init_source: str | None = None) -> TakeRecord:
        """Keep a finished take: its audio in audio/, its row with every setting."""
        row, pcm, fresh_hashes = self._row_for_result(result, parent_id, name, init_source)
        return self._add_row(row, pcm, fresh_hashes)

    def _row_for_result(self, result: GenerationResult, parent_id: int | None, name: str,
                        init_source: str | None) -> tuple[dict, np.ndarray, list[tuple]]:
        """(row without id and audio file, int16 samples, new hash-cache rows) for a result."""
        pcm = result_pcm16(result)
        engine_files, fresh_hashes = self._engine_entries(result.files, result.request.mode)
        row = result_row(result, pcm, engine_files, created=_now(), parent_id=parent_id,
                         name=name, init_source=init_source)
        return row, pcm, fresh_hashes

    def add_imported(self, pcm: np.ndarray, source: str, name: str = "", *,
                     parent_id: int | None = None) -> TakeRecord:
        """Keep the user's own init audio (int16 as 16-bit, float exactly as 32-bit float), so a
        take made from it can be regenerated. The same samples imported twice are one take.
        `parent_id`: the take the file was exported from, when it is one (see `identify`)."""
        audio = as_stereo(pcm, f"The audio from '{source}'")
        digest = content_sha256(audio)
        same = self._conn.execute(
            "SELECT id FROM takes WHERE content_sha256 = ? AND mode = ? AND deleted = 0 "
            "ORDER BY id LIMIT 1", (digest, IMPORTED)).fetchone()
        if same is not None:
            return self.get(same[0])
        row = imported_row(audio, digest, source, name, created=_now(), parent_id=parent_id)
        return self._add_row(row, audio, [])

    def _add_row(self, row: dict, audio: np.ndarray, fresh_hashes: list[tuple]) -> TakeRecord:
        with self._write() as undo:
            take_id = self._next_id()
            parent_id = row.get("parent_id")
            if parent_id is not None and self._conn.execute(
                    "SELECT 1 FROM takes WHERE id = ?", (parent_id,)).fetchone() is None:
                raise LibraryError(f"There is no take #{parent_id} in the library to be this "
                                   "take's parent; pass an existing id or none.")
            file_name = audio_file_name(take_id, row["name"] or row["prompt"])
            place_audio(self.audio_dir, file_name, audio, note_for_row(row, take_id),
                        wavmeta.title_for(row["name"], row["prompt"]), undo)
            self._insert({"id": take_id, **row, "audio_file": file_name})
            self._conn.executemany(
                "INSERT OR REPLACE INTO file_hashes (path, size, mtime_ns, sha256) "
                "VALUES (?, ?, ?, ?)", fresh_hashes)
        log.info("Library: kept take #%d (%s)", take_id, file_name)
        return self.get(take_id)

    def _engine_entries(self, files: Any, mode: str) -> tuple[list[dict], list[tuple]]:
        """The engine files with their hashes, hashing only files the cache has not seen at this
        size and modification time. Returns (entries, new cache rows)."""
        if files is None:
            return [], []
        roles = [("text_encoder", files.text_encoder), ("tokenizer", files.tokenizer),
                 ("dit", files.dit), ("decoder", files.decoder)]
        if mode != "t2a" and files.encoder is not None:
            roles.append(("encoder", files.encoder))
        entries: list[dict] = []
        fresh: list[tuple] = []
        for role, raw in roles:
            path = Path(raw).absolute()
            try:
                stat = path.stat()
            except OSError:
                entries.append({"role": role, "path": str(path), "size": None, "sha256": None})
                continue
            cached = self._conn.execute(
                "SELECT sha256 FROM file_hashes WHERE path = ? AND size = ? AND mtime_ns = ?",
                (str(path), stat.st_size, stat.st_mtime_ns)).fetchone()
            if cached is not None:
                digest = cached[0]
            else:
                try:
                    digest = sha256_file(path)
                except OSError:
                    digest = None
                else:
                    fresh.append((str(path), stat.st_size, stat.st_mtime_ns, digest))
            entries.append({"role": role, "path": str(path), "size": stat.st_size,
                            "sha256": digest})
        return entries, fresh

    # ---- export ----------------------------------------------------------------------------

    def _records(self, ids: Iterable[int]) -> list[TakeRecord]:
        return [self.get(i) for i in dict.fromkeys(int(i) for i in ids)]

    def export(self, ids: Iterable[int], folder: Path) -> list[Path]:
        """Copy takes (with their embedded notes) and a JSON sidecar each into `folder`;
        returns the audio paths (each sidecar is the same name ending in .json)."""
        return export_to_folder(self._records(ids), folder)

    def export_zip(self, ids: Iterable[int], zip_path: Path) -> Path:
        """One zip with the takes and their sidecars, written atomically."""
        return export_to_zip(self._records(ids), zip_path)

    export_name = staticmethod(export_name)

    # ---- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        conn, self._conn = self._conn, None  # type: ignore[assignment]
        if conn is None:
            return
        try:
            conn.execute("PRAGMA optimize")
        except sqlite3.Error:
            pass
        conn.close()

    def __enter__(self) -> ClipLibrary:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
