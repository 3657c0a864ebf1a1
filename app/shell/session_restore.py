"""A restart brings the session back: the takes of the takes list (from the library, where every
take is kept), in their order, with the selected one selected, the init take and its painted
spans, the prompt and every generation panel setting (app.common.session_memory keeps them in
the data folder between runs).

The settings are put back as the window is built (a few widget values, before anyone can type);
the takes after the window's first paint (app.shell.studio runs `restore_takes` as a step after
it), a few per turn of the event loop, so reading their audio never holds up a frame. A take
deleted from the library meanwhile (or whose audio is gone) is left out, and one notice says
how many were. A take made before the restore finished keeps its place and its selection.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer

from app.common.expected_errors import LIBRARY_ERRORS
from app.common.library_access import UnavailableLibrary
from app.common.library_take import take_from_record
from app.common.notifier import Notifier
from app.common.session import TakeModel
from app.common.session_memory import SessionMemory, load_session, save_session
from app.generate.panel import GenerationPanel
from app.generate.panel_settings import apply_panel_settings, panel_settings

log = logging.getLogger(__name__)

TAKES_PER_TURN = 4  # takes read from the library between two turns of the event loop
TURN_MS = 0
# Selecting a take loads it into the player, which waits for the audio output's look-up
# (app.common.output_device): the selection waits for it instead, polling, up to a limit.
AUDIO_POLL_MS = 20
AUDIO_WAIT_POLLS = 150


def missing_words(count: int) -> str:
    """The one notice for takes of the last session that are gone from the library."""
    takes, verb, them = ("1 take", "is", "it") if count == 1 else (f"{count} takes", "are",
                                                                    "them")
    return (f"{takes} of the last session {verb} no longer in the library (deleted, or its "
            f"audio file is gone), so the session came back without {them}.")


class SessionRestore(QObject):
    """Brings last time's session back (`restore_settings`, then `restore_takes`) and
    remembers this one as the window closes (`remember`)."""

    def __init__(self, panel: GenerationPanel, session: TakeModel, library, notifier: Notifier,
                 audio_known: Callable[[], bool] = lambda: True,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.audio_known = audio_known  # the player's output was looked up (Player.known)
        self._audio_polls = 0
        self.panel = panel
        self.session = session
        self.library = library
        self.notifier = notifier
        self.memory = SessionMemory()
        self._queue: list[int] = []  # library ids still to bring back
        self._missing = 0
        self._stopped = False
        self.settled = False  # every remembered take was brought back or left out
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(TURN_MS)
        self._timer.timeout.connect(self._next_takes)

    # ------------------------------------------------------------------ coming back
    def restore_settings(self) -> None:
        """Read last time's session and put the generation panel's settings back."""
        self.memory = load_session()  # never raises: a damaged file is an empty session
        try:
            apply_panel_settings(self.panel, self.memory.settings)
        except (TypeError, ValueError, OverflowError):  # a value edited by hand: skipped
            log.warning("could not restore the session's settings", exc_info=True)

    def restore_takes(self) -> None:
        """Start bringing the remembered takes back (a few per turn)."""
        if isinstance(self.library, UnavailableLibrary):
            self.settled = True
            return  # the library's own notice says why; the ids stay remembered (`remember`)
        self._queue = list(self.memory.take_ids)
        self._missing = 0
        if self._queue:
            self._timer.start()
        else:
            self.settled = True

    def _next_takes(self) -> None:
        if self._stopped:
            return
        for _ in range(min(TAKES_PER_TURN, len(self._queue))):
            self._bring_back(self._queue.pop(0))
        if self._queue:
            self._timer.start()
        else:
            self._finished()

    def _bring_back(self, take_id: int) -> None:
        if self.session.for_library_id(take_id) is not None:
            return
        try:
            record = self.library.get(take_id)
            if record.deleted:
                raise LookupError(take_id)
            pcm = self.library.load_audio(take_id)
        except (*LIBRARY_ERRORS, LookupError):
            log.info("take #%s of the last session was left out", take_id, exc_info=True)
            self._missing += 1
            return
        self.session.add_take(take_from_record(record, pcm), select=False)

    def _finished(self) -> None:
        if not self.audio_known() and self._audio_polls < AUDIO_WAIT_POLLS:
            self._audio_polls += 1
            QTimer.singleShot(AUDIO_POLL_MS, self, self._finished)
            return
        if self._stopped:
            return
        memory, session = self.memory, self.session
        init = session.for_library_id(memory.init_id) if memory.init_id is not None else None
        if init is not None and session.init_take is None:
            session.set_init(init)
            session.restore_spans(memory.spans)
        selected = session.for_library_id(memory.selected) if memory.selected else None
        if session.current_take() is None:  # a take made meanwhile stays selected
            if selected is not None:
                session.select(selected)
            elif session.list.count():
                session.list.setCurrentRow(session.list.count() - 1)
        if self._missing:
            self.notifier.status(missing_words(self._missing))
        self.settled = True

    # ------------------------------------------------------------------ going away
    def remember(self) -> bool:
        """Write this session for the next run (called as the window closes)."""
        self._stopped = True
        self._timer.stop()
        session = self.session
        ids = [take.library_id for take in (session.take_for(session.list.item(row))
                                            for row in range(session.list.count()))
               if take is not None and take.library_id is not None]
        # not brought back yet (the window closed at once, or the library would not open):
        # still remembered, ahead of what this run made
        waiting = (self.memory.take_ids if isinstance(self.library, UnavailableLibrary)
                   else self._queue)
        ids = [*(i for i in waiting if i not in ids), *ids]
        current, init = session.current_take(), session.init_take
        memory = SessionMemory(
            take_ids=ids,
            selected=current.library_id if current is not None else None,
            init_id=init.library_id if init is not None else None,
            spans=[(float(a), float(b)) for a, b in session.spans] if init is not None else [],
            settings=panel_settings(self.panel))
        return save_session(memory)
