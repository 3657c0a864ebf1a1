"""Publish to team library: local takes (the session's current take, the Library's selected
rows) go to the team library on the team thread, with the progress in the status bar and one
sentence when it is done or fails. The server away, they wait in the outbox (engines.team):
the timer sends what waits every SEND_EVERY_MS, and at once when the server is back.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, QTimer, Signal

from app.common.background_jobs import JobOutcome
from app.common.notifier import Notifier
from app.team import jobs
from app.team.presence import TeamPresence
from app.team.progress import PublishProgress
from app.team.thread import NOT_SET_UP, TeamThread
from engines.team.errors import TeamUnreachable
from engines.team.service import PublishReport

log = logging.getLogger(__name__)

PUBLISH, SEND = "publish", "send"
SEND_EVERY_MS = 5000  # the engine's watcher retries a lost server as often
BUSY = ("Takes are being published to the team library; publish these when the progress "
        "bar is gone.")


class TeamPublishing(QObject):
    published = Signal()  # the team library has takes from here it did not have

    def __init__(self, thread: TeamThread, progress: PublishProgress, presence: TeamPresence,
                 notifier: Notifier, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.thread = thread
        self.progress = progress
        self.presence = presence
        self.notifier = notifier
        self.enabled = False  # a team library is set
        self.running = False  # a publish is under way
        self._sending = False
        self._last_problem: str | None = None  # the timer's failure, said once
        self.timer = QTimer(self, interval=SEND_EVERY_MS)
        self.timer.timeout.connect(self.send_waiting)
        thread.done.connect(self._done)
        thread.progress.connect(self._progress)
        presence.back.connect(self.send_waiting)

    def set_enabled(self, on: bool) -> None:
        self.enabled = on
        self._last_problem = None
        if on:
            self.timer.start()
            self.send_waiting()  # what waited from an earlier run
        else:
            self.timer.stop()

    def publish(self, take_ids: list[int], designer: str) -> bool:
        """Publish local library takes; False (and one sentence) when it cannot start."""
        if not self.enabled:
            self.notifier.error(NOT_SET_UP)
            return False
        if self.running:
            self.notifier.status(BUSY)
            return False
        ids = list(dict.fromkeys(take_ids))
        self.running = True
        self.progress.start(len(ids))
        self.thread.submit(PUBLISH, lambda context: jobs.publish_takes(context, ids, designer))
        self.notifier.status(f"Publishing {len(ids)} take(s) to the team library...")
        return True

    def send_waiting(self) -> None:
        """Send what waits in the outbox (nothing is asked of the server when nothing waits)."""
        if not self.enabled or self._sending or self.running:
            return
        self._sending = True
        self.thread.submit(SEND, jobs.send_waiting)

    # ------------------------------------------------------------------ answers
    def _progress(self, key: object, done: int, total: int) -> None:
        if key == PUBLISH:
            self.progress.step(done, total)

    def _done(self, outcome: JobOutcome) -> None:
        if outcome.key == PUBLISH:
            self.running = False
            self.progress.finish()
            self._published(outcome)
        elif outcome.key == SEND:
            self._sending = False
            self._sent(outcome)

    def _published(self, outcome: JobOutcome) -> None:
        if outcome.error is not None:
            if isinstance(outcome.error, TeamUnreachable):
                self.presence.lost(str(outcome.error))
            else:
                self.notifier.failed("Could not publish to the team library", outcome.error)
            return
        report: PublishReport = outcome.value
        sent = len(report.published)
        if report.unreachable is not None:
            if not self.presence.lost(report.unreachable):
                self.notifier.status(f"{report.waiting} take(s) wait in the outbox for the team "
                                     "library; they are sent when it answers again.")
        else:
            self.presence.reached()
        if report.problems:
            first = report.problems[0].rstrip(".")
            others = f"; {sent} other take(s) were published" if sent else ""
            self.notifier.error(f"{first}{others}.")
        elif report.notices:  # a take kept another designer's labels: say whose
            self.notifier.status(report.notices[0], 10000)
        elif report.unreachable is None:
            new = sum(1 for _local, _team, fresh in report.published if fresh)
            relabelled = f", {len(report.relabelled)} relabelled" if report.relabelled else ""
            self.notifier.status(f"Published {sent} take(s) to the team library ({new} new"
                                 f"{relabelled}).", 5000)
        if sent:
            self.published.emit()

    def _sent(self, outcome: JobOutcome) -> None:
        if outcome.error is not None:
            problem = str(outcome.error)
            if isinstance(outcome.error, TeamUnreachable):
                self.presence.lost(problem)
            elif problem != self._last_problem:  # the timer must not repeat it every tick
                self._last_problem = problem
                self.notifier.failed("Could not send the takes waiting for the team library",
                                     outcome.error)
            return
        report: PublishReport | None = outcome.value
        if report is None:
            return
        if report.unreachable is not None:
            self.presence.lost(report.unreachable)
            return
        self.presence.reached()
        if report.published:
            self.notifier.status(f"Sent {len(report.published)} take(s) that waited in the "
                                 "outbox to the team library.", 5000)
            self.published.emit()
        for problem in report.problems:
            log.warning("a take in the team outbox could not be sent: %s", problem)
        if report.problems and report.problems[0] != self._last_problem:
            self._last_problem = report.problems[0]  # it stays queued: said once, not per tick
            self.notifier.error(report.problems[0])
