"""Keeping takes' audio: a generated take, the user's own audio, and a regeneration's audio in
place of a take's old file.

Crash safety: a take's audio is written under a temporary name, synced and renamed into audio/
while the writer holds the database's write lock (placement.py), and only then is its row
inserted and committed. A writer killed at any moment therefore leaves either a complete take,
or at most a complete file with no row (which the next open adopts from its embedded note) and
a temporary file (which the next open removes): never a row pointing at a half-written file.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engines.audio_io import result_pcm16
from engines.error_sentences import shown
from engines.provenance import library_adapter_files
from engines.store import wavmeta
from engines.store.database import LibraryDatabase
from engines.store.embeddings import (
    Embedded,
    TakeEmbeddings,
    audio_embedding,
    result_embedding,
)
from engines.store.files import as_stereo, content_sha256, sha256_file
from engines.store.folders import LibraryFolders
from engines.store.journal import EditJournal
from engines.store.lookup import TakeLookup
from engines.store.placement import audio_file_name, place_audio
from engines.store.records import IMPORTED, MAX_TAKE_ID, LibraryError, TakeRecord, take_id_of
from engines.store.rows import (
    created_now,
    flag_codes,
    imported_row,
    note_for_regenerated,
    note_for_row,
    result_row,
    result_row_extras,
)
from engines.text import storable

if TYPE_CHECKING:
    from engines.catalog import EngineFiles
    from engines.generation_result import GenerationResult

log = logging.getLogger(__name__)


class TakeKeeper:
    """Writing takes' audio files and the rows that go with them, each in one write
    transaction with its edit-journal line and its sound embedding."""

    def __init__(self, db: LibraryDatabase, journal: EditJournal, folders: LibraryFolders,
                 lookup: TakeLookup, embeddings: TakeEmbeddings) -> None:
        self._db = db
        self._journal = journal
        self._folders = folders
        self._lookup = lookup
        self._embeddings = embeddings

    def add(self, result: GenerationResult, *, parent_id: int | None = None, name: str = "",
            init_source: str | None = None, labels: object = None,
            variation: int | None = None, variations: int | None = None) -> TakeRecord:
        """Keep a finished take: its audio in audio/, its row with every setting, the UCS
        labels it was given (engines.delivery.delivery_take.Labels or a mapping; see
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
        engine_files += library_adapter_files(result.request)  # the adapters it was made with
        row = result_row(result, pcm, engine_files, created=created_now(),
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
        same = self._db.row("SELECT id FROM takes WHERE content_sha256 = ? AND mode = ? AND "
                            "deleted = 0 ORDER BY id LIMIT 1", (digest, IMPORTED))
        if same is not None:
            return self._lookup.get(same[0])
        row = imported_row(audio, digest, source, name, created=created_now(),
                           parent_id=_parent(parent_id))
        return self._add_row(row, audio, [], wavmeta.imported_encoding(audio),
                             audio_embedding(audio, latents, space))

    def _add_row(self, row: dict, audio: np.ndarray, fresh_hashes: list[tuple],
                 encoding: wavmeta.TakeEncoding, embedded: Embedded) -> TakeRecord:
        with self._db.write() as undo:
            conn = self._db.conn
            take_id = self._db.next_id()
            parent_id = row.get("parent_id")
            if parent_id is not None and conn.execute(
                    "SELECT 1 FROM takes WHERE id = ?", (parent_id,)).fetchone() is None:
                raise LibraryError(f"There is no take #{parent_id} in the library to be this "
                                   "take's parent; pass an existing id or none.")
            file_name = audio_file_name(take_id, row["name"] or row["prompt"], encoding.suffix)
            place_audio(self._folders.audio_dir, file_name, audio, note_for_row(row, take_id),
                        wavmeta.title_for(row["name"], row["prompt"]), undo, encoding)
            self._db.insert_take({"id": take_id, **row, "audio_file": file_name})
            conn.executemany("INSERT OR REPLACE INTO file_hashes (path, size, mtime_ns, sha256) "
                             "VALUES (?, ?, ?, ?)", fresh_hashes)
            self._journal.snapshot(take_id, row["created"], row)
            self._embeddings.insert(take_id, embedded)
        self._embeddings.index_put(take_id, embedded)
        log.info("Library: kept take #%d (%s)", take_id, file_name)
        return self._lookup.get(take_id)

    def replace_audio(self, take_id: int, result: GenerationResult) -> TakeRecord:
        """Give a take (usually one whose file went missing) the audio of its regeneration: same
        row, new file; the run's backend, timings and engine files are updated."""
        record = self._lookup.get(take_id)
        if record.is_imported:
            raise LibraryError(f"Take #{take_id} is imported audio and cannot be regenerated; "
                               "import the file again instead.")
        if int(result.seed) != record.seed or result.request.model != record.model:
            raise LibraryError(f"That result (seed {result.seed}, {result.request.model}) is not "
                               f"a regeneration of take #{take_id} (seed {record.seed}, "
                               f"{record.model}); regenerate it from its own settings.")
        pcm = result_pcm16(result)
        engine_files, fresh_hashes = self._engine_entries(result.files, record.mode)
        engine_files += library_adapter_files(result.request)
        old_path = record.audio_path
        folder = self._folders.audio_folder(record.deleted)
        file_name = audio_file_name(take_id, record.name or record.prompt)
        tier = getattr(result.files, "codec_tier", "") or record.decoder_tier
        note = note_for_regenerated(record.id, record, result.backend, tier)
        timings = json.dumps({k: round(float(v), 3) for k, v in result.timings_ms.items()})
        warnings = json.dumps([str(w) for w in result.warnings])
        quality = json.dumps(flag_codes(getattr(result, "quality", None)))
        embedded = result_embedding(result, pcm)
        with self._db.write() as undo:
            place_audio(folder, file_name, pcm, note,
                        wavmeta.title_for(record.name, record.prompt), undo)
            self._db.conn.execute(
                "UPDATE takes SET audio_file = ?, samples = ?, sample_rate = ?, backend = ?, "
                "decoder_tier = ?, timings_ms = ?, engine_files = ?, content_sha256 = ?, "
                "warnings = ?, quality = ? WHERE id = ?",
                (file_name, int(pcm.shape[0]), int(result.sample_rate), result.backend, tier,
                 timings, json.dumps(engine_files), content_sha256(pcm), warnings, quality,
                 record.id))
            self._db.conn.executemany(
                "INSERT OR REPLACE INTO file_hashes (path, size, mtime_ns, sha256) "
                "VALUES (?, ?, ?, ?)", fresh_hashes)
            self._journal.append(record.id, record.created, {
                "backend": result.backend, "decoder_tier": tier, "timings_ms": timings,
                "engine_files": json.dumps(engine_files), "warnings": warnings,
                "quality": quality})
            self._embeddings.insert(record.id, embedded)
        self._embeddings.index_put(record.id, embedded)
        if old_path.parent == folder and old_path.name != file_name:
            try:  # a stale copy in our folder; files elsewhere stay
                old_path.unlink(missing_ok=True)
            except OSError:
                log.warning("Could not remove the old audio file %s", old_path, exc_info=True)
        return self._lookup.get(take_id)

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
            cached = self._db.row(
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
