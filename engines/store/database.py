"""The library's SQLite file: opening it (starting over if it is damaged, migrating it if it is
old) and the write transaction that undoes its caller's file changes when it fails.

LibraryConnection is what every part of ClipLibrary shares: the open connection, the folders and
that transaction."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from engines.store import repair, schema
from engines.store.records import LibraryError
from engines.store.schema import SCHEMA_VERSION

log = logging.getLogger(__name__)


class LibraryConnection:
    """The state ClipLibrary sets up when it opens, as its parts (lookup, editing, ...) see it."""

    root: Path
    audio_dir: Path
    trash_dir: Path
    _conn: sqlite3.Connection
    _use_fts: bool

    def _write(self) -> AbstractContextManager[list[Callable[[], None]]]:
        """BEGIN IMMEDIATE ... COMMIT on the library's connection; see `transaction`."""
        return transaction(self._conn, self.root)


def connect(db_path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db_path, timeout=10.0, isolation_level=None)
    conn.row_factory = sqlite3.Row
    return conn


def open_database(db_path: Path, root: Path) -> tuple[sqlite3.Connection, str | None]:
    """A checked connection, and one sentence for the user when a damaged database had to be
    replaced (else None)."""
    conn: sqlite3.Connection | None = None
    try:
        conn = connect(db_path)
        conn.execute("PRAGMA journal_mode=WAL")
        check = conn.execute("PRAGMA quick_check").fetchone()[0]
        if check != "ok":
            raise sqlite3.DatabaseError(f"quick_check: {check}")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.DatabaseError as err:
        if conn is not None:
            conn.close()
        if not repair.is_corruption(err):
            raise LibraryError(f"The library database {db_path} cannot be opened "
                               f"({err}); close other copies of SA3 Studio and check the "
                               "disk.") from err
        return _start_over(db_path, err)
    if version > SCHEMA_VERSION:
        conn.close()
        raise LibraryError(f"The library at {root} was written by a newer SA3 Studio "
                           f"(schema {version}, this one knows {SCHEMA_VERSION}); update the "
                           "app to open it.")
    return conn, None


def _start_over(db_path: Path, err: BaseException) -> tuple[sqlite3.Connection, str]:
    log.error("The library database %s is damaged (%s); starting a new one", db_path, err)
    try:
        aside = repair.move_aside(db_path)
    except OSError as move_err:
        raise LibraryError(f"The library database {db_path} is damaged and could not be "
                           f"moved aside ({move_err.strerror or move_err}); move it away by "
                           "hand and start SA3 Studio again.") from move_err
    notice = (f"The library database was damaged; it was moved to {aside} and a new one "
              "was started.")
    conn = connect(db_path)
    conn.execute("PRAGMA journal_mode=WAL")
    return conn, notice


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
    return use_fts, migrated_from


def _backup(conn: sqlite3.Connection, db_path: Path, version: int) -> None:
    target = db_path.with_name(f"{db_path.name}.v{version}-backup")
    if target.exists():
        return
    copy = sqlite3.connect(target)
    try:
        conn.backup(copy)
    finally:
        copy.close()


@contextmanager
def transaction(conn: sqlite3.Connection, root: Path) -> Iterator[list[Callable[[], None]]]:
    """BEGIN IMMEDIATE ... COMMIT. The caller appends undo actions for files it touched;
    they run (newest first) if anything fails before the commit went through."""
    undo: list[Callable[[], None]] = []
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as err:
        raise LibraryError(f"The library is busy or read-only ({err}); close other copies "
                           "of SA3 Studio and try again.") from err
    try:
        yield undo
        conn.execute("COMMIT")
    except BaseException as err:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        for action in reversed(undo):
            try:
                action()
            except OSError:
                log.warning("Could not undo a file change after a failed library write",
                            exc_info=True)
        if isinstance(err, OSError):
            raise LibraryError(f"The library could not write to {root} "
                               f"({err.strerror or err}); free some disk space or check its "
                               "permissions, then try again.") from err
        if isinstance(err, sqlite3.Error):
            raise LibraryError(f"The library database refused the change ({err}); try "
                               "again, and restart SA3 Studio if it keeps happening.") from err
        raise
