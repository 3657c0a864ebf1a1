"""What the window composes: the shared services and the feature controllers they are handed.

No behaviour of its own: it builds the services (notifier, session take model, player, GPU
worker, library), gives each controller the few it needs, connects the controllers' signals
to one another, and shuts everything down in order.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject

from app.batch_controller import BatchController
from app.export_controller import ExportController
from app.finish_controller import FinishController
from app.generation_controller import GenerationController
from app.inpaint_controller import InpaintController
from app.labels_controller import LabelsController
from app.library_controller import LibraryController
from app.models_controller import ModelsController
from app.notifier import show_settings_notices, take_settings_notices
from app.services import (
    GpuService,
    Notifier,
    TakeModel,
    make_generator,
    make_player,
    open_library,
)
from app.takes_controller import TakesController
from app.tier_compare import CompareTiersController
from app.widgets.shortcuts_sheet import show_about, show_shortcuts_sheet
from app.window_state import Choices, WindowState, select_enabled

log = logging.getLogger(__name__)


class Studio(QObject):
    def __init__(self, window, *, start_worker: bool = True, player=None,
                 make_generator=make_generator) -> None:
        super().__init__(window)
        self.window = window
        # services
        notifier = self.notifier = Notifier(self)
        notifier.shown.connect(window.statusBar().showMessage)
        library = self.library = open_library()
        session = self.session = TakeModel(window.takes_list, self)
        player = self.player = player if player is not None else make_player()
        gpu = self.gpu = GpuService(make_generator, open_library, start=start_worker, parent=self)
        # controllers, each handed the services it needs
        self.models_controller = ModelsController(window, gpu, notifier, self)
        self.generation_controller = GenerationController(window, notifier, session, gpu, self)
        self.takes_controller = TakesController(window, notifier, session, player, self)
        self.inpaint_controller = InpaintController(window, notifier, session, library, self)
        self.export_controller = ExportController(window, notifier, session, library, self)
        self.finish_controller = FinishController(window, notifier, session, gpu, player,
                                                  library, self)
        self.library_controller = LibraryController(
            window, notifier, session, gpu, library, self, player=player,
            file_for=self.export_controller.file_for)
        self.batch_controller = BatchController(window, notifier, session, gpu, self)
        self.compare_controller = CompareTiersController(window, notifier, session, gpu, self)
        self.labels_controller = LabelsController(window, notifier, self)
        # between controllers: Qt signals only
        refresh = self.library_controller.refresh_library
        self.generation_controller.libraryChanged.connect(refresh)
        self.inpaint_controller.libraryChanged.connect(refresh)
        self.batch_controller.libraryChanged.connect(refresh)
        self.generation_controller.takeGenerated.connect(self.takes_controller.autoplay)
        window.quit_action.triggered.connect(window.close)
        self._connect_menus()
        # settings.json is read again on the worker thread (the generator's catalog): say
        # anything it found once the batch is done
        gpu.batchFinished.connect(lambda: show_settings_notices(notifier))
        notifier.status("Ready. Type a prompt and press Ctrl+Enter.")
        # what opening found wrong (a damaged library or settings file set aside): once
        notifier.notices([getattr(library, "notice", None), *take_settings_notices()])
        self.window_state = WindowState()
        self.restore_window()

    def _connect_menus(self) -> None:
        """Menu items for keys the controllers handle (app.widgets.shortcuts_sheet) do what
        the key does, through the same buttons; and the Help menu."""
        w = self.window
        w.generate_action.triggered.connect(w.generate_button.click)
        w.play_action.triggered.connect(w.play_button.click)
        w.loop_action.triggered.connect(w.loop_check.toggle)
        w.previous_action.triggered.connect(lambda: self._step_take(-1))
        w.next_action.triggered.connect(lambda: self._step_take(1))
        w.shortcuts_action.triggered.connect(lambda: show_shortcuts_sheet(w))
        w.about_action.triggered.connect(lambda: show_about(w))

    def _step_take(self, step: int) -> None:
        takes = self.window.takes_list
        row = takes.currentRow() + step
        if 0 <= row < takes.count():
            takes.setCurrentRow(row)

    # ------------------------------------------------------------------ between runs
    def restore_window(self) -> None:
        """Geometry, column widths, model, finishing preset and export folder of last time."""
        w = self.window
        try:
            choices = self.window_state.restore(w, w.splitter)
            if choices.model:
                select_enabled(w.model_combo, choices.model)
            if choices.preset:
                self.finish_controller.offer_preset(choices.preset)
            if choices.export_folder is not None:
                self.export_controller.last_folder = choices.export_folder
        except Exception:  # noqa: BLE001 - remembered layout is a courtesy, never a failure
            log.warning("could not restore the window's layout", exc_info=True)

    def remember_window(self) -> None:
        """Called as the window closes (app.main_window)."""
        w = self.window
        choices = Choices(model=w.model_combo.currentData(),
                          preset=self.finish_controller.last_preset,
                          export_folder=self.export_controller.last_folder)
        try:
            self.window_state.save(w, w.splitter, choices)
        except Exception:  # noqa: BLE001 - closing must never fail over it
            log.warning("could not remember the window's layout", exc_info=True)

    def shutdown(self) -> None:
        """Stop the worker thread (releasing engines there) and the audio stream; idempotent."""
        if getattr(self, "_shut_down", False):
            return
        self._shut_down = True
        self.models_controller.shutdown()
        self.takes_controller.shutdown()
        self.finish_controller.shutdown()
        self.batch_controller.shutdown()
        self.gpu.stop()
        try:
            self.player.close()
        except Exception:  # noqa: BLE001
            log.exception("closing the audio stream failed")
        try:
            self.library.close()
        except Exception:  # noqa: BLE001
            log.exception("closing the library failed")
