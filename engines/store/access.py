"""Whether the library may be written, and opening its database for reading only when not.

A library on a read-only drive (a mounted backup, a shared network folder) or in a folder the
user may not write is still worth browsing: its takes can be listed, played and exported. SQLite
cannot open such a database the ordinary way (a WAL database needs its -shm file created), so it
is opened through a `mode=ro` URI, which reads the WAL when its files are there, and else as
`immutable`, which reads the file alone without any locking: safe here because nobody can write
a folder nobody may write.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from engines.error_sentences import shown

log = logging.getLogger(__name__)

DB_COMPANIONS = ("-wal", "-shm")  # SQLite's files beside a WAL database


def writable(root: Path, paths: list[Path]) -> bool:
    """Whether the library folder and those of `paths` that exist may be written (the
    folders for new files, the database and its companions for changes)."""
    return all(os.access(path, os.W_OK) for path in (root, *paths) if path.exists())


def read_only_reason(root: Path) -> str:
    """Why a library folder cannot be written, as a few words for a sentence."""
    try:
        if os.statvfs(root).f_flag & os.ST_RDONLY:
            return "it is on a read-only drive"
    except (OSError, AttributeError):  # no statvfs on Windows
        pass
    return "you may not write to its folder"


def read_only_notice(root: Path, reason: str) -> str:
    return (f"The library at {shown(root)} is read-only ({reason}); you can browse, play and "
            "export its takes, but keeping, rating or deleting takes needs a writable folder, "
            "so copy the library to one or point SA3_STUDIO_HOME there.")


def read_only_refusal(root: Path, reason: str) -> str:
    return (f"The library at {shown(root)} is read-only ({reason}), so nothing was changed; "
            "copy it to a writable folder or point SA3_STUDIO_HOME there to keep, rate or "
            "delete takes.")


def _uri(db_path: Path) -> str:
    # Percent-encoded bytes: any character (and any undecodable byte) in the path survives.
    posix = db_path.absolute().as_posix()
    if not posix.startswith("/"):
        posix = "/" + posix  # file:///C:/... on Windows
    return "file:" + quote(os.fsencode(posix), safe="/:")


def connect_read_only(db_path: Path) -> sqlite3.Connection:
    """A connection that can only read the database; sqlite3.Error if neither way opens it."""
    last: sqlite3.Error | None = None
    for query in ("?mode=ro", "?mode=ro&immutable=1"):
        conn = None
        try:
            conn = sqlite3.connect(_uri(db_path) + query, uri=True, timeout=10.0,
                                   isolation_level=None)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as err:
            if conn is not None:
                conn.close()
            last = err
            continue
        if "immutable" in query and _has_wal_content(db_path):
            log.warning("%s has a write-ahead log that cannot be read from this read-only "
                        "folder; the library shows the state before it", db_path)
        conn.row_factory = sqlite3.Row
        return conn
    assert last is not None
    raise last


def _has_wal_content(db_path: Path) -> bool:
    try:
        return db_path.with_name(db_path.name + "-wal").stat().st_size > 0
    except OSError:
        return False
