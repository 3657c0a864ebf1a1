"""Publishes on their way to the team library, kept in the data folder until the server has
them: DATA/team/outbox.sqlite3 (one row a take: its bundle as JSON) and DATA/team/outbox/KEY/
(its delivered files). Every publish goes through here: written and committed first, sent
second, removed once the server committed it. So a server that is down, or killed in the middle
of a publish, loses nothing: the row stays, and the next send (the next publish, `team sync`,
the window's timer) sends it again; sending twice is harmless (the take's key makes it one
entry). SQLite, not a JSON-lines file, so several processes (a batch and the window) may queue
at once, each write atomic.
"""

from __future__ import annotations

import datetime as _dt
import shutil
import sqlite3
import threading
from pathlib import Path

from engines.failures import sentence, shown
from engines.team.bundle import TakeBundle
from engines.team.errors import TeamError

DB_NAME = "outbox.sqlite3"
FILES_DIR = "outbox"
KEY_CHARS = 24  # of the take key, naming its folder: unique enough, short enough for paths

_SCHEMA = """
CREATE TABLE IF NOT EXISTS queued (
    key TEXT PRIMARY KEY,
    team TEXT NOT NULL,
    bundle TEXT NOT NULL,
    queued TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT
)
"""


class Outbox:
    """The queue in `root` (DATA/team). Safe to use from several threads and processes."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._lock = threading.Lock()
        try:
            (self.root / FILES_DIR).mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.root / DB_NAME, timeout=30.0,
                                         isolation_level=None, check_same_thread=False)
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as err:
            raise TeamError(sentence(f"Could not open the team outbox in {shown(self.root)}",
                                     err)) from err

    def folder_for(self, key: str) -> Path:
        """Where the files of the take with `key` wait."""
        return self.root / FILES_DIR / key[:KEY_CHARS]

    def put(self, bundle: TakeBundle, team: str) -> None:
        """Queue a bundle (whose files already lie in folder_for(bundle.key)) for `team`; the
        same take queued again replaces the older bundle."""
        now = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        self._write("INSERT INTO queued (key, team, bundle, queued) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (key) DO UPDATE SET team = excluded.team, "
                    "bundle = excluded.bundle", (bundle.key, team, bundle.to_json(), now))

    def pending(self, team: str) -> list[TakeBundle]:
        """What waits for `team`, oldest first."""
        with self._lock:
            rows = self._conn.execute("SELECT bundle FROM queued WHERE team = ? ORDER BY "
                                      "queued, rowid", (team,)).fetchall()
        return [TakeBundle.from_json(row[0]) for row in rows]

    def count(self, team: str | None = None) -> int:
        with self._lock:
            if team is None:
                return int(self._conn.execute("SELECT count(*) FROM queued").fetchone()[0])
            return int(self._conn.execute("SELECT count(*) FROM queued WHERE team = ?",
                                          (team,)).fetchone()[0])

    def has(self, key: str) -> bool:
        with self._lock:
            return self._conn.execute("SELECT 1 FROM queued WHERE key = ?",
                                      (key,)).fetchone() is not None

    def done(self, key: str) -> None:
        """The server has the take: forget it and its files."""
        # Not synced: a take forgotten by a crash is only sent again, and the server knows it.
        self._write("DELETE FROM queued WHERE key = ?", (key,), durable=False)
        shutil.rmtree(self.folder_for(key), ignore_errors=True)

    def failed(self, key: str, why: str) -> None:
        self._write("UPDATE queued SET attempts = attempts + 1, last_error = ? WHERE key = ?",
                    (why, key), durable=False)

    def _write(self, statement: str, values: tuple, durable: bool = True) -> None:
        """One statement, committed; `durable`: on the disk before this returns (a queued
        take survives a crash or power cut)."""
        try:
            with self._lock:
                self._conn.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
                self._conn.execute(statement, values)
        except sqlite3.Error as err:
            raise TeamError(sentence(f"Could not write the team outbox in {shown(self.root)}",
                                     err)) from err

    def close(self) -> None:
        with self._lock:
            self._conn.close()
