"""Takes other designers publish, as they are published: a connection of its own LISTENs on the
channel the server's trigger NOTIFYs at every new take's commit (engines.team.migrations), and
each wake-up reads every take newer than the last one seen, so a notification missed while the
connection was down is caught up on the next read, never lost.

A window runs `poll` on a thread of its own (it blocks up to its timeout) and shows the entries
it returns; the server gone, `poll` returns nothing, `notice` says so once, and the next polls
try to connect again every RETRY_S seconds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from engines.lazy import lazy_import
from engines.team import records
from engines.team.connection import TeamConnection
from engines.team.entries import TeamEntry
from engines.team.errors import TeamError, TeamUnreachable
from engines.team.migrations import CHANGED_TAKES_CHANNEL, NEW_TAKES_CHANNEL
from engines.team.session import connect, reworded

if TYPE_CHECKING:
    import psycopg as psycopg_types

psycopg = lazy_import("psycopg")
log = logging.getLogger(__name__)

RETRY_S = 5.0
MAX_ID_DIGITS = 19  # a bigint's


class TeamWatcher:
    """New team takes after `last_id` (None: after the newest there is now)."""

    def __init__(self, connection: TeamConnection, designer: str,
                 last_id: int | None = None) -> None:
        self.connection = connection
        self.designer = designer
        self.last_id = last_id
        self.notice: str | None = None
        self.changed: set[int] = set()  # takes whose ratings or tags changed (ids), to reread
        self._conn: psycopg_types.Connection | None = None
        self._next_try = 0.0
        self._closed = False

    def _listening(self) -> psycopg_types.Connection | None:
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            return self._conn
        if time.monotonic() < self._next_try:
            return None
        try:
            conn = connect(self.connection)
            conn.execute(f"LISTEN {NEW_TAKES_CHANNEL}")
            conn.execute(f"LISTEN {CHANGED_TAKES_CHANNEL}")
            if self.last_id is None:
                row = conn.execute("SELECT coalesce(max(id), 0) FROM takes").fetchone()
                self.last_id = int(row[0])
        except (TeamError, psycopg.Error) as err:
            problem = err if isinstance(err, TeamError) else reworded(err, self.connection)
            self._gone(problem)
            return None
        self._conn, self.notice = conn, None
        return conn

    def _gone(self, problem: TeamError) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # already broken
                pass
        self._conn = None
        self._next_try = time.monotonic() + RETRY_S
        if self.notice is None:
            self.notice = str(problem) if isinstance(problem, TeamUnreachable) else \
                f"{problem}".rstrip(".") + "; watching again in a moment."
            log.info("Team watcher: %s", self.notice)

    def poll(self, timeout: float = 1.0) -> list[TeamEntry]:
        """Wait up to `timeout` seconds for new takes; those published since the last call,
        oldest first ([] on a timeout, or while the server is away)."""
        conn = self._listening()
        if conn is None:
            time.sleep(timeout)  # the server is away: the caller's loop paces the retries
            return []
        try:
            woke = False
            for note in conn.notifies(timeout=timeout, stop_after=1):
                woke = True
                self._note_changed(note)
            if not woke:
                return []
            # Gather what else arrived with it, without waiting.
            for note in conn.notifies(timeout=0.0):
                self._note_changed(note)
            fresh = records.newer_than(conn, self.last_id or 0, self.designer)
        except psycopg.Error as err:
            self._gone(reworded(err, self.connection))
            return []
        if fresh:
            self.last_id = fresh[-1].id
        return fresh

    def _note_changed(self, note: psycopg_types.Notify) -> None:
        """Keep the take id a change notification names. Any login may NOTIFY any channel
        (PostgreSQL has no grant for it), so a payload is only a hint: one that is not a take
        id as the server's trigger writes it ('²', 5,000 digits) is ignored, never parsed."""
        payload = note.payload
        if (note.channel == CHANGED_TAKES_CHANNEL and payload.isascii() and payload.isdigit()
                and len(payload) <= MAX_ID_DIGITS):
            self.changed.add(int(payload))

    def __iter__(self) -> Iterator[TeamEntry]:
        """New takes as they come, until `close`."""
        while not self._closed:
            yield from self.poll(1.0)

    def close(self) -> None:
        self._closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass
