"""How the window shows speed and quality tiers (issue 14): the entry a request leaves to the
default rule (`chosen`, `choose` on the Precision and Codec tier combos, whose entries carry
DEFAULT_ROLE), and engine sentences about tiers in the window's words. app.generate.tier_combos
fills the combos and app.takes.tier_compare runs the comparison."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox

from app.common.expected_errors import CATALOG_ERRORS
from app.common.remedy_words import MAIN, for_window
from engines.catalog.tier_choice import default_pick

DEFAULT_ROLE = Qt.ItemDataRole.UserRole + 30  # True on the entry the default rule picks


def tier_words(text: str, here: str = MAIN) -> str:
    """An engine sentence about tiers in the window's words (app.common.remedy_words)."""
    return for_window(text, here)


def pick_words(catalog, model: str, here: str = MAIN) -> str:
    """What Generate would use for `model` with every choice left at its default, and why
    (engines.catalog.tier_choice.default_pick), in the window's words."""
    try:
        answer, reason = default_pick(catalog, model)
    except CATALOG_ERRORS as exc:  # a courtesy line, never a failure
        return f"What would be used could not be worked out ({type(exc).__name__})."
    if not answer.runnable:  # the catalog's own sentence: what is missing, how to get it
        return tier_words(reason, here)
    return f"Generate would use {tier_words(reason, here)}"


def chosen(combo: QComboBox) -> str | None:
    """What a request asks for: the chosen entry's name, or None for the default entry (the
    default rule then picks the same one, and goes on picking well when files change)."""
    if combo.currentIndex() < 0 or combo.currentData(DEFAULT_ROLE):
        return None
    return combo.currentData()


def choose(combo: QComboBox, value: str | None) -> None:
    """Choose the entry named `value` where it can run here, else the default entry."""
    index = combo.findData(value) if value else -1
    if index < 0 or not combo.model().item(index).isEnabled():
        index = next((i for i in range(combo.count()) if combo.itemData(i, DEFAULT_ROLE)), 0)
    combo.setCurrentIndex(index)
