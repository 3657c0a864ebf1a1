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
        self.export_controller = ExportController(window, notifier, session, self)
        self.finish_controller = FinishController(window, notifier, session, gpu, player,
                                                  library, self)
        self.library_controller = LibraryController(window, notifier, session, gpu, library,
                                                    self)
        self.batch_controller = BatchController(window, notifier, session, gpu, self)
        # between controllers: Qt signals only
        refresh = self.library_controller.refresh_library
        self.generation_controller.libraryChanged.connect(refresh)
        self.inpaint_controller.libraryChanged.connect(refresh)
        self.batch_controller.libraryChanged.connect(refresh)
        self.generation_controller.takeGenerated.connect(self.takes_controller.autoplay)
        window.quit_action.triggered.connect(window.close)
        # settings.json is read again on the worker thread (the generator's catalog): say
        # anything it found once the batch is done
        gpu.batchFinished.connect(lambda: show_settings_notices(notifier))
        notifier.status("Ready. Type a prompt and press Ctrl+Enter.")
        # what opening found wrong (a damaged library or settings file set aside): once
        notifier.notices([getattr(library, "notice", None), *take_settings_notices()])

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
