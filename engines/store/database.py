"""The library's SQLite file: opening it (for writing, or reading only on a read-only drive),
telling damage from other failures, migrating it if it is old, and the write transaction that
undoes its caller's file changes when it fails.

LibraryDatabase is the open connection every part of ClipLibrary is handed: reads that fail as
one sentence, that transaction, and a take's row put in."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engines.error_sentences import sentence, shown
from engines.store import access, repair, schema
from engines.store.records import LibraryError
from engines.store.schema import SCHEMA_VERSION

log = logging.getLogger(__name__)


class LibraryDatabase:
    """The library's open connection as every part of ClipLibrary uses it: reads that fail as
    one sentence, the write transaction, and a take's row put into the takes table with its
    text index. `read_only`: the folder cannot be written (`read_only_reason` says why, in a
    few words); `beside_writer`: opened for reading while another process held the write lock.
    """

    def __init__(self, conn: sqlite3.Connection, root: Path, *, use_fts: bool = False,
                 read_only_reason: str = "", beside_writer: bool = False) -> None:
        self.conn = conn
        self.root = root
        self.use_fts = use_fts
        self.read_only = bool(read_only_reason)
        self.read_only_reason = read_only_reason
        self.beside_writer = beside_writer

    def require_writable(self) -> None:
        """Refuse (LibraryError, one sentence) when the library is read-only: for callers that
        would otherwise ask the user about a change that cannot happen."""
        if self.read_only:
            raise LibraryError(access.read_only_refusal(self.root, self.read_only_reason))

    def write(self) -> AbstractContextManager[list[Callable[[], None]]]:
        """BEGIN IMMEDIATE ... COMMIT on the library's connection; see `transaction`. A
        read-only library refuses before anything is touched."""
        self.require_writable()
        return transaction(self.conn, self.root)

    def rows(self, sql: str, params: Any = ()) -> list[sqlite3.Row]:
        """A query's rows; a database failing under a read (a disk error, damage found only
        now) is one LibraryError sentence."""
        try:
            return self.conn.execute(sql, params).fetchall()
        except (sqlite3.Error, OverflowError, UnicodeError) as err:
            raise LibraryError(sentence("The library could not be read", err)) from err

    def row(self, sql: str, params: Any = ()) -> sqlite3.Row | None:
        rows = self.rows(sql, params)
        return rows[0] if rows else None

    def insert_take(self, row: dict) -> None:
        """A take's row, and its search text in the text index (inside the caller's write)."""
        names = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        self.conn.execute(f"INSERT INTO takes ({names}) VALUES ({marks})", tuple(row.values()))
        if self.use_fts:
            self.conn.execute(f"INSERT INTO {schema.FTS_TABLE} (rowid, search_text) "
                              "VALUES (?, ?)", (row["id"], row["search_text"]))

    def next_id(self) -> int:
        """The id the next take gets: past both the highest ever handed out (sqlite_sequence)
        and the highest in the table."""
        conn = self.conn
        seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'takes'").fetchone()
        top = conn.execute("SELECT max(id) FROM takes").fetchone()[0]
        return max(seq[0] if seq else 0, top or 0) + 1

    def close(self) -> None:
        """Close the connection (again: nothing); the parts cannot be used after it."""
        conn, self.conn = self.conn, None  # type: ignore[assignment]
        if conn is None:
            return
        try:
            if not self.read_only and not self.beside_writer:
                # Best effort: statistics never make anyone wait for another writer.
                conn.execute("PRAGMA busy_timeout = 0")
                conn.execute("PRAGMA optimize")
        except sqlite3.Error:
            pass
        conn.close()


BUSY_TIMEOUT_S = 10.0
_BUSY_CODES = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED


def connect(db_path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db_path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    conn.row_factory = sqlite3.Row
    return conn


def writer_busy(conn: sqlite3.Connection) -> bool:
    """Whether another connection holds the write lock right now, asked without waiting."""
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as err:
        if (getattr(err, "sqlite_errorcode", 5) & 0xFF) in _BUSY_CODES:
            return True
        raise
    else:
        conn.execute("ROLLBACK")
        return False
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")


def current(conn: sqlite3.Connection) -> bool:
    """Whether the database has this version's schema (else it must be migrated first)."""
    return conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


@dataclass
class OpenedDatabase:
    """What opening found: a healthy connection, or the damage that calls for a rebuild and
    the copy of the damaged file kept for the user."""

    conn: sqlite3.Connection | None
    damage: str | None = None  # "damaged", "empty (0 bytes)": the database must be rebuilt
    kept_as: Path | None = None


def open_database(db_path: Path, root: Path) -> OpenedDatabase:
    """Open the library's database for writing, checked. Damage (including a 0-byte file,
    which SQLite would silently take for a new, empty database) is not repaired here: the
    damaged file and its write-ahead log are copied aside and the caller rebuilds (see
    opening.py)."""
    try:
        if db_path.stat().st_size == 0:
            return OpenedDatabase(None, "empty (0 bytes)", _keep_damaged(db_path, "empty"))
    except FileNotFoundError:
        pass
    except OSError as err:
        raise LibraryError(sentence(f"The library database {shown(db_path)} cannot be opened",
                                    err)) from err
    conn: sqlite3.Connection | None = None
    try:
        conn = connect(db_path)
        conn.execute("PRAGMA journal_mode=WAL")
        version = _checked_version(conn)
    except sqlite3.DatabaseError as err:
        try:
            if not repair.is_corruption(err):
                raise LibraryError(sentence(f"The library database {shown(db_path)} cannot be "
                                            "opened", err)) from err
            log.error("The library database %s is damaged (%s)", db_path, err)
            # Copied while still open: closing the last connection may checkpoint the WAL
            # into the damaged file or delete it, and the copy must be what the user had.
            return OpenedDatabase(None, "damaged", _keep_damaged(db_path, "damaged"))
        finally:
            if conn is not None:
                conn.close()
    if version > SCHEMA_VERSION:
        conn.close()
        raise _newer(root, version)
    return OpenedDatabase(conn)


