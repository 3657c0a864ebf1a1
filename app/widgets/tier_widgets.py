"""The speed and quality tier widgets of the main window (issue 14): the codec tier combo with
a word-wrapped line under the choices that says what the chosen precision and tier cost and
give, and the "Compare tiers" button of the takes panel; and the words the window uses for
tiers (the entry a request leaves to the default rule, engine sentences in the window's words).
app.tier_combos fills the combos and app.tier_compare runs the comparison.

They live here rather than in app.main_window, which holds the rest of the layout, so that
module stays small."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QFormLayout, QGridLayout, QLabel, QPushButton

from app.remedy_words import MAIN, for_window
from app.theme import icon
from app.widgets.fitting import FullNameCombo

DEFAULT_ROLE = Qt.ItemDataRole.UserRole + 30  # True on the entry the default rule picks


def tier_words(text: str, here: str = MAIN) -> str:
    """An engine sentence about tiers in the window's words (app.remedy_words)."""
    return for_window(text, here)


def pick_words(catalog, model: str, here: str = MAIN) -> str:
    """What Generate would use for `model` with every choice left at its default, and why
    (engines.catalog.tier_choice.default_pick), in the window's words."""
    from engines.catalog.tier_choice import default_pick

    try:
        answer, reason = default_pick(catalog, model)
    except Exception as exc:  # noqa: BLE001 - a courtesy line, never a failure
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


def add_tier_rows(window, form: QFormLayout) -> None:
    """The "Codec tier" row after Precision, and the line that says what both choices mean
    (the combos elide their long entries in a narrow column; this line wraps instead)."""
    window.codec_tier_combo = FullNameCombo("codecTierCombo", 14)
    form.addRow("Codec tier", window.codec_tier_combo)
    note = QLabel("")
    note.setObjectName("tierNoteLabel")
    note.setWordWrap(True)
    window.tier_note_label = note
    form.addRow(note)


def add_compare_button(window, grid: QGridLayout, row: int) -> None:
    """"Compare tiers" across the takes panel's button grid."""
    button = QPushButton("Compare tiers")
    button.setObjectName("compareTiersButton")
    button.setIcon(icon("models"))
    button.setToolTip("Decode the selected take again through every other installed codec "
                      "tier, to hear what each costs and gives (the same sound, no new "
                      "sampling)")
    window.compare_tiers_button = button
    grid.addWidget(button, row, 0, 1, 2)
