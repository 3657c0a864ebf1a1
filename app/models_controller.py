"""Which model set, decoder and precision: what this machine can run, and the Models dialog."""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt

from app.services import GpuService, Notifier
from engines.catalog import MODEL_SETS, get_model_set


class ModelsController(QObject):
    """Fills the model, decoder and precision choices from the catalog of what can run here.

    `catalog` is re-read when the Models dialog adds files or folders (`models_changed`).
    """

    def __init__(self, view, gpu: GpuService, notifier: Notifier,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        from engines.models.inventory import default_catalog

        self.view = view
        self.gpu = gpu
        self.notifier = notifier
        self.catalog = default_catalog()
        self.models_dialog = None
        view.model_combo.currentIndexChanged.connect(self._model_changed)
        view.models_action.triggered.connect(self.open_models_dialog)
        self.fill_models()

    def fill_models(self) -> None:
        combo = self.view.model_combo
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
                combo.setItemData(index, answer.reason, Qt.ItemDataRole.ToolTipRole)
            else:
                combo.setItemData(index, f"Runs on {answer.backend}.",
                                  Qt.ItemDataRole.ToolTipRole)
        demo = combo.findData("demo")
        first_runnable = next((i for i in range(combo.count())
                               if model.item(i).isEnabled() and combo.itemData(i) != "demo"),
                              demo)
        combo.setCurrentIndex(first_runnable)
        combo.blockSignals(False)
        self._model_changed()

    def current_model(self) -> str:
        return self.view.model_combo.currentData() or "demo"

    def _model_changed(self, *_args) -> None:
        key = self.current_model()
        model_set = get_model_set(key)
        w = self.view
        w.decoder_combo.clear()
        w.decoder_combo.addItem(f"Paired ({model_set.default_decoder})", None)
        if key != "demo":
            for decoder in ("same-s", "same-l"):
                w.decoder_combo.addItem(decoder, decoder)
        w.precision_combo.clear()
        w.precision_combo.addItem(f"Default ({model_set.default_precision})", None)
        gpu = self.catalog.gpu
        for precision in ("fp16", "fp32", "fp8"):
            w.precision_combo.addItem(precision, precision)
            index = w.precision_combo.count() - 1
            reason = None
            if key == "demo" and precision != "fp32":
                reason = "The demo model has fp32 weights only."
            elif precision == "fp8" and (gpu is None or not gpu.has_fp8):
                reason = ("fp8 needs FP8 tensor cores (compute capability 8.9 or newer); "
                          "this machine has none.")
            if reason:
                w.precision_combo.model().item(index).setEnabled(False)
                w.precision_combo.setItemData(index, reason, Qt.ItemDataRole.ToolTipRole)
        w.seconds_spin.setMaximum(model_set.max_seconds)
        banner = model_set.label
        if key == "demo":
            banner += " - a procedural stand-in that runs on any CPU."
        w.model_banner.setText(banner)

    # ------------------------------------------------------------------ the Models dialog
    def open_models_dialog(self):
        from app.model_manager import ModelManagerDialog

        if self.models_dialog is None:
            self.models_dialog = ModelManagerDialog(self, self.gpu, self.view)
        self.models_dialog.show()
        self.models_dialog.raise_()
        return self.models_dialog

    def models_changed(self) -> None:
        """New files or folders: re-read what can run here."""
        from engines.models.inventory import default_catalog

        current = self.current_model()
        try:
            self.catalog = default_catalog()
            self.fill_models()
        except Exception as exc:  # noqa: BLE001 - the old choices stay; one sentence
            self.notifier.failed("Could not list the installed models", exc)
            return
        index = self.view.model_combo.findData(current)
        if index >= 0 and self.view.model_combo.model().item(index).isEnabled():
            self.view.model_combo.setCurrentIndex(index)

    def shutdown(self) -> None:
        if self.models_dialog is not None:
            self.models_dialog.done(0)
