"""The one thread the window uses the team library from. A TeamLibrary (engines.team.service)
and a ClipLibrary of its own (a sqlite connection serves the thread that opened it) are made
there on first use and live there until the window closes.

Jobs run one after another, in the order submitted: a publish, a search, a copy for dragging
and the Test connection of Settings never overlap on the one connection. Each answer comes
back on the GUI thread by a queued signal, as app.common.background_jobs' JobOutcome tagged
with the key it was submitted with; a job may report progress on the way.

The GUI thread never waits here, except as the window closes: `shutdown` drops what is queued,
lets the running job end (a connection attempt gives up after
engines.team.session.CONNECT_TIMEOUT_S seconds) and closes both libraries on this thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import QObject, QThread, Signal, Slot

from app.common.background_jobs import JobOutcome
from app.common.threads import STOP_WAIT_MS, stop_thread
from engines.store.library import ClipLibrary
from engines.team.connection import parse_line
from engines.team.errors import TeamError
from engines.team.service import TeamLibrary

log = logging.getLogger(__name__)

NOT_SET_UP = ("No team library is set up; paste the connection line your team's server "
              "printed into Settings > Team library...")
CLOSE = "close"


class TeamJobContext:
    """What a job is handed on the team thread: the team library of the line in use (made on
    first use), the local library, and a way to say how far it is."""

    def __init__(self, make_library: Callable[[], ClipLibrary],
                 report: Callable[[int, int], None], closing: Callable[[], bool]) -> None:
        self.line = ""
        self.closing = closing  # whether the window is closing: a long job stops early
        self.designer = ""
        self._make_library = make_library
        self._report = report
        self._team: TeamLibrary | None = None
        self._library: ClipLibrary | None = None

    def use(self, line: str, designer: str) -> None:
        """From now on, the team library at `line` (none when ""), as `designer`."""
        if (line, designer) != (self.line, self.designer):
            self._close_team()
        self.line, self.designer = line, designer

    def team(self) -> TeamLibrary:
        if self._team is None:
            if not self.line:
                raise TeamError(NOT_SET_UP)
            self._team = TeamLibrary(parse_line(self.line), self.designer)
        return self._team

    def library(self) -> ClipLibrary:
        if self._library is None:
            self._library = self._make_library()
        return self._library

    def progress(self, done: int, total: int) -> None:
        self._report(done, total)

    def _close_team(self) -> None:
        team, self._team = self._team, None
        if team is not None:
            team.close()

    def close(self) -> None:
        for step in (self._close_team, lambda: self._library and self._library.close()):
            try:
                step()
            except Exception:  # noqa: BLE001 - closing goes on; a connection dies with us
                log.warning("closing the team thread's libraries failed", exc_info=True)
        self._library = None


class _TeamJobRunner(QObject):
    """Lives on the team thread and runs what arrives, in order."""

    done = Signal(object)  # JobOutcome
    progress = Signal(object, int, int)  # key, done, total

    def __init__(self, make_library: Callable[[], ClipLibrary]) -> None:
        super().__init__()
        self.closing = False  # set from the GUI thread: what is still queued is dropped
        self._key: object = None
        self.context = TeamJobContext(make_library, self._report, lambda: self.closing)

    def _report(self, done: int, total: int) -> None:
        self.progress.emit(self._key, done, total)

    @Slot(object)
    def run(self, job: tuple[object, Callable[[TeamJobContext], object]]) -> None:
        key, fn = job
        if key == CLOSE:
            self.context.close()
            QThread.currentThread().quit()
            return
        if self.closing:
            return
        self._key = key
        try:
            outcome = JobOutcome(key, value=fn(self.context))
        except BaseException as exc:  # noqa: BLE001 - handed to the GUI thread as one sentence
            log.info("team job %r failed", key, exc_info=True)
            outcome = JobOutcome(key, error=exc)
        try:
            self.done.emit(outcome)
        except RuntimeError:  # the window closed meanwhile: nobody is waiting
            log.debug("team job %r finished after shutdown", key)


class TeamThread(QObject):
    """The thread, started by the first job (a window with no team library starts none)."""

    done = Signal(object)  # JobOutcome, on the GUI thread
    progress = Signal(object, int, int)  # key, done, total, on the GUI thread
    _requested = Signal(object)

    def __init__(self, make_library: Callable[[], ClipLibrary],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._make_library = make_library
        self._thread: QThread | None = None
        self._runner: _TeamJobRunner | None = None
        self._closed = False

    def _start(self) -> None:
        thread = QThread()
        thread.setObjectName("team library")
        runner = _TeamJobRunner(self._make_library)
        runner.moveToThread(thread)
        runner.done.connect(self.done)
        runner.progress.connect(self.progress)
        self._requested.connect(runner.run)
        thread.finished.connect(runner.deleteLater)
        self._thread, self._runner = thread, runner
        thread.start()

    @property
    def started(self) -> bool:
        return self._thread is not None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.isRunning()

    def submit(self, key: object, fn: Callable[[TeamJobContext], object]) -> None:
        """Run `fn(context)` on the team thread after what is queued; nothing once shut down."""
        if self._closed:
            return
        if self._thread is None:
            self._start()
        self._requested.emit((key, fn))

    def shutdown(self, timeout_ms: int = STOP_WAIT_MS) -> None:
        """Drop queued jobs, wait for the running one, close the libraries; idempotent."""
        if self._closed:
            return
        self._closed = True
        thread, runner = self._thread, self._runner
        if thread is None or runner is None:
            return
        runner.closing = True
        self._requested.emit((CLOSE, None))  # runs after the current job, then ends the thread
        if not thread.wait(timeout_ms):
            stop_thread(thread, 0)
