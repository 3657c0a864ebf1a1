"""The Session tab's facts of the selected take (`sessionFacts`): the same facts and words as the
Library page's inspector (app.library.inspector_facts), from the library's row when the take
is kept there (its labels, its file), else from the take itself. Its loudness is measured from
the session's audio, off the GUI thread (app.library.inspector_loudness). The Take page already
shows the take's waveform, so only the words are here."""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject

from app.common.expected_errors import LIBRARY_ERRORS
from app.common.session import TakeModel
from app.common.session_take import Take
from app.finish.render import raw_audio
from app.library.inspector_facts import fact_rows, facts_of_record, facts_of_take
from app.library.inspector_loudness import LoudnessReadings
from app.widgets.facts_view import FactsView
from engines.constants import SAMPLE_RATE

log = logging.getLogger(__name__)


def _key(take: Take) -> tuple:
    return ("session", take.take_id)


class SessionFacts(QObject):
    def __init__(self, view: FactsView, session: TakeModel, library,
                 readings: LoudnessReadings, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.view = view
        self.session = session
        self.library = library
        self.readings = readings
        self._stopped = False
        session.list.currentItemChanged.connect(lambda *_args: self.show_current())
        session.list.itemChanged.connect(lambda *_args: self.show_current())  # a rename
        session.auditionChanged.connect(lambda *_args: self.show_current())  # finishing
        readings.measured.connect(self._measured)
        readings.stopped.connect(self._stop)
        self.show_current()

    def _stop(self) -> None:
        # the window is going away and the library is closed next: the session's last changes
        # (its list emptied as the window goes) must not read a closed library
        self._stopped = True

    def show_current(self) -> None:
        if self._stopped:
            return
        take = self.session.current_take()
        if take is None:
            self.view.show_rows([])
            return
        key = _key(take)
        pcm = take.pcm
        self.readings.request(key, lambda: (raw_audio(pcm), SAMPLE_RATE))
        figures = self.readings.figures(key)
        record = self._record(take)
        facts = facts_of_record(record, figures) if record is not None \
            else facts_of_take(take, figures)
        if take.finishing is not None:  # the session's chain, which may be newer than kept
            facts.finishing = take.finishing.to_dict()
            facts.finished_figures = getattr(take.finished, "after", None)
        facts.title = take.title()
        self.view.show_rows(fact_rows(facts))

    def _record(self, take: Take):
        if take.library_id is None or self.library is None:
            return None
        try:
            return self.library.get(take.library_id)
        except LIBRARY_ERRORS:  # deleted from the library meanwhile: the take's own facts
            log.info("take #%s is not in the library", take.library_id, exc_info=True)
            return None

    def _measured(self, key) -> None:
        take = self.session.current_take()
        if take is not None and key == _key(take):
            self.show_current()
