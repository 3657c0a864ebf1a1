"""The generation panel's Advanced group: what only someone tuning speed against quality needs -
the DiT precision and the codec tier (each entry with its speed and quality in one line, a greyed
entry with its one-line reason), Compare tiers, and which tiers and engine files made the
selected take. Folded by default so that the panel speaks plainly first (model, length, steps,
seed); whether it is open is remembered (app.common.window_state). Layout only:
app.generate.tier_combos fills the combos, app.takes.tier_compare runs Compare tiers and writes
the engine details line.

Object names: advancedGroup (the whole group), generationAdvancedToggle, advancedBody,
precisionCombo, codecTierCombo, tierNoteLabel, compareTiersButton, engineDetailsLabel.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFormLayout, QLabel, QPushButton, QToolButton, QVBoxLayout, QWidget

from app.common.theme import icon
from app.widgets.fitting import FullNameCombo
from app.widgets.named import named

TOGGLE_TEXT = "Advanced (precision, codec tier)"
NO_DETAILS = "Select a take made in this session to see what made it."


class AdvancedGroup(QWidget):
    """A toggle and, under it, the advanced choices (hidden until the toggle is pressed)."""

    expandedChanged = Signal(bool)

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("advancedGroup")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        self.toggle = named(QToolButton(), "generationAdvancedToggle")
        self.toggle.setText(TOGGLE_TEXT)
        self.toggle.setCheckable(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.toggle.setToolTip("Speed against quality, and what made the selected take")
        layout.addWidget(self.toggle)
        self.body = named(QWidget(), "advancedBody")
        form = QFormLayout(self.body)
        form.setContentsMargins(12, 0, 0, 0)
        self.precision_combo = FullNameCombo("precisionCombo", 14)
        self.codec_tier_combo = FullNameCombo("codecTierCombo", 14)
        form.addRow("Precision", self.precision_combo)
        form.addRow("Codec tier", self.codec_tier_combo)
        # what the chosen tiers cost and give, whole (the combos elide in a narrow column)
        self.tier_note_label = named(QLabel(""), "tierNoteLabel")
        self.tier_note_label.setWordWrap(True)
        form.addRow(self.tier_note_label)
        self.compare_tiers_button = named(QPushButton("Compare tiers"), "compareTiersButton",
                                          icon("models"))
        self.compare_tiers_button.setToolTip(
            "Decode the selected take again through every other installed codec tier, to hear "
            "what each costs and gives (the same sound, no new sampling)")
        form.addRow(self.compare_tiers_button)
        self.engine_details_label = named(QLabel(NO_DETAILS), "engineDetailsLabel")
        self.engine_details_label.setWordWrap(True)
        self.engine_details_label.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow(self.engine_details_label)
        layout.addWidget(self.body)
        self.body.setVisible(False)
        self.toggle.toggled.connect(self.set_expanded)

    def expanded(self) -> bool:
        return self.toggle.isChecked()

    def set_expanded(self, on: bool) -> None:
        on = bool(on)
        blocked = self.toggle.blockSignals(True)
        try:
            self.toggle.setChecked(on)
        finally:
            self.toggle.blockSignals(blocked)
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)
        changed = self.body.isVisibleTo(self) != on
        self.body.setVisible(on)
        if changed:
            self.expandedChanged.emit(on)

    def show_details(self, text: str) -> None:
        """Which tiers and engine files made the selected take ("" : not known)."""
        self.engine_details_label.setText(text or NO_DETAILS)
