"""Reading every row that can still be read out of a damaged library database.

sqlite3's `.recover` lives in the command-line shell, not in Python's module, so this does the
part of it the library needs: work on a scratch copy (the copy kept for the user is never
opened), give the copy a fresh header when its own is gone (the pages behind it usually are
not), then ask for the takes by id, a batch at a time and, where a batch runs into a damaged
page, one by one, so one bad page costs the rows on it and nothing else.
"""

from __future__ import annotations

import logging
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

SQLITE_MAGIC = b"SQLite format 3\x00"
_HEADER_BYTES = 100
_PAGE_SIZES = (4096, 1024, 2048, 8192, 16384, 32768, 65536, 512)  # SQLite's default first
_BATCH = 256
# Ids above the highest one known are tried this far: takes whose audio files are gone too.
_SEARCH_PAST_KNOWN_IDS = 1000
# Ids asked for one by one, at most: a damaged counter or an odd file name can claim any id,
# and a million lookups take seconds, not hours.
_PROBE_BUDGET = 1_000_000


@dataclass
class SalvagedRows:
    """The rows read back, as {column: value}, and the highest id the file had handed out."""

    rows: list[dict] = field(default_factory=list)
    sequence: int = 0


def salvage_takes(damaged: Path, wal: Path | None, known_max_id: int) -> SalvagedRows:
    """Every readable row of the `takes` table in `damaged` (with its write-ahead log `wal`,
    if any). `known_max_id`: the highest take id seen elsewhere (file names, the journal), so
    rows past a damaged end of the table are still looked for. Never raises: what cannot be
    read is left out, and the reason logged."""
    try:
        with tempfile.TemporaryDirectory(prefix="sa3-salvage-") as scratch:
            copy = Path(scratch) / "damaged.sqlite3"
            shutil.copyfile(damaged, copy)
            if wal is not None and wal.is_file():
                shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
            conn = _open_readable(copy)
            if conn is None:
                log.warning("Nothing could be read from the damaged database %s", damaged)
                return SalvagedRows()
            try:
                return _read_takes(conn, known_max_id)
            finally:
                conn.close()
    except (OSError, sqlite3.Error, MemoryError):
        log.warning("Could not salvage rows from %s", damaged, exc_info=True)
        return SalvagedRows()


def _open_readable(copy: Path) -> sqlite3.Connection | None:
    """A connection to `copy` that can read the takes table's definition, giving the copy a
    rebuilt header (trying each page size) when its own does not work."""
    conn = _try_open(copy)
    if conn is not None:
        return conn
    size = copy.stat().st_size
    if size < 2 * 512:
        return None
    wal = copy.with_name(copy.name + "-wal")
    wal.unlink(missing_ok=True)  # a rebuilt header starts a rollback-journal database
    with open(copy, "r+b") as handle:
        first = handle.read(_HEADER_BYTES)
        for page_size in _PAGE_SIZES:
            if size < 2 * page_size:
                continue
            handle.seek(0)
            handle.write(_header(page_size, size // page_size))
            handle.flush()
            conn = _try_open(copy)
            if conn is not None:
                log.info("Read the damaged database with a rebuilt header (page size %d)",
                         page_size)
                return conn
        handle.seek(0)
        handle.write(first)
    return None


def _try_open(path: Path) -> sqlite3.Connection | None:
    conn = None
    try:
        conn = sqlite3.connect(path, isolation_level=None)
        conn.row_factory = sqlite3.Row
        found = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
                             "name = 'takes'").fetchone()[0]
        if found:
            conn.execute("SELECT * FROM takes LIMIT 0").fetchall()
            return conn
    except sqlite3.Error:
        pass
    if conn is not None:
        conn.close()
    return None


def _header(page_size: int, pages: int) -> bytes:
    """A plain (rollback journal, UTF-8, schema format 4) database header; see
    https://www.sqlite.org/fileformat.html#the_database_header."""
    header = bytearray(_HEADER_BYTES)
    header[0:16] = SQLITE_MAGIC
    header[16:18] = (1 if page_size == 65536 else page_size).to_bytes(2, "big")
    header[18], header[19] = 1, 1  # file format versions: legacy (no WAL)
    header[21], header[22], header[23] = 64, 32, 32  # payload fractions, fixed by the format
    header[24:28] = (1).to_bytes(4, "big")  # change counter
    header[28:32] = pages.to_bytes(4, "big")
    header[40:44] = (1).to_bytes(4, "big")  # schema cookie
    header[44:48] = (4).to_bytes(4, "big")  # schema format
    header[56:60] = (1).to_bytes(4, "big")  # UTF-8
    header[92:96] = (1).to_bytes(4, "big")  # version-valid-for: the change counter
    header[96:100] = (3_040_001).to_bytes(4, "big")
    return bytes(header)


def _read_takes(conn: sqlite3.Connection, known_max_id: int) -> SalvagedRows:
    """In id order, a batch at a time; a batch that meets a damaged page is asked for id by
    id instead (up to _PROBE_BUDGET ids in all), and the walk goes on past it."""
    found = SalvagedRows(sequence=_sequence(conn))
    top = max(known_max_id, found.sequence, _max_rowid(conn)) + _SEARCH_PAST_KNOWN_IDS
    after, budget = 0, _PROBE_BUDGET
    while after < top and budget > 0:
        try:
            rows = conn.execute("SELECT * FROM takes WHERE id > ? ORDER BY id LIMIT ?",
                                (after, _BATCH)).fetchall()
        except sqlite3.DatabaseError:
            found.rows.extend(dict(row) for row in _one_by_one(conn, after + 1, after + _BATCH))
            after += _BATCH
            budget -= _BATCH
            continue
        if not rows:
            break
        found.rows.extend(dict(row) for row in rows)
        after = rows[-1]["id"]
    log.info("Salvaged %d rows from the damaged library database", len(found.rows))
    return found


def _one_by_one(conn: sqlite3.Connection, first: int, last: int) -> list[sqlite3.Row]:
    rows: list[sqlite3.Row] = []
    for take_id in range(first, last + 1):
        try:
            row = conn.execute("SELECT * FROM takes WHERE id = ?", (take_id,)).fetchone()
        except sqlite3.DatabaseError:
            continue
        if row is not None:
            rows.append(row)
    return rows


def _sequence(conn: sqlite3.Connection) -> int:
    try:
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'takes'").fetchone()
    except sqlite3.DatabaseError:
        return 0
    return row[0] if row is not None and type(row[0]) is int and row[0] > 0 else 0


def _max_rowid(conn: sqlite3.Connection) -> int:
    try:
        top = conn.execute("SELECT max(rowid) FROM takes").fetchone()[0]
    except sqlite3.DatabaseError:
        return 0
    return top if type(top) is int and top > 0 else 0
