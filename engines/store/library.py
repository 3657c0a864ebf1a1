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
    editing      rating, tags, notes, names and finishing chains; trash and restore
                 (TakeEditing)
    quality_check  quality flags for takes kept without them (QualityCheck)
    embeddings   each take's sound embedding, for search by sound (TakeEmbeddings)
    export, export_plan  takes out of the library: copies or finished files, named
"""

from __future__ import annotations

import logging
import os  # noqa: F401  (the crash tests patch os.replace through this module: L.os.replace)
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engines.delivery.guard import Protected
from engines.failures import shown
from engines.store import opening, wavmeta
from engines.store.editing import TakeEditing
from engines.store.embeddings import (
    Embedded,
    TakeEmbeddings,
    audio_embedding,
    result_embedding,
)
from engines.store.export import ExportItem, export_to_folder, export_to_zip
from engines.store.export_plan import ExportOptions, TakeMaker, export_items
from engines.store.families import variation_number, variation_numbers
from engines.store.files import as_stereo, content_sha256, copy_atomic, sha256_file
from engines.store.opening import AUDIO_DIR, DB_NAME, TRASH_DIR, LibraryOpening
from engines.store.placement import audio_file_name, place_audio
from engines.store.records import (
    IMPORTED,
    MAX_TAKE_ID,
    LibraryError,
    TakeRecord,
    normalize_tags,
    take_id_of,
)
from engines.store.rows import (
    imported_row,
    note_for_row,
    result_pcm16,
    result_row,
    result_row_extras,
)
from engines.store.schema import SCHEMA_VERSION
from engines.store.take_audio import TakeAudio
from engines.text import storable

if TYPE_CHECKING:
    from engines.catalog import EngineFiles
    from engines.generation_result import GenerationResult

log = logging.getLogger(__name__)

__all__ = ["AUDIO_DIR", "DB_NAME", "SCHEMA_VERSION", "TRASH_DIR", "ClipLibrary", "ExportOptions",
           "LibraryError", "TakeRecord", "copy_atomic", "normalize_tags", "sha256_file"]


def _now() -> str:
    return opening._now()


class ClipLibrary(LibraryOpening, TakeAudio, TakeEditing, TakeEmbeddings):
    """The library in one folder. See the module docstring for the layout and guarantees.

    `notice`: one sentence for the user after a repair, or while the library is read-only,
    else None. `read_only`: the folder cannot be written, so takes can be found, played and
    exported, but every change is refused with a LibraryError that says so."""

    def __init__(self, root: Path, *, for_reading: bool = False) -> None:
        """`for_reading`: only reads follow, so a writer holding the lock is not waited for
        (see LibraryOpening._open)."""
        self._open(root, for_reading)

    def _next_id(self) -> int:
        seq = self._conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'takes'").fetchone()
        top = self._conn.execute("SELECT max(id) FROM takes").fetchone()[0]
        return max(seq[0] if seq else 0, top or 0) + 1

    # ---- adding ----------------------------------------------------------------------------

    def add(self, result: GenerationResult, *, parent_id: int | None = None, name: str = "",
            init_source: str | None = None, labels: object = None,
            variation: int | None = None, variations: int | None = None) -> TakeRecord:
        """Keep a finished take: its audio in audio/, its row with every setting, the UCS
        labels it was given (engines.delivery.take.Labels or a mapping; see
        records.label_columns) and its place in the set of variations it was made in."""
        row, pcm, fresh_hashes = self._row_for_result(result, parent_id, name, init_source)
        row.update(result_row_extras(labels, variation, variations))
        return self._add_row(row, pcm, fresh_hashes, wavmeta.GENERATED,
                             result_embedding(result, pcm))

    def _row_for_result(self, result: GenerationResult, parent_id: int | None, name: str,
                        init_source: str | None) -> tuple[dict, np.ndarray, list[tuple]]:
        """(row without id and audio file, int16 samples, new hash-cache rows) for a result."""
        pcm = result_pcm16(result)
        engine_files, fresh_hashes = self._engine_entries(result.files, result.request.mode)
        row = result_row(result, pcm, engine_files, created=_now(),
                         parent_id=_parent(parent_id), name=name, init_source=init_source)
        return row, pcm, fresh_hashes

    def add_imported(self, pcm: np.ndarray, source: str, name: str = "", *,
                     parent_id: int | None = None, latents: np.ndarray | None = None,
                     space: str = "") -> TakeRecord:
        """Keep the user's own init audio exactly (int16 as 16-bit FLAC; float as 24-bit FLAC
        when that holds it bit for bit, else as 32-bit float WAV: see wavmeta), so a take made
        from it can be regenerated. The same samples imported twice are one take.
        `parent_id`: the take the file was exported from, when it is one (see `identify`).
        `latents`, `space`: the audio encoded by the codec of that latent space, when the caller
        has them, for its sound embedding (else it is embedded from its audio alone)."""
        audio = as_stereo(pcm, f"The audio from {shown(source)}")
        digest = content_sha256(audio)
        same = self._row("SELECT id FROM takes WHERE content_sha256 = ? AND mode = ? AND "
                         "deleted = 0 ORDER BY id LIMIT 1", (digest, IMPORTED))
        if same is not None:
            return self.get(same[0])
        row = imported_row(audio, digest, source, name, created=_now(),
                           parent_id=_parent(parent_id))
        return self._add_row(row, audio, [], wavmeta.imported_encoding(audio),
                             audio_embedding(audio, latents, space))

    def _add_row(self, row: dict, audio: np.ndarray, fresh_hashes: list[tuple],
                 encoding: wavmeta.TakeEncoding, embedded: Embedded) -> TakeRecord:
        with self._write() as undo:
            take_id = self._next_id()
            parent_id = row.get("parent_id")
            if parent_id is not None and self._conn.execute(
                    "SELECT 1 FROM takes WHERE id = ?", (parent_id,)).fetchone() is None:
                raise LibraryError(f"There is no take #{parent_id} in the library to be this "
                                   "take's parent; pass an existing id or none.")
            file_name = audio_file_name(take_id, row["name"] or row["prompt"], encoding.suffix)
            place_audio(self.audio_dir, file_name, audio, note_for_row(row, take_id),
                        wavmeta.title_for(row["name"], row["prompt"]), undo, encoding)
            self._insert({"id": take_id, **row, "audio_file": file_name})
            self._conn.executemany(
                "INSERT OR REPLACE INTO file_hashes (path, size, mtime_ns, sha256) "
                "VALUES (?, ?, ?, ?)", fresh_hashes)
            self._journal.snapshot(take_id, row["created"], row)
            self._insert_embedding(take_id, embedded)
        self._index_put(take_id, embedded)
        log.info("Library: kept take #%d (%s)", take_id, file_name)
        return self.get(take_id)

    def _engine_entries(self, files: EngineFiles | None,
                        mode: str) -> tuple[list[dict], list[tuple]]:
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
            key = storable(str(path))  # what SQLite can hold of a name that is not UTF-8
            try:
                stat = path.stat()
            except OSError:
                entries.append({"role": role, "path": key, "size": None, "sha256": None})
                continue
            cached = self._row(
                "SELECT sha256 FROM file_hashes WHERE path = ? AND size = ? AND mtime_ns = ?",
                (key, stat.st_size, stat.st_mtime_ns))
            if cached is not None:
                digest = cached[0]
            else:
                try:
                    digest = sha256_file(path)
                except OSError:
                    digest = None
                else:
                    fresh.append((key, stat.st_size, stat.st_mtime_ns, digest))
            entries.append({"role": role, "path": key, "size": stat.st_size,
                            "sha256": digest})
        return entries, fresh

    def variation_number(self, take_id: int) -> tuple[int, int]:
        """(n, of): the take's number in its set of variations, and the set's size (see
        families: what was kept when it was made, else what its family tells)."""
        return variation_number(self.get(take_id), self._rows)

    # ---- export ----------------------------------------------------------------------------

    def _records(self, ids: Iterable[int]) -> list[TakeRecord]:
        if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
            ids = [ids]  # type: ignore[list-item]  # one id given alone
        return [self.get(i) for i in dict.fromkeys(take_id_of(i) for i in ids)]

    def export(self, ids: Iterable[int], folder: Path,
               options: ExportOptions | None = None) -> list[Path]:
        """Write takes and a JSON sidecar each into `folder` through the delivery layer: as
        made, or finished as `options` ask (see export_plan). Returns the audio paths (each
        sidecar is the same name ending in .json). A name already in use gets a number (_2,
        ...) unless options.overwrite. Nothing is written inside the library's own folders."""
        options = options or ExportOptions()
        items, take_of = self._export_plan(ids, options)
        return export_to_folder(items, folder, take_of, options.written,
                                self._protected(options))

    def export_zip(self, ids: Iterable[int], zip_path: Path,
                   options: ExportOptions | None = None) -> Path:
        """One zip with the takes (or finished files) and their sidecars, written atomically."""
        options = options or ExportOptions()
        items, take_of = self._export_plan(ids, options)
        return export_to_zip(items, zip_path, take_of, options.written,
                             self._protected(options))

    def _export_plan(self, ids: Iterable[int], options: ExportOptions
                     ) -> tuple[list[ExportItem], TakeMaker]:
        records = self._records(ids)
        items, chains = export_items(records, options, variation_numbers(records, self._rows))
        return items, TakeMaker(options, chains, self.verified_audio)

    def _protected(self, options: ExportOptions) -> Protected:
        protected = options.protected or Protected()
        return Protected(dict(protected.inputs), self.root)

    # ---- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        conn, self._conn = self._conn, None  # type: ignore[assignment]
        if conn is None:
            return
        try:
            if not self.read_only and not self.reading_beside_writer:
                # Best effort: statistics never make anyone wait for another writer.
                conn.execute("PRAGMA busy_timeout = 0")
                conn.execute("PRAGMA optimize")
        except sqlite3.Error:
            pass
        conn.close()

    def __enter__(self) -> ClipLibrary:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _parent(parent_id: object) -> int | None:
    """A parent take id as the row keeps it; one no take can have is refused now, as a
    sentence, rather than by SQLite later as an OverflowError."""
    if parent_id is None:
        return None
    take_id = take_id_of(parent_id)
    if not 1 <= take_id <= MAX_TAKE_ID:
        raise LibraryError(f"There is no take #{take_id} in the library to be this take's "
                           "parent; pass an existing id or none.")
    return take_id
