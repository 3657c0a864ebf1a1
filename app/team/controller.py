"""The team library in the window: Settings > Team library... (the connection line, kept in the
window's settings; Test connection), Publish to team library (app.team.publishing), the Team
source of the Library tab (browse, search, Find similar, drag out), and other designers' takes
arriving while it is open (app.team.watch).

Every call to the team library runs on the team thread (app.team.thread) or the watcher's; the
GUI thread only submits and shows answers. The server unreachable, the window keeps working on
the local library, says so once (app.team.presence), and sends what waited when it is back.

The line in use: the one kept in Settings, else $SA3_STUDIO_TEAM (as the command line reads
it), else none (the Team source says how to set one).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from PySide6.QtCore import QObject

from app.common.background_jobs import JobOutcome
from app.common.expected_errors import SETTINGS_ERRORS
from app.common.notifier import Notifier, user_sentence
from app.common.remedy_words import for_window
from app.common.session import TakeModel
from app.library.panel import LibraryPanel
from app.team import jobs
from app.team.dragging import TeamDragCopies
from app.team.presence import TeamPresence
from app.team.progress import PublishProgress
from app.team.publishing import TeamPublishing
from app.team.settings_dialog import TeamSettingsDialog
from app.team.sources import LibrarySources
from app.team.thread import NOT_SET_UP, TeamThread
from app.team.watch import TeamWatchThread
from engines import paths
from engines import settings as stored_settings
from engines.catalog import MODEL_SETS
from engines.delivery.labels import DESIGNER_SETTING, studio_names
from engines.store.library import ClipLibrary
from engines.team.connection import (
    TEAM_ENV,
    TEAM_SETTING,
    TeamConnection,
    designer_name,
    parse_line,
)
from engines.team.entries import TeamEntry
from engines.team.errors import TeamError, TeamUnreachable

log = logging.getLogger(__name__)

LABELS_PLACE = "Settings > Labels and UCS list..."


def window_line() -> str:
    """The connection line the window uses: Settings', else $SA3_STUDIO_TEAM, else ""."""
    try:
        value = stored_settings.read_settings(paths.data_dir()).get(TEAM_SETTING)
    except SETTINGS_ERRORS:  # an unreadable data folder: no team library
        log.warning("could not read the team library setting", exc_info=True)
        value = None
    line = value.strip() if isinstance(value, str) else ""
    return line or os.environ.get(TEAM_ENV, "").strip()


