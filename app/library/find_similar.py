"""Find similar on the Library page: the takes that sound most like a take (of the session or the
library) or like an audio file dropped on the search box, listed closest first with how alike
each sounds (the Match column), until the user searches by words again or presses Show all.

The search runs on its own thread (app.library.sound_search); the embedding pass over takes
kept before sound search shows its progress under the table.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from app.common.expected_errors import LIBRARY_ERRORS
from app.common.library_access import UnavailableLibrary
from app.common.notifier import Notifier
from app.common.session_take import Take
from app.library.panel import LibraryPanel
from app.library.sound_search import SoundAnswer, SoundQuery, SoundSearch
from engines.errors import StudioError

log = logging.getLogger(__name__)

NO_LIBRARY = "The sound library is not open, so there is nothing to search by sound."


def _quoted(text: str, chars: int = 40) -> str:
    short = text if len(text) <= chars else text[:chars - 1].rstrip() + "\u2026"
    return f"\u201c{short}\u201d"


class SimilarResults(QObject):
    """The sound search as the Library page shows it. `active`: its results are listed."""

    shown = Signal()  # a search started: the window shows the Library page

    def __init__(self, panel: LibraryPanel, notifier: Notifier, library,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.panel = panel
        self.notifier = notifier
        self.library = library
        self.search = SoundSearch(self)
        self.active = False
        self.label = ""
        self.similarity: dict[int, float] = {}
        self._waiting: SoundQuery | None = None
        self.search.progress.connect(self._progress)
        self.search.answered.connect(self._answered)
        self.search.failed.connect(self._failed)
        panel.search_edit.fileDropped.connect(self.like_file)
        panel.show_all_button.clicked.connect(self.leave)

    # ------------------------------------------------------------------ asking
    def like_record(self, record) -> SoundQuery | None:
        if record is None:
            self.notifier.error("Select a take to find the takes that sound like it.")
            return None
        name = record.name or record.prompt or "(empty prompt)"
        return self._ask(f"take #{record.id} {_quoted(name)}", take_id=record.id)

    def like_take(self, take: Take | None) -> SoundQuery | None:
        """A session take: by its library row when it has one, else by its audio."""
        if take is None:
            self.notifier.error("Select a take to find the takes that sound like it.")
            return None
        if take.library_id is not None:
            return self._ask(f"take #{take.library_id} {_quoted(take.title())}",
                             take_id=take.library_id)
        return self._ask(_quoted(take.title()), audio=take.float_audio())

    def like_file(self, path: str) -> SoundQuery | None:
        return self._ask(_quoted(Path(path).name), path=Path(path))

    def _ask(self, label: str, **what) -> SoundQuery | None:
        if isinstance(self.library, UnavailableLibrary):
            self.notifier.error(NO_LIBRARY)
            return None
        query = self.search.ask(label, **what)
        if query is None:
            return None
        self._waiting = query
        self.notifier.status(f"Finding the takes that sound like {label}...")
        self.shown.emit()  # where the results (and a first search's progress) appear
        return query

    @property
    def busy(self) -> bool:
        return self._waiting is not None

    # ------------------------------------------------------------------ answers
    def _progress(self, done: int, total: int) -> None:
        bar = self.panel.sound_progress
        if done >= total:
            bar.hide()
            return
        bar.show()
        bar.setRange(0, total)
        bar.setValue(done)

    def _answered(self, answer: SoundAnswer) -> None:
        if self._waiting is None or answer.query.serial != self._waiting.serial:
            return  # an older search: a newer one was asked meanwhile
        self._waiting = None
        self.panel.sound_progress.hide()
        self.active = True
        self.label = answer.query.label
        self.similarity = {found.record.id: found.similarity for found in answer.found}
        self._show([found.record for found in answer.found])
        if answer.found:
            best = answer.found[0]
            self.notifier.status(f"Closest to {self.label}: take #{best.record.id}, "
                                 f"{best.similarity_text}.")
        else:
            self.notifier.status("No other take in the library to compare with yet.")

    def _failed(self, query: SoundQuery, error: BaseException) -> None:
        if self._waiting is None or query.serial != self._waiting.serial:
            return
        self._waiting = None
        self.panel.sound_progress.hide()
        self.notifier.failed(f"Could not search by the sound of {query.label}", error)

    def reload(self) -> None:
        """The library changed (a rating, a rename, a delete): the same results, read again;
        takes gone to the trash meanwhile are left out."""
        records = []
        for take_id in self.similarity:
            try:
                record = self.library.get(take_id)
            except StudioError:
                continue
            if not record.deleted:
                records.append(record)
        self._show(records)

    def _show(self, records: list) -> None:
        panel = self.panel
        panel.show_sound_search(True)
        panel.model.set_records(records, self.similarity)
        try:
            total = self.library.count()
        except LIBRARY_ERRORS:  # the sentence goes without the total
            log.info("could not count the library", exc_info=True)
            total = None
        of = f" ({total} take{'s' if total != 1 else ''} in the library)" \
            if total is not None else ""
        count = len(records)
        panel.count_label.setText(
            f"The {count} take{'s' if count != 1 else ''} that sound most like {self.label}, "
            f"closest first{of}.")

    def leave(self) -> None:
        """Back to the library as the search box and filters describe it."""
        if not self.active:
            return
        self.active = False
        self.similarity = {}
        self.panel.show_sound_search(False)
        self.panel.searchChanged.emit()

    def shutdown(self) -> None:
        self.search.shutdown()
