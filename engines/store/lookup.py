"""Finding takes in the library: by id, by search, by lineage, or from a copy of their audio."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import soundfile as sf

from engines.store import wavmeta
from engines.store.database import LibraryDatabase
from engines.store.families import variation_number, variation_numbers
from engines.store.files import content_sha256
from engines.store.folders import LibraryFolders
from engines.store.query import SORT_KEYS, clamped_count, where_clause
from engines.store.records import (
    MAX_TAKE_ID,
    LibraryError,
    TakeRecord,
    record_from_row,
    take_id_of,
)


class TakeLookup:
    """Reading takes' rows: every part that needs a take by id asks this one."""

    def __init__(self, db: LibraryDatabase, folders: LibraryFolders) -> None:
        self._db = db
        self._folders = folders

    def _record(self, row: sqlite3.Row) -> TakeRecord:
        return record_from_row(row, self._folders.audio_dir, self._folders.trash_dir)

    def get(self, take_id: int) -> TakeRecord:
        key = take_id_of(take_id)
        row = (self._db.row("SELECT * FROM takes WHERE id = ?", (key,))
               if 1 <= key <= MAX_TAKE_ID else None)  # beyond: SQLite would overflow
        if row is None:
            raise LibraryError(f"There is no take #{key} in the library; list the library "
                               "to see which ids exist.")
        return self._record(row)

    def records(self, ids: Iterable[int]) -> list[TakeRecord]:
        """The takes of `ids` (one id alone too), each once, in the order given."""
        if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
            ids = [ids]  # type: ignore[list-item]  # one id given alone
        return [self.get(i) for i in dict.fromkeys(take_id_of(i) for i in ids)]

    def variation_number(self, take_id: int) -> tuple[int, int]:
        """(n, of): the take's number in its set of variations, and the set's size (see
        families: what was kept when it was made, else what its family tells)."""
        return variation_number(self.get(take_id), self._db.rows)

    def variation_numbers(self, records: Iterable[TakeRecord]) -> dict[int, tuple[int, int]]:
        """variation_number of each record, by take id."""
        return variation_numbers(records, self._db.rows)

    def search(self, text: str = "", *, model: str | None = None,
               favourite: bool | None = None, min_rating: int = 0, since: Any = None,
               until: Any = None, sort: str = "created", descending: bool = True,
               limit: int | None = 200, offset: int = 0, include_deleted: bool = False,
               quality: str | None = None, finished: bool | None = None,
               tier: str | None = None, source: str | None = None,
               adapter: str | None = None) -> list[TakeRecord]:
        """Takes whose prompt, name, tags, notes or init file name contain every word of `text`
        (any case), filtered and sorted. `since` is inclusive; `until` too, and a bare date as
        `until` includes that whole day (times without a zone are UTC). `quality`: "flagged"
        (any quality flag), "clean" (none) or one flag code; `finished`: with or without a
        stored finishing chain; `tier`: only takes decoded with that codec tier."""
        if sort not in SORT_KEYS:
            raise LibraryError(f"Cannot sort the library by '{sort}'; choose one of "
                               f"{', '.join(SORT_KEYS)}.")
        where, params = where_clause(text, use_fts=self._db.use_fts, model=model,
                                     favourite=favourite, min_rating=min_rating, since=since,
                                     until=until, include_deleted=include_deleted,
                                     quality=quality, finished=finished, tier=tier,
                                     source=source, adapter=adapter)
        direction = "DESC" if descending else "ASC"
        sql = (f"SELECT * FROM takes t{where} ORDER BY {SORT_KEYS[sort]} {direction}, "
               f"t.id {direction}")
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params += [_clamped(limit), _clamped(offset)]
        return [self._record(row) for row in self._db.rows(sql, params)]

    def count(self, text: str = "", *, model: str | None = None, favourite: bool | None = None,
              min_rating: int = 0, since: Any = None, until: Any = None,
              include_deleted: bool = False, quality: str | None = None,
              finished: bool | None = None, tier: str | None = None,
              source: str | None = None, adapter: str | None = None,
              **_ignored: Any) -> int:
        """How many takes `search` would find without a limit (sort arguments are ignored)."""
        where, params = where_clause(text, use_fts=self._db.use_fts, model=model,
                                     favourite=favourite, min_rating=min_rating, since=since,
                                     until=until, include_deleted=include_deleted,
                                     quality=quality, finished=finished, tier=tier,
                                     source=source, adapter=adapter)
        row = self._db.row(f"SELECT count(*) FROM takes t{where}", params)
        return row[0] if row is not None else 0

    def models(self) -> list[str]:
        """The model keys of the takes kept, for a filter list."""
        rows = self._db.rows("SELECT DISTINCT model FROM takes WHERE deleted = 0 ORDER BY model")
        return [row[0] for row in rows]

    def tiers(self) -> list[str]:
        """The codec tiers of the takes kept (imported audio has none), for a filter list."""
        rows = self._db.rows("SELECT DISTINCT decoder_tier FROM takes WHERE deleted = 0 AND "
                          "decoder_tier != '' ORDER BY decoder_tier")
        return [row[0] for row in rows]

    def lineage(self, take_id: int) -> list[TakeRecord]:
        """The take, its parent, the parent's parent, ... (the init audio each was made from)."""
        chain: list[TakeRecord] = []
        seen: set[int] = set()
        next_id: int | None = take_id
        while next_id is not None and next_id not in seen:
            seen.add(next_id)
            try:
                record = self.get(next_id)
            except LibraryError:
                if not chain:
                    raise
                break
            chain.append(record)
            next_id = record.parent_id
        return chain

    def identify(self, path: str | os.PathLike[str]) -> TakeRecord | None:
        """The take an audio file found anywhere is a copy of: by its samples, else by the note
        embedded in it (when that note agrees with the take it names). None if neither.

        The samples are only read when some take has as many frames as the file, so pointing
        this at an hour-long recording costs a header read, not the recording."""
        file = Path(path)
        if not os.path.isfile(file):  # a pipe would block the open; a folder is no take
            return None
        try:
            with sf.SoundFile(wavmeta.sf_name(file)) as handle:
                same_length = handle.subtype in wavmeta.STORED_SUBTYPES and self._db.row(
                    "SELECT 1 FROM takes WHERE samples = ? LIMIT 1", (int(handle.frames),))
                audio = handle.read(dtype=wavmeta.stored_dtype(handle.subtype),
                                    always_2d=True) if same_length else None
        except (sf.SoundFileError, RuntimeError, ValueError, OSError, MemoryError):
            return None
        if audio is not None:
            row = self._db.row("SELECT * FROM takes WHERE content_sha256 = ? "
                            "ORDER BY deleted, id LIMIT 1", (content_sha256(audio),))
            if row is not None:
                return self._record(row)
        note = wavmeta.read_metadata(file)
        if note is None or type(note.get("library_id")) is not int:
            return None
        try:
            record = self.get(note["library_id"])
        except LibraryError:
            return None
        same = record.seed == note.get("seed") and record.prompt.startswith(
            str(note.get("prompt", "")))
        return record if same else None


def _clamped(value: object) -> int:
    """A LIMIT or OFFSET SQLite accepts: negative is 0, huge is SQLite's largest."""
    return clamped_count(value, MAX_TAKE_ID, "a limit or offset")
