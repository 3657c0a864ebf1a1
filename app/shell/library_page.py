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


def build_library_page(window: MainWindow, studio: Studio,
                       open_library: Callable[[], object]) -> LibraryPage:
    """Build the page, put it in the window's Library tab and hand its controllers the services
    they need (studio's); `open_library` opens the local library on the team thread."""
    panel, team_panel = LibraryPanel(), TeamPanel()
    sources = LibrarySources(panel, team_panel)
    window.install_library_page(sources)
    controller = LibraryController(
        panel, window.generation_panel, studio.notifier, studio.session, studio.gpu,
        studio.library, studio, player=studio.player,
        file_for=studio.export_controller.file_for)
    team = TeamController(sources, panel, window.team_progress, studio.notifier, studio.session,
                          open_library, studio)
    return LibraryPage(panel, team_panel, sources, controller, team)
