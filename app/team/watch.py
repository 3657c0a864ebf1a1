"""Other designers' takes as they are published: engines.team.watcher's LISTEN/NOTIFY loop on a
thread of its own (it blocks up to POLL_S in each poll), its news delivered to the GUI thread
by queued signals: `arrived` with the new entries, `away` once when the server stops
answering (its sentence), `back` once when it answers again.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, QThread, Signal, Slot

from app.common.threads import stop_thread
from engines.team.connection import TeamConnection
from engines.team.session import CONNECT_TIMEOUT_S
from engines.team.watcher import TeamWatcher

log = logging.getLogger(__name__)

POLL_S = 0.25  # how long one poll waits for a notification: how long stopping may take
STOP_WAIT_MS = int((POLL_S + CONNECT_TIMEOUT_S + 1.0) * 1000)


class _WatchLoop(QObject):
    arrived = Signal(object)  # list[TeamEntry], oldest first
    away = Signal(str)
    back = Signal()

    def __init__(self, watcher: TeamWatcher) -> None:
        super().__init__()
        self.watcher = watcher
        self.stopping = False  # set from the GUI thread; the loop ends within POLL_S

    @Slot()
    def run(self) -> None:
        said: str | None = None
        try:
            while not self.stopping:
                fresh = self.watcher.poll(POLL_S)
                notice = self.watcher.notice
                if notice is not None and said is None:
                    self.away.emit(notice)
                elif notice is None and said is not None:
                    self.back.emit()
                said = notice
                if fresh:
                    self.arrived.emit(fresh)
        except Exception:  # noqa: BLE001 - a broken watcher stops watching; the window goes on
            log.exception("the team library watcher stopped")
        finally:
            self.watcher.close()
            QThread.currentThread().quit()


class TeamWatchThread(QObject):
    """Watches one team library at a time (`start` again for another)."""

    arrived = Signal(object)  # list[TeamEntry]
    away = Signal(str)
    back = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._thread: QThread | None = None
        self._loop: _WatchLoop | None = None
        self._retiring: set[QThread] = set()  # stopped without waiting, until they end

    @property
    def running(self) -> bool:
        """Whether a loop this started still runs (one retired without waiting, too)."""
        threads = [self._thread, *self._retiring]
        return any(thread is not None and thread.isRunning() for thread in threads)

    @property
    def listening(self) -> bool:
        """Whether the watcher has connected and knows where the takes it awaits begin."""
        loop = self._loop
        return loop is not None and loop.watcher.last_id is not None

    def start(self, connection: TeamConnection, designer: str) -> None:
        """Watch the team library at `connection` for takes published from now on."""
        self.stop(wait=False)
        loop = _WatchLoop(TeamWatcher(connection, designer))
        thread = QThread()
        thread.setObjectName("team library watcher")
        loop.moveToThread(thread)
        loop.arrived.connect(self.arrived)
        loop.away.connect(self.away)
        loop.back.connect(self.back)
        thread.started.connect(loop.run)
        thread.finished.connect(loop.deleteLater)
        self._thread, self._loop = thread, loop
        thread.start()

    def stop(self, wait: bool = True) -> None:
        """End the loop; `wait` for it (at most a poll and a connection attempt), else let it
        end on its own (a new line set in Settings must not hold the window up)."""
        thread, loop = self._thread, self._loop
        self._thread = self._loop = None
        if thread is None or loop is None:
            return
        loop.stopping = True
        for signal, slot in ((loop.arrived, self.arrived), (loop.away, self.away),
                             (loop.back, self.back)):
            signal.disconnect(slot)  # what the old loop still says is of no interest now
        if not wait:
            self._retiring.add(thread)
            thread.finished.connect(lambda: self._retiring.discard(thread))
            return
        if not thread.wait(STOP_WAIT_MS):
            stop_thread(thread, 0)

    def shutdown(self) -> None:
        """The window is closing: every loop this started has ended when this returns (or is
        left to end on its own, detached, should one hang)."""
        self.stop(wait=True)
        for thread in list(self._retiring):
            if not thread.wait(STOP_WAIT_MS):
                stop_thread(thread, 0)
        self._retiring.clear()
