"""The window's Library page - the local library (app.library) and the team library's source
(app.team) - with the two controllers that drive it, built when first used or right after the
window's first paint (app.shell.studio). Neither source is on screen when the window opens, and
their modules (the library browser, the team library's client and what it imports) need not
load before the window paints: that was a fifth of the time to the first frame (issue 32).

Object names are the panels' own (libraryPanel, librarySources, teamPanel, ...): tests and
assistive tools find them once the page is built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.library.controller import LibraryController
from app.library.inspector_session import SessionFacts
from app.library.panel import LibraryPanel
from app.team.controller import TeamController
from app.team.panel import TeamPanel
from app.team.sources import LibrarySources

if TYPE_CHECKING:
    from app.shell.main_window import MainWindow
    from app.shell.studio import Studio


@dataclass(frozen=True)
class LibraryPage:
    """The page's panels (`sources` is the page: the Local / Team toggle over both) and its
    controllers."""

    panel: LibraryPanel
    team_panel: TeamPanel
    sources: LibrarySources
    controller: LibraryController
    team: TeamController


class LibraryPageParts:
    """Builds the page in three parts - the local source, the team source with the toggle, the
    controllers - each short enough for one turn of the event loop (`next_part`), or all that
    remain at once (`finish`). The page goes into its tab with its controllers, never before:
    what can be found in the window by name works. The controllers are handed studio's
    services; `open_library` opens the local library on the team thread."""

    def __init__(self, window: MainWindow, studio: Studio,
                 open_library: Callable[[], object]) -> None:
        self.window = window
        self.studio = studio
        self.open_library = open_library
        self.panel: LibraryPanel | None = None
        self.team_panel: TeamPanel | None = None
        self.sources: LibrarySources | None = None
        self.page: LibraryPage | None = None

    def next_part(self) -> LibraryPage | None:
        """Build the next part; the page once it is whole."""
        if self.panel is None:
            self.panel = LibraryPanel()
        elif self.sources is None:
            self.team_panel = TeamPanel()
            self.sources = LibrarySources(self.panel, self.team_panel)
        elif self.page is None:
            page = self._controllers(self.panel, self.team_panel, self.sources)
            self.window.install_library_page(page.sources)
            self.page = page
        return self.page

    def finish(self) -> LibraryPage:
        while self.next_part() is None:
            pass
        assert self.page is not None
        return self.page

    def _controllers(self, panel: LibraryPanel, team_panel: TeamPanel | None,
                     sources: LibrarySources) -> LibraryPage:
        assert team_panel is not None
        window, studio = self.window, self.studio
        controller = LibraryController(
            panel, window.generation_panel, studio.notifier, studio.session, studio.gpu,
            studio.library, studio, player=studio.player,
            file_for=studio.export_controller.file_for)
        # the Session tab's facts of its selected take: the Library inspector's words
        SessionFacts(window.session_panel.facts, studio.session, studio.library,
                     controller.readings, controller)
        team = TeamController(sources, panel, window.team_progress, studio.notifier,
                              studio.session, self.open_library, studio)
        return LibraryPage(panel, team_panel, sources, controller, team)
