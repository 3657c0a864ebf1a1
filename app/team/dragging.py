"""Team takes dragged out of the Team source as files: a drag cannot wait for the network, so
the selected rows' sounds are fetched ahead on the team thread (app.team.jobs.drag_copy: into
the data folder, under the names the delivery layer gave them, checked by SHA-256), and a drag
hands out the copies made. A row whose copy is not here yet is asked for, and one sentence
says to drag it again in a moment.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QMimeData, QObject, QTimer, QUrl

from app.common.background_jobs import JobOutcome
from app.common.notifier import Notifier
from app.team import jobs
from app.team.panel import TeamPanel
from app.team.thread import TeamThread
from engines.team.entries import TeamEntry
from engines.team.errors import TeamUnreachable

COPY = "copy"
PREFETCH = 8  # selected team takes fetched ahead of a drag
PREFETCH_PAUSE_MS = 150


class TeamDragCopies(QObject):
    def __init__(self, panel: TeamPanel, thread: TeamThread, notifier: Notifier,
                 lost: Callable[[str], bool], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.panel = panel
        self.thread = thread
        self.notifier = notifier
        self.lost = lost  # TeamPresence.lost: the server away is said once
        self.copies: dict[int, Path] = {}  # team take id -> its file here
        self.generation = 0  # the controller's: copies of an earlier line are dropped
        self._fetching: set[int] = set()
        self._timer = QTimer(self, singleShot=True, interval=PREFETCH_PAUSE_MS)
        self._timer.timeout.connect(self._prefetch)
        panel.model.drag_source = self.mime_for_entries
        panel.view.selectionModel().selectionChanged.connect(lambda *_args: self._timer.start())
        thread.done.connect(self._done)

    def forget(self, generation: int) -> None:
        """Another team library is in use: its takes are others."""
        self.generation = generation
        self.copies.clear()
        self._fetching.clear()

    def mime_for_entries(self, entries: list[TeamEntry]) -> QMimeData | None:
        """File URLs of the team takes' copies; None while one is being fetched. Called from
        Qt's drag machinery, so nothing may escape from here."""
        try:
            missing = [entry.id for entry in entries if not self.ready(entry.id)]
            if missing:
                for take_id in missing:
                    self.fetch(take_id)
                self.notifier.status(f"Fetching team take #{missing[0]} from the team library; "
                                     "drag it again in a moment.", 4000)
                return None
            data = QMimeData()
            data.setUrls([QUrl.fromLocalFile(str(self.copies[e.id])) for e in entries])
            return data
        except Exception as exc:  # noqa: BLE001 - inside Qt's drag: an escape aborts the app
            self.notifier.failed("Could not drag the team takes", exc)
            return None

    def ready(self, take_id: int) -> bool:
        path = self.copies.get(take_id)
        return path is not None and path.is_file()

    def fetch(self, take_id: int) -> None:
        if take_id in self._fetching:
            return
        self._fetching.add(take_id)
        self.thread.submit((COPY, self.generation, take_id),
                           lambda context: jobs.drag_copy(context, take_id))

    def _prefetch(self) -> None:
        for entry in self.panel.selected_entries()[:PREFETCH]:
            if not self.ready(entry.id):
                self.fetch(entry.id)

    def _done(self, outcome: JobOutcome) -> None:
        key = outcome.key
        if not (isinstance(key, tuple) and key[0] == COPY and key[1] == self.generation):
            return
        take_id = key[2]
        self._fetching.discard(take_id)
        if isinstance(outcome.error, TeamUnreachable):
            self.lost(str(outcome.error))
        elif outcome.error is not None:
            self.notifier.failed(f"Could not fetch team take #{take_id}", outcome.error)
        else:
            self.copies[take_id] = outcome.value
