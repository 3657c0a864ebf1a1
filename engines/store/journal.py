"""The edit journal: everything about a take that its audio file cannot give back, kept beside
the database in a file a damaged database cannot take down with it.

Why a journal, and not the note embedded in each take's audio: that note lives in the WAV's INFO
chunk, which libsndfile caps at about 2 KB (a take's engine files with their hashes, its notes
and tags do not fit), and changing it means rewriting the whole audio file for every star a user
clicks, putting the take's audio at risk for a rating. An append is one short write whatever the
take's size, and a take's audio is never touched again once it is in place.

`library-edits.jsonl` holds one JSON object a line: {"id", "created", "set": {column: value}}.
Keeping a take writes every column of COLUMNS (a snapshot: what made it, what the user gave
it); each later change writes what changed. Lines are appended, synced, inside the write
transaction that makes the change, so they are in commit order even with several copies of SA3
Studio open; a line whose transaction then fails to commit (rare: the disk filled between the
two) only repeats a change the user asked for. A take is named by id *and* creation time: an id
whose first use was rolled back and then given to another take never inherits the first one's
lines. After a rebuild the lines are replayed, in order, over the takes that came back (see
opening.py), which leaves each with its last state.

Emptying the trash writes {"id", "created", "purged": true} for each take it removes, in the
transaction that removes their rows: a take whose row is gone but whose file was left behind (a
crash before the file went, a file that could not be removed) or whose row a damaged database
still holds is never brought back. A purge whose transaction fails writes "purged": false
lines, which cancel it. Versions before these lines skip them (they have no "set").
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from engines.store.files import fsync_dir

log = logging.getLogger(__name__)

JOURNAL_NAME = "library-edits.jsonl"

_TEXT = (str,)
_TEXT_OR_NONE = (str, type(None))
_INT = (int,)
_INT_OR_NONE = (int, type(None))
_REAL = (int, float)
_REAL_OR_NONE = (int, float, type(None))

# The columns a line may set, with the JSON types each accepts (a damaged or hand-edited line
# must not put text where a number belongs). Not here: id and created (they name the take), and
# what the audio file itself tells (audio_file, samples, sample_rate, content_sha256, deleted).
COLUMNS: Mapping[str, tuple[type, ...]] = {
    "name": _TEXT, "prompt": _TEXT, "negative_prompt": _TEXT, "model": _TEXT,
    "decoder": _TEXT, "precision": _TEXT, "seconds": _REAL, "steps": _INT, "seed": _INT,
    "seed_was_random": _INT, "cfg": _REAL, "apg": _REAL, "init_noise_level": _REAL_OR_NONE,
    "inpaint_spans": _TEXT, "limiter_ceiling": _REAL, "mode": _TEXT, "backend": _TEXT,
    "requested_backend": _TEXT, "decoder_tier": _TEXT, "timings_ms": _TEXT,
    "engine_files": _TEXT, "warnings": _TEXT, "parent_id": _INT_OR_NONE,
    "init_source": _TEXT_OR_NONE, "rating": _INT, "favourite": _INT, "tags": _TEXT,
    "notes": _TEXT,
    # Schema 3. A finishing chain is what the user chose, so it must survive a rebuild; the
    # quality flags could be measured again from the audio, but keeping them saves the time.
    "finishing": _TEXT_OR_NONE, "quality": _TEXT,
    # Schema 4: the UCS labels the user gave, and the take's place in its set of variations.
    "ucs_catid": _TEXT, "ucs_category": _TEXT, "ucs_subcategory": _TEXT, "ucs_fx_name": _TEXT,
    "ucs_creator": _TEXT, "ucs_source": _TEXT, "variation": _INT_OR_NONE,
    "variations": _INT_OR_NONE,
}

_NEW_TAKE = {"rating": 0, "favourite": 0, "tags": "[]", "notes": "", "finishing": None}

# A journal larger than this many bytes per take (plus a margin) is rewritten as one snapshot
# a take when the library opens: a snapshot is about 1.5 KB, an edit about 150 bytes.
_COMPACT_BYTES_PER_TAKE = 8192
_COMPACT_MARGIN_BYTES = 1 << 20
_PURGE_LINE_BYTES = 96  # {"id":..,"created":"2025-..+00:00","purged":true}


class EditJournal:
    """The journal file of one library."""

    def __init__(self, root: Path) -> None:
        self.path = root / JOURNAL_NAME

    def snapshot(self, take_id: int, created: str, row: Mapping[str, Any]) -> None:
        """Record a new take: every journaled column, the ones a new take leaves at their
        defaults (rating, tags, ...) included, so a replay leaves nothing to chance."""
        self.append(take_id, created, {**_NEW_TAKE, **row})

    def append(self, take_id: int, created: str, fields: Mapping[str, Any]) -> None:
        """Record `fields` (columns of COLUMNS; others are ignored) for the take. Call inside
        the write transaction that makes the change; an OSError aborts it."""
        values = {key: fields[key] for key in COLUMNS if key in fields}
        if values:
            self._write(_line({"id": int(take_id), "created": created, "set": values}))

    def purge(self, takes: Iterable[tuple[int, str]], purged: bool = True) -> None:
        """Record that the takes (id, created) are gone for good (or, with purged=False, that
        their purge did not happen after all). Call inside the write transaction that removes
        them; an OSError aborts it."""
        lines = b"".join(_line({"id": int(take_id), "created": created, "purged": purged})
                         for take_id, created in takes)
        if lines:
            self._write(lines)

    def _write(self, line: bytes) -> None:
        # Read and write: the last byte is looked at (writes go to the end all the same).
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)
        fd = os.open(self.path, flags, 0o666)
        try:
            if _ends_mid_line(fd):  # a writer died mid-line: never glue a new line onto it
                line = b"\n" + line
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)

    def entries(self) -> Iterator[tuple[int, str, dict]]:
        """(id, created, values) of every readable line that sets columns, oldest first;
        unreadable lines (a torn last line, damage) are skipped."""
        for take_id, created, entry in self._lines():
            values = _values(entry.get("set"))
            if values:
                yield take_id, created, values

    def purged(self) -> set[tuple[int, str]]:
        """The takes (id, created) emptied out of the trash for good."""
        gone: set[tuple[int, str]] = set()
        for take_id, created, entry in self._lines():
            if entry.get("purged") is True:
                gone.add((take_id, created))
            elif entry.get("purged") is False:
                gone.discard((take_id, created))
        return gone

    def _lines(self) -> Iterator[tuple[int, str, dict]]:
        """(id, created, object) of every readable line, oldest first."""
        try:
            handle = open(self.path, "rb")
        except FileNotFoundError:
            return
        except OSError:
            log.warning("Could not read the edit journal %s", self.path, exc_info=True)
            return
        with handle:
            for raw in handle:
                entry = _parse(raw)
                if entry is not None:
                    yield entry

    def max_id(self) -> int:
        """The highest id any line names, purged takes included: ids are never reused."""
        return max((take_id for take_id, _, _ in self._lines()), default=0)

    def replay(self, conn: sqlite3.Connection, only: set[int] | None = None) -> set[int]:
        """Apply every line to the take it names, if that take is in the database (and in
        `only`, when given); returns the ids of the takes something was applied to. The
        caller holds the write transaction."""
        restored: set[int] = set()
        for take_id, created, values in self.entries():
            if only is not None and take_id not in only:
                continue
            assignments = ", ".join(f"{key} = ?" for key in values)
            try:
                changed = conn.execute(
                    f"UPDATE takes SET {assignments} WHERE id = ? AND created = ?",
                    (*values.values(), take_id, created)).rowcount
            except (sqlite3.IntegrityError, OverflowError):
                continue  # a value the schema refuses: leave the take as it is
            if changed:
                restored.add(take_id)
        return restored

    def needs_compacting(self, conn: sqlite3.Connection) -> bool:
        """Whether the journal has grown far past its takes (many edits, or takes long
        gone), so that `compact` is worth it."""
        try:
            size = self.path.stat().st_size
        except OSError:
            return False
        if size <= _COMPACT_MARGIN_BYTES:
            return False
        takes = conn.execute("SELECT count(*) FROM takes").fetchone()[0]
        if size <= takes * _COMPACT_BYTES_PER_TAKE + _COMPACT_MARGIN_BYTES:
            return False
        # Purge lines are kept by `compact`: a journal of little else is as small as it gets.
        kept = takes * _COMPACT_BYTES_PER_TAKE + len(self.purged()) * _PURGE_LINE_BYTES
        return size > kept + _COMPACT_MARGIN_BYTES

    def compact(self, conn: sqlite3.Connection) -> None:
        """Rewrite the journal as one snapshot a take and the purge lines still in force,
        through a temporary file. The caller holds the write transaction, so no line is
        appended meanwhile; on any failure the old journal stays as it was."""
        temp = self.path.with_name(f".{JOURNAL_NAME}.{secrets.token_hex(4)}.partial")
        columns = ", ".join(COLUMNS)
        gone = sorted(self.purged())
        try:
            with open(temp, "wb") as handle:
                for take_id, created in gone:
                    handle.write(_line({"id": take_id, "created": created, "purged": True}))
                for row in conn.execute(f"SELECT id, created, {columns} FROM takes ORDER BY id"):
                    values = {key: row[key] for key in COLUMNS}
                    handle.write(_line({"id": row["id"], "created": row["created"],
                                        "set": values}))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, self.path)
            fsync_dir(self.path.parent)
        except OSError:
            log.warning("Could not compact the edit journal %s", self.path, exc_info=True)
            try:
                temp.unlink(missing_ok=True)
            except OSError:
                pass
        else:
            log.info("Compacted the edit journal %s", self.path)


def _line(entry: dict) -> bytes:
    # ASCII JSON: text that is not valid UTF-8 (lone surrogates) is kept as \udcxx escapes.
    return (json.dumps(entry, separators=(",", ":"), ensure_ascii=True) + "\n").encode("ascii")


def _ends_mid_line(fd: int) -> bool:
    end = os.lseek(fd, 0, os.SEEK_END)
    if end == 0:
        return False
    os.lseek(fd, end - 1, os.SEEK_SET)
    return os.read(fd, 1) != b"\n"


def _parse(raw: bytes) -> tuple[int, str, dict] | None:
    try:
        entry = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(entry, dict):
        return None
    take_id, created = entry.get("id"), entry.get("created")
    if type(take_id) is not int or not isinstance(created, str):
        return None
    return take_id, created, entry


def _values(values: object) -> dict:
    """The columns a line sets that COLUMNS allows, with values of the right JSON type."""
    if not isinstance(values, dict):
        return {}
    return {key: value for key, value in values.items()
            if key in COLUMNS and type(value) in COLUMNS[key]}
