"""Whether the team's server answers, said once each way: the first sentence of a server that
cannot be reached goes to the status bar (whoever met it first: a publish, a search, the
watcher, the outbox timer), and stays on the Team source until the server answers again;
then one sentence says it is back, and `back` lets the outbox be sent.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, Signal

from app.common.notifier import Notifier

log = logging.getLogger(__name__)

BACK = "The team library answers again; takes waiting in the outbox are sent now."


class TeamPresence(QObject):
    changed = Signal(str)  # what the Team source says about the server ("" while it answers)
    back = Signal()  # the server answers again after it was away

    def __init__(self, notifier: Notifier, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.notifier = notifier
        self.away_sentence: str | None = None

    @property
    def away(self) -> bool:
        return self.away_sentence is not None

    def lost(self, sentence: str) -> bool:
        """The server did not answer: say `sentence` unless the user was told already; True
        when said now."""
        if self.away_sentence is not None:
            log.debug("team library still away: %s", sentence)
            return False
        self.away_sentence = sentence
        self.notifier.error(sentence)
        self.changed.emit(sentence)
        return True

    def reached(self) -> None:
        """The server answered."""
        if self.away_sentence is None:
            return
        self.away_sentence = None
        self.notifier.status(BACK, 5000)
        self.changed.emit("")
        self.back.emit()

    def reset(self) -> None:
        """Another team library was set: nothing is known about it yet."""
        self.away_sentence = None
        self.changed.emit("")
