"""The main window: it composes the panels (each a view class with typed widgets, layout only)
and its menus. Behaviour lives in the feature controllers that app.shell.studio.Studio composes
and hands these panels to.

Object names (a contract for tests and assistive tools): promptEdit, negativePromptEdit,
modelCombo, decoderCombo, precisionCombo, codecTierCombo, secondsSpin, stepsSpin, cfgSpin,
apgSpin, seedEdit, seedLockCheck, generateButton, rerollButton, variationsSpin,
rerollFlaggedCheck, cancelButton, initNoiseSlider, liveToggle, keepLiveButton, liveLatencyLabel
(app.generate.panel); takesList, exportButton (app.takes.panel);
waveformView, spectrogramView, latentView, playButton, loopCheck (app.takes.viewer);
renderListProgress, renderListCancelButton (app.batch.progress); demoSetState
(app.models.demo_set); renderListAction,
shortcutsAction, aboutAction, liveAction, keepLiveAction, teamSettingsAction,
publishTeamAction, settingsColumnAction, sessionColumnAction (app.shell.menus); statusBar
and its liveStateLabel,
mainSplitter (its side columns fold: app.shell.columns), sideTabs, centreTabs (here: the Take
and Library pages); advancedGroup and what it holds (app.generate.advanced_group:
precisionCombo, codecTierCombo, compareTiersButton, engineDetailsLabel); adaptersPanel and
its rows (app.adapters.panel: addAdapterButton, adapterStrength_<n>, ...); and the Finish panel's
(app.finish.panel: finishPanel, presetCombo, loudnessLabel, loopButton, abButton, ...) and
the Library page's (app.library.panel; its Team
source's: app.team.sources, app.team.panel, app.team.progress). The Library page is built when
first used or right after the window's first paint (app.shell.library_page): its widgets are
found by name from then on (`library_sources`, `library_panel` and `team_panel` build it when
read).

The look is app.common.theme's (applied when the first window is built); what the window
remembers between runs is app.common.window_state's.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QApplication,
    QLabel,
    QMainWindow,
    QSplitter,
    QStatusBar,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.batch.progress import ListProgress
from app.common.theme import apply_theme, icon
from app.finish.panel import FinishPanel
from app.generate.panel import GenerationPanel
from app.models.demo_set import DemoSetState
from app.shell.columns import (
    LIBRARY_PAGE,
    SESSION,
    SETTINGS,
    TAKE_PAGE,
    ColumnFolds,
    default_sizes,
)
from app.shell.menus import MainMenus
from app.takes.panel import SessionPanel
from app.takes.viewer import TakeViewer
from app.team.progress import PublishProgress
from app.widgets.named import named

if TYPE_CHECKING:
    from app.library.panel import LibraryPanel
    from app.shell.studio import Studio
    from app.team.panel import TeamPanel
    from app.team.sources import LibrarySources

log = logging.getLogger(__name__)

WINDOW_TITLE = "SA3 Studio"
LIBRARY_TAB = "Library"
LIVE_WORD = "LIVE"
# A window shown but never painted (shown minimised): what waits for the first paint starts
# after this long anyway.
FIRST_PAINT_FALLBACK_MS = 1000


class MainWindow(QMainWindow):
    """The panels side by side: generation | the selected take or the library | the session.

    `studio` (app.shell.studio.Studio) is set by whoever composes the controllers; closing the
    window asks it to remember the layout and shut everything down."""

    firstShown = Signal()  # the window is on screen for the first time
    # its first frame is painted (emitted on the next turn of the event loop): what is not on
    # screen loads from here on (app.shell.studio)
    firstPainted = Signal()

    def __init__(self) -> None:
        super().__init__()
        apply_theme(QApplication.instance())  # however the window is built, it looks the same
        self.setObjectName("mainWindow")
        self.setWindowTitle(WINDOW_TITLE)
        self.setWindowIcon(icon("app"))
        self.resize(1280, 800)
        self.was_shown = False  # a window never on screen has no layout the user arranged
        self.was_painted = False
        self.studio: Studio | None = None
        self.generation_panel = GenerationPanel()
        self.finish_panel = FinishPanel()
        self.take_viewer = TakeViewer(self.finish_panel)
        self.session_panel = SessionPanel()
        self.side_tabs = named(QTabWidget(), "sideTabs")
        self.side_tabs.addTab(self.session_panel, "Session")
        # the Library page's place until it is built (install_library_page)
        self._library_placeholder: QWidget | None = named(QWidget(), "libraryPlaceholder")
        # The library is a page of the main area, beside the selected take: a sound browser
        # needs the room (every column at 1920x1080), the session list stays in view.
        self.centre_tabs = named(QTabWidget(), "centreTabs")
        self.centre_tabs.setDocumentMode(True)
        self.centre_tabs.addTab(self.take_viewer, "Take")
        self.centre_tabs.addTab(self._library_placeholder, LIBRARY_TAB)
        self.centre_tabs.currentChanged.connect(self._centre_page_changed)
        centre = QWidget()
        column = QVBoxLayout(centre)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.centre_tabs, stretch=1)
        column.addWidget(self.take_viewer.transport)  # plays takes and library rows alike
        splitter = named(QSplitter(Qt.Orientation.Horizontal), "mainSplitter")
        splitter.addWidget(self.generation_panel)
        splitter.addWidget(centre)
        splitter.addWidget(self.side_tabs)
        splitter.setStretchFactor(1, 1)
        # the side columns fold away (View menu, or a drag to the edge), the centre never does
        # (app.shell.columns); a laptop's narrow screen gives the centre the room
        screen = QApplication.primaryScreen()
        splitter.setSizes(default_sizes(screen.availableGeometry().width() if screen else 0))
        self.splitter = splitter
        self.setCentralWidget(splitter)
        self.setStatusBar(named(QStatusBar(), "statusBar"))
        self.list_progress = ListProgress(self.statusBar())
        self.team_progress = PublishProgress(self.statusBar())
        self.demo_state = DemoSetState(self.statusBar())
        # while live audition is on, the status bar says so at a glance (app.shell.studio)
        self.live_state_label = named(QLabel(LIVE_WORD), "liveStateLabel")
        self.live_state_label.setToolTip("Live audition is on: every change plays again "
                                         "(Ctrl+L turns it off)")
        self.live_state_label.setVisible(False)
        self.statusBar().addPermanentWidget(self.live_state_label)
        self.menus = MainMenus(self)
        self.columns = ColumnFolds(splitter, {SETTINGS: self.menus.settings_column_action,
                                              SESSION: self.menus.session_column_action}, self)

    # ------------------------------------------------------------------ the Library page
    @property
    def library_sources(self) -> LibrarySources:
        """The Library page (built now if it was not yet)."""
        return self._studio().library_page().sources

    @property
    def library_panel(self) -> LibraryPanel:
        """The Library page's local source (built now if it was not yet)."""
        return self._studio().library_page().panel

    @property
    def team_panel(self) -> TeamPanel:
        """The Library page's team source (built now if it was not yet)."""
        return self._studio().library_page().team_panel

    def library_page_built(self) -> bool:
        return self._library_placeholder is None

    def install_library_page(self, page: QWidget) -> None:
        """Put the built Library page where its placeholder was (in view if that was)."""
        placeholder, tabs = self._library_placeholder, self.centre_tabs
        if placeholder is None:
            raise RuntimeError("the Library page is built once")
        index = tabs.indexOf(placeholder)
        was_current = tabs.currentIndex() == index
        blocked = tabs.blockSignals(True)  # one page changed for listeners, not three
        try:
            tabs.insertTab(index, page, LIBRARY_TAB)
            tabs.removeTab(index + 1)
            if was_current:
                tabs.setCurrentIndex(index)
        finally:
            tabs.blockSignals(blocked)
        self._library_placeholder = None
        placeholder.deleteLater()

    def _centre_page_changed(self, index: int) -> None:
        library = self.centre_tabs.tabText(index) == LIBRARY_TAB
        columns = getattr(self, "columns", None)  # None while the window is being built
        if columns is not None:
            columns.show_page(LIBRARY_PAGE if library else TAKE_PAGE)
        if self._library_placeholder is not None and \
                self.centre_tabs.currentWidget() is self._library_placeholder:
            self._studio().library_page()  # the user opened the Library tab before it was built

    def _studio(self) -> Studio:
        if self.studio is None:
            raise RuntimeError("the Library page is built by the window's Studio")
        return self.studio

    def show_init_audio(self, take: object) -> None:
        """A take became the init audio (from the Library page, say): the settings column that
        shows it comes back if it was folded."""
        if take is not None and SETTINGS in self.columns.folded():
            self.columns.set_shown(SETTINGS, True)

    def show_session_tab(self) -> None:
        """The selected take and the session: after a library take was brought into it."""
        self.side_tabs.setCurrentWidget(self.session_panel)
        self.centre_tabs.setCurrentWidget(self.take_viewer)

    def show_library(self) -> None:
        """The Library page (the local source), e.g. for Find similar's results."""
        self.centre_tabs.setCurrentWidget(self.library_sources)
        self.library_sources.show_team(False)

    def showEvent(self, event) -> None:  # noqa: N802 - Qt override
        first = not self.was_shown
        self.was_shown = True
        super().showEvent(event)
        if first:
            self.firstShown.emit()
            QTimer.singleShot(FIRST_PAINT_FALLBACK_MS, self, self._painted)

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().paintEvent(event)
        if not self.was_painted:
            # posted, so it runs once this frame is painted and flushed, not inside it
            QTimer.singleShot(0, self, self._painted)

    def _painted(self) -> None:
        if not self.was_painted:
            self.was_painted = True
            self.firstPainted.emit()

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt override
        if self.studio is not None:
            if self.was_shown:
                self.studio.remember_window()
            self.studio.shutdown()
        super().closeEvent(event)
