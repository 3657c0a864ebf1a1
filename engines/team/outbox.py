"""Publishes on their way to the team library, kept in the data folder until the server has
them: DATA/team/outbox.sqlite3 (one row a take: its bundle as JSON) and DATA/team/outbox/DIR/
(its delivered files, in a folder of its own for each publish). Every publish goes through
here: written and committed first, sent second, removed once the server committed it. So a
server that is down, or killed in the middle of a publish, loses nothing: the row stays, and
the next send (the next publish, `team sync`, the window's timer) sends it again; sending twice
is harmless (the take's key makes it one entry).

Several processes (a batch, the window, three `team publish` at once) share one outbox: SQLite
serialises the writes (WAL, a busy timeout); each publish stages its files in a folder no other
publish uses; a row being sent is claimed by its sender (host, process, token) so no other
sender sends it or removes its files meanwhile; a claim whose process is gone is taken over.
A folder no row names is removed once it is an hour old (what a killed publish left).
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import secrets
import shutil
import socket
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from engines.error_sentences import sentence, shown
from engines.team.bundle import TakeBundle
from engines.team.errors import TeamError

log = logging.getLogger(__name__)

DB_NAME = "outbox.sqlite3"
FILES_DIR = "outbox"
KEY_CHARS = 24  # of the take key, naming its folder: unique enough, short enough for paths
BUSY_TIMEOUT_S = 30.0
CLAIM_STALE_S = 15 * 60  # a claim this old is taken over whoever holds it (a reused pid)
ORPHAN_AGE_S = 3600  # a staging folder no row names, older than this, is removed
SCHEMA_VERSION = 1

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
# Version 1: the staging folder of the row's bundle (NULL: the key's, as before) and its claim.
_ADDED_COLUMNS = ("folder TEXT", "claimed_by TEXT", "claimed_at REAL")


class Outbox:
    """The queue in `root` (DATA/team). Safe to use from several threads and processes."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._lock = threading.Lock()
        self.claimant = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        try:
            (self.root / FILES_DIR).mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.root / DB_NAME, timeout=BUSY_TIMEOUT_S,
                                         isolation_level=None, check_same_thread=False)
            _retry_busy(lambda: self._conn.execute("PRAGMA journal_mode = WAL"))
            _retry_busy(self._upgrade)
        except (OSError, sqlite3.Error) as err:
            raise TeamError(sentence(f"Could not open the team outbox in {shown(self.root)}",
                                     err)) from err
        self._remove_orphans()

    def _upgrade(self) -> None:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")  # one process at a time upgrades
        try:
            conn.execute(_SCHEMA)
            have = {row[1] for row in conn.execute("PRAGMA table_info(queued)")}
            for column in _ADDED_COLUMNS:
                if column.split()[0] not in have:
                    conn.execute(f"ALTER TABLE queued ADD COLUMN {column}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    # ---- the files -------------------------------------------------------------------------

    def folder_for(self, key: str) -> Path:
        """A new, empty folder for the files of one publish of the take with `key`."""
        for _ in range(100):
            folder = self.root / FILES_DIR / f"{key[:KEY_CHARS]}-{secrets.token_hex(4)}"
            try:
                folder.mkdir(parents=True)
                return folder
            except FileExistsError:
                continue
        raise TeamError(f"Could not make a folder in the team outbox {shown(self.root)}; "
                        "remove what is left in its outbox folder.")

    def files_of(self, bundle: TakeBundle) -> Path:
        """Where the files of a queued bundle wait."""
        return self.root / FILES_DIR / (bundle.staged or bundle.key[:KEY_CHARS])

    def _remove_orphans(self) -> None:
        try:
            with self._lock:
                named = {row[0] or row[1][:KEY_CHARS] for row in
                         self._conn.execute("SELECT folder, key FROM queued")}
            old = time.time() - ORPHAN_AGE_S
            for folder in (self.root / FILES_DIR).iterdir():
                if folder.name not in named and folder.stat().st_mtime < old:
                    log.info("Team outbox: removing %s, which no publish names", folder)
                    shutil.rmtree(folder, ignore_errors=True)
        except (OSError, sqlite3.Error):  # tidying only: what stays is removed next time
            log.debug("could not tidy the team outbox", exc_info=True)

    # ---- the queue -------------------------------------------------------------------------

    def put(self, bundle: TakeBundle, team: str, claim: bool = False) -> None:
        """Queue a bundle (whose files already lie in files_of(bundle)) for `team`, claimed by
        this outbox to send now (`claim`) or for any sender; the same take queued again
        replaces the older bundle."""
        now = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        self._write("INSERT INTO queued (key, team, bundle, queued, folder, claimed_by, "
                    "claimed_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET "
                    "team = excluded.team, bundle = excluded.bundle, folder = excluded.folder, "
                    "claimed_by = excluded.claimed_by, claimed_at = excluded.claimed_at",
                    (bundle.key, team, bundle.to_json(), now, bundle.staged or None,
                     self.claimant if claim else None, time.time()))

    def pending(self, team: str) -> list[TakeBundle]:
        """What waits for `team` and no live sender is sending, oldest first."""
        with self._lock:
            rows = self._conn.execute("SELECT bundle, claimed_by, claimed_at FROM queued WHERE "
                                      "team = ? ORDER BY queued, rowid", (team,)).fetchall()
        return [TakeBundle.from_json(row[0]) for row in rows if not self._held(row[1], row[2])]

    def claim(self, bundle: TakeBundle) -> bool:
        """Take the queued bundle to send; False when another live sender has it, or it was
        replaced or sent meanwhile."""
        with self._lock:
            row = self._conn.execute("SELECT claimed_by, claimed_at FROM queued WHERE key = ? "
                                     "AND folder IS ?", self._row(bundle)).fetchone()
        if row is None or self._held(row[0], row[1]):
            return False
        self._write("UPDATE queued SET claimed_by = ?, claimed_at = ? WHERE key = ? AND "
                    "folder IS ? AND claimed_by IS ?",
                    (self.claimant, time.time(), *self._row(bundle), row[0]), durable=False)
        with self._lock:
            mine = self._conn.execute("SELECT 1 FROM queued WHERE key = ? AND folder IS ? AND "
                                      "claimed_by = ?", (*self._row(bundle), self.claimant))
            return mine.fetchone() is not None

    def release(self, bundle: TakeBundle) -> None:
        """Leave the bundle queued for any sender."""
        self._write("UPDATE queued SET claimed_by = NULL WHERE key = ? AND folder IS ? AND "
                    "claimed_by = ?", (*self._row(bundle), self.claimant), durable=False)

    def count(self, team: str | None = None) -> int:
        with self._lock:
            if team is None:
                return int(self._conn.execute("SELECT count(*) FROM queued").fetchone()[0])
            return int(self._conn.execute("SELECT count(*) FROM queued WHERE team = ?",
                                          (team,)).fetchone()[0])

    def waiting(self, team: str) -> int:
        """How many takes wait for `team` with no live sender sending them."""
        return len(self.pending(team))

    def has(self, key: str) -> bool:
        with self._lock:
            return self._conn.execute("SELECT 1 FROM queued WHERE key = ?",
                                      (key,)).fetchone() is not None

    def done(self, bundle: TakeBundle) -> None:
        """The server has the take: forget this bundle (not a newer one queued meanwhile) and
        remove its files."""
        # Not synced: a take forgotten by a crash is only sent again, and the server knows it.
        self._write("DELETE FROM queued WHERE key = ? AND folder IS ?", self._row(bundle),
                    durable=False)
        shutil.rmtree(self.files_of(bundle), ignore_errors=True)

    def failed(self, bundle: TakeBundle, why: str) -> None:
        self._write("UPDATE queued SET attempts = attempts + 1, last_error = ?, claimed_by = "
                    "NULL WHERE key = ? AND folder IS ?", (why, *self._row(bundle)),
                    durable=False)

    def _row(self, bundle: TakeBundle) -> tuple[str, str | None]:
        return bundle.key, bundle.staged or None

    def _held(self, claimant: str | None, since: float | None) -> bool:
        """Whether a claim belongs to a live sender other than this outbox."""
        if not claimant or claimant == self.claimant:
            return False
        if since is None or time.time() - since > CLAIM_STALE_S:
            return False
        host, _, rest = claimant.partition(":")
        pid = rest.partition(":")[0]
        if host != socket.gethostname() or not pid.isdigit():
            return True  # another machine's (a data folder on a shared drive): trust its age
        return _alive(int(pid))

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


def _alive(pid: int) -> bool:
    if os.name == "nt":  # no signal 0 there (it is CTRL_C_EVENT): trust the claim's age
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def _retry_busy(work: Callable[[], object], tries: int = 50) -> None:
    """`work()`, again while another process holds the database (switching to WAL or an
    upgrade can answer "database is locked" before the busy timeout applies)."""
    for attempt in range(tries):
        try:
            work()
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or attempt == tries - 1:
                raise
            time.sleep(0.1)
