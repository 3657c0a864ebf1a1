"""Which model set, decoder and precision: what this machine can run (the generation panel's
choices and the take viewer's banner), and the Models dialog.

The first time the window is shown with no real model set installed, the Models dialog opens
on its "Get models" page once the window has painted (once per data folder; Models > Manage
models... opens it later).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QLabel

from app.common.expected_errors import CATALOG_ERRORS, SETTINGS_ERRORS
from app.common.gpu_jobs import BATCH
from app.common.gpu_service import GpuService
from app.common.notifier import Notifier
from app.common.preload import Preload
from app.generate.panel import GenerationPanel
from app.generate.tier_combos import TierCombos
from app.models.model_tips import model_tip
from engines import paths
from engines.catalog import DECODERS, MODEL_SETS, get_model_set
from engines.models.inventory import default_catalog
from engines.settings import read_settings, update_settings

if TYPE_CHECKING:
    from app.models.dialog import ModelManagerDialog

log = logging.getLogger(__name__)

FIRST_RUN_KEY = "models_first_run_offered"
DIALOG_MODULE = "app.models.dialog"


def dialog_class() -> type[ModelManagerDialog]:
    """The Models dialog's class, its module imported on first use."""
    # Imported here, when the dialog first opens (or is about to): its download (HTTPS), build
    # and self-test code need not load with the window.
    from app.models.dialog import ModelManagerDialog

    return ModelManagerDialog


class ModelsController(QObject):
    """Fills the model, decoder and precision choices from the catalog of what can run here.

    `catalog` is re-read when the Models dialog adds files or folders (`models_changed`).
    """

    def __init__(self, panel: GenerationPanel, banner: QLabel, gpu: GpuService,
                 notifier: Notifier, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.panel = panel
        self.banner = banner
        self.gpu = gpu
        self.notifier = notifier
        self.catalog = default_catalog()
        self.models_dialog: ModelManagerDialog | None = None
        self._dialog_code = Preload(DIALOG_MODULE)
        self._closed = False
        self.tiers = TierCombos(panel, lambda: self.catalog, self)
        panel.model_combo.currentIndexChanged.connect(self._model_changed)
        # a generation may have made a set ready (the demo is built on its first use)
        gpu.outcome.connect(lambda outcome: outcome.key.kind == BATCH and self._refresh_dialog())
        self.fill_models()

    def has_real_model(self) -> bool:
        return any(self.catalog.resolve(key).runnable for key in MODEL_SETS if key != "demo")

    def _first_run_due(self) -> bool:
        """No real set installed and the "Get models" page never offered in this data folder
        (never once the window is closing)."""
        if self._closed:
            return False
        try:
            return not (self.has_real_model()
                        or read_settings(paths.data_dir()).get(FIRST_RUN_KEY))
        except SETTINGS_ERRORS:  # a first-run page is a courtesy, never a failure
            log.warning("could not decide on the first-run page", exc_info=True)
            return False

    def preload_first_run_code(self) -> None:
        """Load the Models dialog's code on a thread of its own when the "Get models" page is
        about to open (the window calls this before `offer_first_run`, which waits for
        `first_run_code_loaded`): the GUI thread then only builds the dialog."""
        if self._first_run_due():
            self._dialog_code.start()

    def first_run_code_loaded(self) -> bool:
        return self._dialog_code.done() or not self._dialog_code.started

    def offer_first_run(self) -> bool:
        """Open the "Get models" page if no real set is installed and it was never offered
        in this data folder; True when it opened (never once the window is closing)."""
        if not self._first_run_due():
            return False
        try:
            update_settings(paths.data_dir(), {FIRST_RUN_KEY: True})
        except SETTINGS_ERRORS:  # a first-run page is a courtesy, never a failure
            log.warning("could not decide on the first-run page", exc_info=True)
            return False
        self.open_models_dialog().show_get_models()
        return True

    def fill_models(self) -> None:
        combo = self.panel.model_combo
        combo.blockSignals(True)
        combo.clear()
        model = combo.model()
        for key, model_set in MODEL_SETS.items():
            answer = self.catalog.resolve(key)
            combo.addItem(model_set.label, key)
            index = combo.count() - 1
            item = model.item(index)
            if not answer.runnable:
                item.setEnabled(False)
            combo.setItemData(index, model_tip(answer), Qt.ItemDataRole.ToolTipRole)
        demo = combo.findData("demo")
        first_runnable = next((i for i in range(combo.count())
                               if model.item(i).isEnabled() and combo.itemData(i) != "demo"),
                              demo)
        combo.setCurrentIndex(first_runnable)
        combo.blockSignals(False)
        self._model_changed()

    def choose_model(self, key: str) -> bool:
        """Select model set `key` in the window, if it can run here; True when selected."""
        combo = self.panel.model_combo
        index = combo.findData(key)
        if index < 0 or not combo.model().item(index).isEnabled():
            return False
        combo.setCurrentIndex(index)
        return True

    def current_model(self) -> str:
        return self.panel.model_combo.currentData() or "demo"

    def _model_changed(self, *_args) -> None:
        key = self.current_model()
        model_set = get_model_set(key)
        w = self.panel
        blocked = w.decoder_combo.blockSignals(True)  # one refill of the tiers, below
        try:
            w.decoder_combo.clear()
            paired = DECODERS[model_set.default_decoder].label.split(" (")[0]
            w.decoder_combo.addItem(f"Paired ({paired})", None)
            if key != "demo":
                for decoder in ("same-s", "same-l"):
                    w.decoder_combo.addItem(DECODERS[decoder].label, decoder)
        finally:
            w.decoder_combo.blockSignals(blocked)
        self.tiers.fill_for_model(key)  # Precision and Codec tier, with speed and quality
        w.seconds_spin.setMaximum(model_set.max_seconds)
        banner = model_set.label
        if key == "demo":
            banner += " - a procedural stand-in that runs on any CPU."
        self.banner.setText(banner)

    # ------------------------------------------------------------------ the Models dialog
    def open_models_dialog(self) -> ModelManagerDialog:
        if self.models_dialog is None:
            self.models_dialog = dialog_class()(self, self.gpu, self.panel.window())
        elif not self.models_dialog.isVisible():
            self.models_dialog.refresh()  # what was installed since it was last open
        self.models_dialog.show()
        self.models_dialog.raise_()
        return self.models_dialog

    def demo_set_ready(self) -> None:
        """The demo set was built in the background (app.models.demo_set)."""
        self._refresh_dialog()

    def _refresh_dialog(self) -> None:
        """The Models window, while it is open, shows what is installed now."""
        dialog = self.models_dialog
        if dialog is not None and dialog.isVisible() and not self._closed:
            dialog.refresh()

    def models_changed(self) -> None:
        """New files or folders: re-read what can run here."""
        current = self.current_model()
        try:
            self.catalog = default_catalog()
            self.fill_models()
        except CATALOG_ERRORS as exc:  # the old choices stay; one sentence
            self.notifier.failed("Could not list the installed models", exc)
            return
        index = self.panel.model_combo.findData(current)
        if index >= 0 and self.panel.model_combo.model().item(index).isEnabled():
            self.panel.model_combo.setCurrentIndex(index)

    def shutdown(self) -> None:
        """The window is closing: the dialog's download thread stops, and no dialog opens."""
        self._closed = True
        if self.models_dialog is not None:
            self.models_dialog.shutdown()
