"""What the window composes: the shared services and the feature controllers they are handed.

No behaviour of its own: it builds the services (notifier, session take model, player, GPU
worker, library), gives each controller its panel (a view class of app.shell.main_window) and
the few services it needs, connects the menus to what they do, connects the controllers'
signals to one another, and shuts everything down in order.

Controllers connect the widgets of the panels they are given; a menu item, or a button of
another feature's panel, is connected here.

What is not on screen when the window opens loads after its first paint (app.shell.after_paint):
the audio output's look-up (off this thread), the takes of the last session
(app.shell.session_restore; its prompt and settings come back as the window is built), the
"Get models" page of a first start, the demo
set where it is not built yet (in the background), and the Library page with its controllers
(app.shell.library_page; also built at once when something asks for it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject

from app.adapters.controller import AdaptersController
from app.batch.controller import BatchController
from app.common.gpu_jobs import BATCH
from app.common.gpu_service import GpuService, make_generator
from app.common.library_access import open_library
from app.common.notifier import Notifier, show_settings_notices, take_settings_notices
from app.common.playback import Player
from app.common.preload import Preload
from app.common.session import TakeModel
from app.common.window_state import Choices, WindowState, select_enabled
from app.export.controller import ExportController
from app.export.labels_controller import LabelsController
from app.finish.controller import FinishController
from app.generate.controller import GenerationController
from app.generate.inpaint import InpaintController
from app.live.controller import LiveController
from app.models.controller import ModelsController
from app.models.demo_set import DemoPreparation
from app.shell.after_paint import Step, StepsAfterPaint
from app.shell.columns import LIBRARY_PAGE, TAKE_PAGE
from app.shell.main_window import MainWindow
from app.shell.session_restore import SessionRestore
from app.shell.shortcuts_sheet import show_about, show_shortcuts_sheet
from app.takes.controller import TakesController
from app.takes.tier_compare import CompareTiersController

if TYPE_CHECKING:
    from app.library.controller import LibraryController
    from app.shell.library_page import LibraryPage, LibraryPageParts
    from app.team.controller import TeamController

log = logging.getLogger(__name__)

LIBRARY_PAGE_MODULE = "app.shell.library_page"  # what the Library page loads (Preload)
LIBRARY_PAGE_PARTS = 3  # app.shell.library_page.LibraryPageParts builds it in three turns


class Studio(QObject):
    def __init__(self, window: MainWindow, *, start_worker: bool = True,
                 player: Player | None = None,
                 make_generator: Callable[[], object] = make_generator) -> None:
        super().__init__(window)
        self.window = window
        generation, viewer = window.generation_panel, window.take_viewer
        takes_panel, finish_panel = window.session_panel, window.finish_panel
        # services
        notifier = self.notifier = Notifier(self)
        notifier.shown.connect(window.statusBar().showMessage)
        library = self.library = open_library()
        session = self.session = TakeModel(takes_panel.takes_list, self)
        player = self.player = player if player is not None else Player()
        gpu = self.gpu = GpuService(make_generator, open_library, start=start_worker, parent=self)
        # controllers, each handed its panels and the services it needs
        self.models_controller = ModelsController(generation, viewer.model_banner, gpu,
                                                  notifier, self)
        self.generation_controller = GenerationController(generation, notifier, session, gpu,
                                                          self)
        self.takes_controller = TakesController(takes_panel, viewer, notifier, session, player,
                                                self)
        self.inpaint_controller = InpaintController(generation, viewer.waveform, notifier,
                                                    session, library, self)
        self.export_controller = ExportController(takes_panel, viewer.waveform, finish_panel,
                                                  notifier, session, library, self)
        self.finish_controller = FinishController(finish_panel, viewer, notifier, session, gpu,
                                                  player, library, self)
        self._library_page: LibraryPage | None = None  # built after the first paint, or on use
        self._library_parts: LibraryPageParts | None = None
        self.batch_controller = BatchController(window.list_progress, notifier, session, gpu,
                                                self)
        self.compare_controller = CompareTiersController(generation.advanced, notifier, session,
                                                         gpu, self)
        self.adapters_controller = AdaptersController(generation.adapters_panel, notifier, self)
        self.live_controller = LiveController(generation, viewer, notifier, session, gpu, player,
                                              self)
        self.labels_controller = LabelsController(window, notifier, self)
        self.demo_preparation = DemoPreparation(window.demo_state, notifier,
                                                lambda: self.models_controller.catalog, self)
        self._connect_controllers()
        self._connect_menus()
        # settings.json is read again on the worker thread (the generator's catalog): say
        # anything it found once the batch is done
        gpu.outcome.connect(lambda outcome: outcome.key.kind == BATCH
                            and show_settings_notices(notifier))
        notifier.greet("Ready. Type a prompt and press Ctrl+Enter.")
        # what opening found wrong (a damaged library or settings file set aside): once
        notifier.notices([getattr(library, "notice", None), *take_settings_notices()])
        self.window_state = WindowState()
        self.restore_window()
        # last time's session: its settings now, its takes after the first paint
        self.session_restore = SessionRestore(generation, session, library, notifier,
                                              lambda: player.known, self)
        self.session_restore.restore_settings()
        models = self.models_controller
        library_code = Preload(LIBRARY_PAGE_MODULE)
        self.after_paint = StepsAfterPaint(window, window.firstPainted, (
            Step(player.look_up_in_background),
            Step(self.session_restore.restore_takes),
            Step(models.preload_first_run_code, on_screen=True),
            Step(library_code.start),
            Step(models.offer_first_run, on_screen=True, after=models.first_run_code_loaded),
            *(Step(self._build_library_part, after=library_code.done)
              for _ in range(LIBRARY_PAGE_PARTS)),
            # last: its process would take a core from the GUI thread while it builds the rest
            Step(self.demo_preparation.start, on_screen=True),
        ), self)

    # ------------------------------------------------------------------ the Library page
    def library_page(self) -> LibraryPage:
        """The Library page and its controllers, built now if they were not yet."""
        if self._library_page is None:
            self._library_built(self._library_builder().finish())
        return self._library_page

    def _build_library_part(self) -> None:
        """One part of the Library page (a step after the first paint)."""
        if self._library_page is None:
            page = self._library_builder().next_part()
            if page is not None:
                self._library_built(page)

    def _library_builder(self) -> LibraryPageParts:
        if getattr(self, "_shut_down", False):
            raise RuntimeError("the window is closed: its Library page is not built now")
        if self._library_parts is None:
            # Imported here, after the window's first paint or on first use: the library
            # browser and the team library's client need not load before the window paints.
            from app.shell.library_page import LibraryPageParts

            self._library_parts = LibraryPageParts(self.window, self, open_library)
        return self._library_parts

    def _library_built(self, page: LibraryPage) -> None:
        self._library_page = page
        self._connect_library(page)

    @property
    def library_controller(self) -> LibraryController:
        return self.library_page().controller

    @property
    def team_controller(self) -> TeamController:
        return self.library_page().team

    def _refresh_library(self, *_args) -> None:
        """Takes were kept: the Library page shows them (one not built yet will when built)."""
        if self._library_page is not None:
            self._library_page.controller.refresh_library()

    def _connect_library(self, page: LibraryPage) -> None:
        w, library = self.window, page.controller
        library.takeLoaded.connect(lambda _take: w.show_session_tab())
        library.auditionStarted.connect(self.takes_controller.show_playing)
        library.libraryShown.connect(w.show_library)
        self.takes_controller.takeRenamed.connect(library.take_renamed)

    def _connect_controllers(self) -> None:
        """Between controllers and the window: Qt signals only."""
        w = self.window
        refresh = self._refresh_library
        self.generation_controller.libraryChanged.connect(refresh)
        self.inpaint_controller.libraryChanged.connect(refresh)
        self.batch_controller.libraryChanged.connect(refresh)
        self.compare_controller.libraryChanged.connect(refresh)
        self.generation_controller.takeGenerated.connect(self.takes_controller.autoplay)
        self.demo_preparation.ready.connect(self.models_controller.demo_set_ready)
        self.live_controller.playingStarted.connect(self.takes_controller.show_playing)
        self.live_controller.liveChanged.connect(w.live_state_label.setVisible)
        self.batch_controller.runningChanged.connect(
            lambda running: w.menus.render_list_action.setEnabled(not running))
        w.session_panel.use_init_button.clicked.connect(
            self.inpaint_controller.use_current_as_init)
        self._connect_browser()

    def _connect_menus(self) -> None:
        """Every menu item to what it does. Items for keys the controllers handle
        (app.shell.shortcuts_sheet) do what the key does, through the same buttons."""
        w, menus = self.window, self.window.menus
        menus.open_action.triggered.connect(self.inpaint_controller.open_init_dialog)
        menus.save_action.triggered.connect(self.export_controller.save_as)
        menus.copy_action.triggered.connect(self.export_controller.copy_current)
        menus.render_list_action.triggered.connect(self.batch_controller.open_dialog)
        menus.import_folder_action.triggered.connect(
            lambda: self.library_controller.importer.choose_folder())
        menus.rescan_folders_action.triggered.connect(
            lambda: self.library_controller.importer.rescan())
        menus.quit_action.triggered.connect(w.close)
        menus.labels_action.triggered.connect(self.labels_controller.open_dialog)
        menus.team_settings_action.triggered.connect(lambda: self.team_controller.open_settings())
        menus.publish_team_action.triggered.connect(
            lambda: self.team_controller.publish_current())
        menus.models_action.triggered.connect(self.models_controller.open_models_dialog)
        menus.generate_action.triggered.connect(w.generation_panel.generate_button.click)
        menus.play_action.triggered.connect(w.take_viewer.play_button.click)
        menus.live_action.triggered.connect(w.generation_panel.live_toggle.toggle)
        menus.keep_live_action.triggered.connect(w.generation_panel.keep_live_button.click)
        menus.loop_action.triggered.connect(w.take_viewer.loop_check.toggle)
        menus.previous_action.triggered.connect(lambda: self._step_take(-1))
        menus.next_action.triggered.connect(lambda: self._step_take(1))
        menus.use_init_action.triggered.connect(self.inpaint_controller.use_current_as_init)
        self.session.initChanged.connect(self.window.show_init_audio)  # a folded panel unfolds
        menus.rename_action.triggered.connect(self._rename)
        menus.delete_action.triggered.connect(self.takes_controller.delete_current)
        menus.compare_tiers_action.triggered.connect(self.compare_controller.compare_current)
        menus.shortcuts_action.triggered.connect(lambda: show_shortcuts_sheet(w, menus.menus))
        menus.about_action.triggered.connect(lambda: show_about(w))

    def _connect_browser(self) -> None:
        """The Library page beside the take (issue 22): which page shows, Find similar and
        renames from either side, a new take finished with the remembered preset."""
        w, menus = self.window, self.window.menus
        session_panel = w.session_panel
        self.generation_controller.takeGenerated.connect(lambda _take: w.show_session_tab())
        self.generation_controller.takeGenerated.connect(self.finish_controller.finish_new_take)
        session_panel.takes_list.itemClicked.connect(lambda _item: w.show_session_tab())
        menus.find_similar_action.triggered.connect(self._find_similar)
        menus.library_action.triggered.connect(self._toggle_library)
        session_panel.find_similar_action.triggered.connect(
            lambda: self.library_controller.find_similar_take(self.session.current_take()))
        session_panel.use_init_action.triggered.connect(
            self.inpaint_controller.use_current_as_init)
        session_panel.save_action.triggered.connect(self.export_controller.save_as)
        session_panel.compare_tiers_action.triggered.connect(
            self.compare_controller.compare_current)

    def _library_in_view(self) -> bool:
        """The Library page shows its local takes with one selected: what Take menu items
        (Find similar, Rename) mean then."""
        w = self.window
        return (self._library_page is not None
                and w.centre_tabs.currentWidget() is w.library_sources
                and not w.library_sources.team_shown()
                and w.library_panel.current_record() is not None)

    def _find_similar(self) -> None:
        if self._library_in_view():
            self.library_controller.find_similar_selected()
        else:
            self.library_controller.find_similar_take(self.session.current_take())

    def _rename(self) -> None:
        if self._library_in_view():
            self.library_controller.rename_selected()
        else:
            self.takes_controller.rename_current()

    def _toggle_library(self) -> None:
        w = self.window
        if w.library_page_built() and w.centre_tabs.currentWidget() is w.library_sources:
            w.centre_tabs.setCurrentWidget(w.take_viewer)
        else:
            w.show_library()

    def _step_take(self, step: int) -> None:
        takes = self.session.list
        row = takes.currentRow() + step
        if 0 <= row < takes.count():
            takes.setCurrentRow(row)

    # ------------------------------------------------------------------ between runs
    def restore_window(self) -> None:
        """Geometry, column widths (folded or not), model, the Advanced group's state,
        finishing preset and export folder of last time (the session: SessionRestore)."""
        w = self.window
        try:
            choices = self.window_state.restore(w, w.splitter)
            if choices.model:
                select_enabled(w.generation_panel.model_combo, choices.model)
            if choices.preset:
                self.finish_controller.offer_preset(choices.preset)
            if choices.export_folder is not None:
                self.export_controller.last_folder = choices.export_folder
            w.generation_panel.advanced.set_expanded(choices.advanced)
            w.columns.sync()  # a column folded last time is folded now: its menu item says so
            w.columns.set_page_folds(LIBRARY_PAGE, choices.library_folds)
        except Exception:  # noqa: BLE001 - remembered layout is a courtesy, never a failure
            log.warning("could not restore the window's layout", exc_info=True)

    def remember_window(self) -> None:
        """Called as the window closes (app.shell.main_window)."""
        w = self.window
        library_folds = w.columns.page_folds(LIBRARY_PAGE)
        w.columns.show_page(TAKE_PAGE)  # the splitter's saved layout is the Take page's
        choices = Choices(model=w.generation_panel.model_combo.currentData(),
                          preset=self.finish_controller.last_preset,
                          export_folder=self.export_controller.last_folder,
                          advanced=w.generation_panel.advanced.expanded(),
                          library_folds=library_folds)
        try:
            self.window_state.save(w, w.splitter, choices)
        except Exception:  # noqa: BLE001 - closing must never fail over it
            log.warning("could not remember the window's layout", exc_info=True)
        self.session_restore.remember()  # never raises: a file that cannot be written is logged

    def shutdown(self) -> None:
        """End every thread and pool the window started - the Models dialog's download thread,
        the finishing and thumbnail pools, the spectrogram's background work, the GPU worker
        (releasing engines there) - then the audio stream and the library; idempotent.
        Nothing may start afterwards (each part refuses new work once shut down)."""
        if getattr(self, "_shut_down", False):
            return
        self._shut_down = True
        self.after_paint.stop()
        page = self._library_page
        steps = (self.models_controller.shutdown, self.takes_controller.shutdown,
                 self.finish_controller.shutdown, self.batch_controller.shutdown,
                 *((page.controller.shutdown,) if page is not None else ()),
                 self.live_controller.shutdown, self.adapters_controller.shutdown,
                 self.session.shutdown,
                 self.window.take_viewer.spectrogram.shutdown, self.gpu.stop,
                 *((page.team.shutdown,) if page is not None else ()),
                 self.demo_preparation.shutdown, self.player.close, self.library.close)
        for step in steps:
            try:
                step()
            except Exception:  # noqa: BLE001 - one part failing must not leave the rest running
                log.exception("shutting down %s failed", getattr(step, "__qualname__", step))


def build_main_window(*, start_worker: bool = True) -> MainWindow:
    """The main window, wired to its controllers, not shown; honours SA3_STUDIO_HOME."""
    window = MainWindow()
    window.studio = Studio(window, start_worker=start_worker)
    return window