class TeamController(QObject):
    """`sources` holds the Team panel and the toggle; `library_panel` is the Local source,
    whose selected rows Publish to team publishes; `session` gives Take > Publish its take;
    `make_library` opens the local library on the team thread."""

    def __init__(self, sources: LibrarySources, library_panel: LibraryPanel,
                 progress: PublishProgress, notifier: Notifier, session: TakeModel,
                 make_library: Callable[[], ClipLibrary], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.sources = sources
        self.panel = panel = sources.team_panel
        self.library_panel = library_panel
        self.notifier = notifier
        self.session = session
        self.line = ""
        self.connection: TeamConnection | None = None
        self.designer = ""
        self.like: TeamEntry | None = None  # Find similar: the take the list is like
        self.dialog: TeamSettingsDialog | None = None
        self._generation = 0  # counts lines set: answers about an earlier one are dropped
        self._serial = 0  # counts searches: only the newest one's answer is shown
        self.thread = TeamThread(make_library, self)
        self.presence = TeamPresence(notifier, self)
        self.watch = TeamWatchThread(self)
        self.publishing = TeamPublishing(self.thread, progress, self.presence, notifier, self)
        self.dragging = TeamDragCopies(panel, self.thread, notifier, self.presence.lost, self)
        panel.set_models([*MODEL_SETS, "imported"])
        panel.searchChanged.connect(self.refresh)
        panel.similar_button.clicked.connect(self.find_similar)
        panel.show_all_button.clicked.connect(self.show_all)
        sources.publish_button.clicked.connect(self.publish_library_selection)
        sources.sourceChanged.connect(lambda team: self.refresh() if team else None)
        self.thread.done.connect(self._done)
        self.watch.arrived.connect(self._arrived)
        self.watch.away.connect(self.presence.lost)
        self.watch.back.connect(self.presence.reached)
        self.presence.changed.connect(lambda text: panel.show_state(text))
        self.publishing.published.connect(self.refresh)
        self.use_line(window_line())

    # ------------------------------------------------------------------ the line
    def _designer(self) -> str:
        """The designer name of Settings > Labels (else the login name); a name too long is
        said, and the login name used."""
        try:
            return designer_name()
        except SETTINGS_ERRORS as exc:  # too long, or an unreadable data folder
            self.notifier.failed("Could not read the designer name", exc)
            return "designer"

    def designer_text(self) -> str:
        try:
            named = studio_names().get(DESIGNER_SETTING, "")
        except SETTINGS_ERRORS:  # an unreadable data folder: the login name is used
            log.warning("could not read the designer name", exc_info=True)
            named = ""
        how = f"from {LABELS_PLACE}" if named else \
            f"your login name; set a designer name in {LABELS_PLACE}"
        return f"{self._designer()} ({how})"

    def use_line(self, line: str) -> None:
        """Work with the team library at `line` from now on (none when "")."""
        self.line, self.designer = line.strip(), self._designer()
        self._generation += 1
        self.connection, self.like = None, None
        self.dragging.forget(self._generation)
        self.panel.show_like(None)
        self.panel.model.set_entries([])
        self.panel.count_label.setText("")
        self.presence.reset()
        self.watch.stop(wait=False)
        line, designer = self.line, self.designer
        if line or self.thread.started:
            self.thread.submit(("use", self._generation),
                               lambda context: context.use(line, designer))
        try:
            self.connection = parse_line(line) if line else None
        except TeamError as exc:
            self.panel.show_state(self.notifier.failed("The team library is not set up", exc))
        if self.connection is None:
            if not line:
                self.panel.show_state(NOT_SET_UP)
            self.publishing.set_enabled(False)
            return
        self.panel.show_state("")
        self.watch.start(self.connection, designer)
        self.publishing.set_enabled(True)
        self.refresh()

    def open_settings(self) -> TeamSettingsDialog:
        """Settings > Team library... (not modal, so tests and assistive tools can drive it)."""
        dialog = self.dialog = TeamSettingsDialog(self.line, self.designer_text(),
                                                  self.sources.window())
        dialog.test_button.clicked.connect(lambda: self.test_connection(dialog.line()))
        dialog.buttons.accepted.connect(lambda: self.keep_line(dialog.line()) and dialog.accept())
        dialog.show()
        return dialog

    def test_connection(self, line: str) -> None:
        """Connect as `line` says, on the team thread; the answer in the dialog."""
        if self.dialog is not None:
            self.dialog.show_result("Connecting...")
        designer = self._designer()
        self.thread.submit(("test", self._generation),
                           lambda _context: jobs.check_line(line, designer))

    def keep_line(self, line: str) -> bool:
        """Keep `line` in the window's settings and use it; False (and one sentence in the
        dialog) when it is not a connection line or cannot be kept."""
        try:
            if line:
                parse_line(line)
            stored_settings.update_settings(paths.data_dir(), {TEAM_SETTING: line.strip()})
        except SETTINGS_ERRORS as exc:  # one sentence; the line in use stays
            text = self.notifier.failed("Could not keep the team connection line", exc)
            if self.dialog is not None:
                self.dialog.show_result(text)
            return False
        self.use_line(line)
        if self.connection is not None:
            self.notifier.status(f"Team library set: {self.connection.where}, publishing as "
                                 f"'{self.designer}'.", 5000)
        else:
            self.notifier.status("No team library set: the Library tab shows the local library "
                                 "only.", 5000)
        return True

    # ------------------------------------------------------------------ publishing
    def publish_current(self) -> None:
        """Take > Publish to team library: the session's current take."""
        take = self.session.current_take()
        if take is None:
            self.notifier.error("Select a take to publish it to the team library.")
        elif take.library_id is None:
            self.notifier.error(f"'{take.title()}' is not kept in the library, so it cannot be "
                                "published to the team library.")
        else:
            self.publishing.publish([take.library_id], self._designer())

    def publish_library_selection(self) -> None:
        records = self.library_panel.selected_records()
        if not records:
            self.notifier.error("Select takes in the library to publish them to the team "
                                "library.")
            return
        self.publishing.publish([record.id for record in records], self._designer())

    # ------------------------------------------------------------------ the Team source
    def refresh(self) -> None:
        """List the team takes the filters ask for (or those like `like`), on the team thread."""
        if self.connection is None:
            return
        self._serial += 1
        query = self.panel.query()
        like = self.like.id if self.like is not None else None
        self.thread.submit(("find", self._generation, self._serial),
                           lambda context: jobs.find_takes(context, query, like))

    def find_similar(self) -> None:
        entry = self.panel.current_entry()
        if entry is None:
            self.notifier.error("Select a team take to list the takes that sound like it.")
            return
        self.like = entry
        self.panel.show_like(entry)
        self.refresh()

    def show_all(self) -> None:
        self.like = None
        self.panel.show_like(None)
        self.refresh()

    def _arrived(self, entries: list[TeamEntry]) -> None:
        """Takes just published (by anyone): on top of the list, or the list asked again
        when a filter or Find similar decides what it shows."""
        if self.like is not None or self.panel.filtered():
            self.refresh()
        else:
            self.panel.model.add_newest(entries)
            self._count()
        others = [entry for entry in entries if entry.designer != self.designer]
        if others:
            self.notifier.status(f"New in the team library: '{others[-1].title()}' by "
                                 f"{others[-1].designer}.", 4000)

    def _count(self) -> None:
        shown = self.panel.model.rowCount()
        self.panel.count_label.setText(f"{shown} team take(s)" + (" (the newest)" if shown
                                       >= self.panel.query().limit else ""))

    # ------------------------------------------------------------------ answers
    def _done(self, outcome: JobOutcome) -> None:
        key = outcome.key
        if not isinstance(key, tuple) or key[1] != self._generation:
            return  # the publisher's, or about a line no longer in use
        kind = key[0]
        if kind == "find" and key[2] == self._serial:
            if outcome.error is not None:
                self._failed("Could not search the team library", outcome.error)
                return
            self.presence.reached()
            entries, left_out = outcome.value
            self.panel.model.set_entries(entries)
            self._count()
            if left_out:  # takes "more like this" could not compare: said, with the remedy
                self.notifier.status(" ".join(for_window(sentence) for sentence in left_out))
        elif kind == "test" and self.dialog is not None:
            error = outcome.error
            self.dialog.show_result(outcome.value if error is None else
                                    user_sentence("Could not connect to the team library",
                                                  error))
        elif kind == "use" and outcome.error is not None:
            self.notifier.failed("Could not set up the team library", outcome.error)

    def _failed(self, what: str, error: BaseException) -> None:
        if isinstance(error, TeamUnreachable):
            self.presence.lost(str(error))
        else:
            self.notifier.failed(what, error)

    def shutdown(self) -> None:
        """The window is closing: the timer, the watcher and the team thread stop."""
        self.publishing.timer.stop()
        self.watch.shutdown()
        self.thread.shutdown()