def _keep_damaged(db_path: Path, cause: str) -> Path:
    try:
        return repair.copy_aside(db_path)
    except OSError as err:
        raise LibraryError(sentence(f"The library database {shown(db_path)} is {cause} and "
                                    "could not be copied aside for repair", err)) from err


def open_read_only(db_path: Path, root: Path, reason: str) -> tuple[sqlite3.Connection, bool]:
    """A read-only connection to a library that cannot be written, and whether its text index
    may be used. Nothing is migrated or repaired: what cannot be read as it is is refused."""
    where = f"The library at {shown(root)}"
    if not db_path.is_file():
        raise LibraryError(f"{where} holds no library yet and is read-only ({reason}); choose "
                           "a writable folder or point SA3_STUDIO_HOME at one.")
    try:
        conn = access.connect_read_only(db_path)
    except sqlite3.Error as err:
        raise LibraryError(sentence(f"{where} cannot be opened", err)) from err
    try:
        version = _checked_version(conn)
        if version == SCHEMA_VERSION:
            return conn, schema.fts_usable(conn)
    except sqlite3.DatabaseError as err:
        conn.close()
        if repair.is_corruption(err):
            raise LibraryError(f"{where} is damaged and read-only ({reason}), so it cannot be "
                               "repaired here; copy the library folder to a writable place and "
                               "open it there.") from err
        raise LibraryError(sentence(f"{where} cannot be opened", err)) from err
    conn.close()
    if version > SCHEMA_VERSION:
        raise _newer(root, version)
    raise LibraryError(f"{where} was written by an older SA3 Studio and must be updated, which "
                       f"cannot happen while it is read-only ({reason}); copy it to a writable "
                       "folder and open it there.")


def _checked_version(conn: sqlite3.Connection) -> int:
    check = conn.execute("PRAGMA quick_check").fetchone()[0]
    if check != "ok":
        raise sqlite3.DatabaseError(f"quick_check: {check}")
    return conn.execute("PRAGMA user_version").fetchone()[0]


def _newer(root: Path, version: int) -> LibraryError:
    return LibraryError(f"The library at {shown(root)} was written by a newer SA3 Studio "
                        f"(schema {version}, this one knows {SCHEMA_VERSION}); update the app "
                        "to open it.")


def prepare(conn: sqlite3.Connection, db_path: Path, root: Path) -> tuple[bool, int | None]:
    """Pragmas, migrations and the text index; returns whether FTS5 is used, and the schema
    version the library was migrated from (None when it needed no migration)."""
    conn.execute("PRAGMA synchronous=FULL")  # takes are worth the fsync
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if 0 < version < SCHEMA_VERSION:
        _backup(conn, db_path, version)  # outside the write transaction, which would block it
    migrated_from: int | None = None
    with transaction(conn, root) as _:
        before = schema.migrate(conn, root)
        if 0 < before < SCHEMA_VERSION:
            migrated_from = before
            log.info("Library %s migrated from schema %d to %d", root, before, SCHEMA_VERSION)
        use_fts = schema.ensure_fts(conn)
        schema.ensure_embeddings(conn)
    return use_fts, migrated_from


def _backup(conn: sqlite3.Connection, db_path: Path, version: int) -> None:
    target = db_path.with_name(f"{db_path.name}.v{version}-backup")
    if target.exists():
        return
    try:
        copy = sqlite3.connect(target)
        try:
            conn.backup(copy)
        finally:
            copy.close()
    except (sqlite3.Error, OSError) as err:
        raise LibraryError(sentence(f"The library at {shown(db_path.parent)} needs updating, "
                                    "but its backup copy could not be written", err)) from err


@contextmanager
def transaction(conn: sqlite3.Connection, root: Path) -> Iterator[list[Callable[[], None]]]:
    """BEGIN IMMEDIATE ... COMMIT. The caller appends undo actions for files it touched;
    they run (newest first) if anything fails before the commit went through."""
    undo: list[Callable[[], None]] = []
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as err:
        raise LibraryError(sentence("The library could not start a change", err)) from err
    try:
        yield undo
        conn.execute("COMMIT")
    except BaseException as err:
        _roll_back(conn, undo)
        if isinstance(err, (OSError, UnicodeError)):
            raise LibraryError(sentence(f"The library could not write to {shown(root)}",
                                        err)) from err
        if isinstance(err, sqlite3.Error):
            raise LibraryError(sentence("The library database refused the change, so nothing "
                                        "was changed", err)) from err
        raise


def _roll_back(conn: sqlite3.Connection, undo: list[Callable[[], None]]) -> None:
    """Undo what a failed write did; never raises (it runs inside an error handler)."""
    try:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    except sqlite3.Error:
        log.warning("Could not roll back a failed library write", exc_info=True)
    for action in reversed(undo):
        try:
            action()
        except OSError:
            log.warning("Could not undo a file change after a failed library write",
                        exc_info=True)
