"""The Precision and Codec tier choices of the generation panel (issue 14): every DiT precision
and every codec tier of the chosen decoder, each with its speed and quality in plain words,
greyed with the catalog's one-sentence reason when it cannot run here, and the default one
marked as such (choosing it leaves the request to the default rule).

The catalog only looks at files and the GPU probe the window already made (engines.catalog),
so it is asked here on the GUI thread, as the model combo is (app.models.controller).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QComboBox

from app.common.expected_errors import CATALOG_ERRORS
from app.common.tiers import DEFAULT_ROLE, chosen, tier_words
from app.generate.panel import GenerationPanel
from engines.catalog.tier_choice import TierOption, codec_tier_options, precision_options

log = logging.getLogger(__name__)


def entry_text(option: TierOption) -> str:
    """"fp8 - about 1.14x faster decode, near-transparent"; the default says so."""
    mark = " (default)" if option.default else ""
    return f"{option.name}{mark} - {option.info.summary}"


def fill(combo: QComboBox, options: list[TierOption], keep: str | None) -> None:
    """The options in `combo`, unavailable ones greyed with their reason as the tooltip; the
    entry named `keep` stays chosen if it can run, else the default one, else the first that
    can. Signals are blocked: the caller says once what changed."""
    blocked = combo.blockSignals(True)
    try:
        combo.clear()
        model = combo.model()
        for option in options:
            combo.addItem(entry_text(option), option.name)
            index = combo.count() - 1
            combo.setItemData(index, option.default, DEFAULT_ROLE)
            if option.available:
                figures = f" ({option.info.figures})" if option.info.figures else ""
                tip = f"{option.info.label}: {option.info.summary}{figures}."
            else:
                model.item(index).setEnabled(False)
                tip = tier_words(option.reason or "It cannot run here.")
            combo.setItemData(index, tip, Qt.ItemDataRole.ToolTipRole)
        usable = [i for i in range(combo.count()) if model.item(i).isEnabled()]
        pick = next((i for i in usable if combo.itemData(i) == keep), None)
        if pick is None:
            pick = next((i for i in usable if combo.itemData(i, DEFAULT_ROLE)),
                        usable[0] if usable else 0)
        combo.setCurrentIndex(pick if combo.count() else -1)
    finally:
        combo.blockSignals(blocked)


class TierCombos(QObject):
    """Keeps the Precision and Codec tier combos (and the line under them) in step with the
    model set and decoder; `catalog()` is the models controller's current catalog."""

    def __init__(self, panel: GenerationPanel, catalog: Callable[[], object],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.panel = panel
        self.catalog = catalog
        self.model = "demo"
        panel.decoder_combo.currentIndexChanged.connect(self._decoder_changed)
        panel.precision_combo.currentIndexChanged.connect(self.fill_tiers)
        panel.codec_tier_combo.currentIndexChanged.connect(self.show_note)

    def fill_for_model(self, model: str) -> None:
        """A model set was chosen (or the catalog read again): both combos anew."""
        self.model = model
        self._decoder_changed()

    def _decoder_changed(self, *_args) -> None:
        w = self.panel
        try:
            options = precision_options(self.catalog(), self.model,
                                        w.decoder_combo.currentData())
        except CATALOG_ERRORS:  # a choice list is never worth a crash
            log.warning("could not list the precisions of %s", self.model, exc_info=True)
            options = []
        fill(w.precision_combo, options, chosen(w.precision_combo))
        self.fill_tiers()

    def fill_tiers(self, *_args) -> None:
        w = self.panel
        try:
            options = codec_tier_options(self.catalog(), self.model,
                                         w.decoder_combo.currentData(),
                                         w.precision_combo.currentData())
        except CATALOG_ERRORS:  # a name the catalog refuses: an empty list
            log.warning("could not list the codec tiers of %s", self.model, exc_info=True)
            options = []
        fill(w.codec_tier_combo, options, chosen(w.codec_tier_combo))
        self.show_note()

    def show_note(self, *_args) -> None:
        """What the chosen precision and codec tier cost and give, whole (the combos elide)."""
        w = self.panel
        parts = []
        for label, combo in (("Precision", w.precision_combo),
                             ("Codec tier", w.codec_tier_combo)):
            name, _, words = combo.currentText().partition(" - ")
            if words:
                parts.append(f"{label} {name}: {words}")
        w.tier_note_label.setText(". ".join(parts) + "." if parts else "")
