"""The generation panel: the prompt, the settings a request is made of, init audio, the
Generate / Reroll / Cancel buttons and live audition's switch, Keep and latency readout. Layout
only: app.generate.controller (requests), app.models.controller (model, decoder, precision),
app.generate.tier_combos (precision and codec tier entries), app.generate.inpaint (init audio)
and app.live.controller (live audition) give it behaviour. Precision, codec tier and Compare
tiers sit in the Advanced group (app.generate.advanced_group), folded by default.

On a short screen the settings scroll instead of squeezing (or cutting off) their rows; the
buttons stay in sight below them.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QDoubleSpinBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSlider,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.adapters.panel import AdaptersPanel
from app.common.texts import NEGATIVE_OFF_HELP, NO_INIT
from app.common.theme import icon
from app.generate.advanced_group import AdvancedGroup
from app.widgets.fitting import FullNameCombo, SettingsScroll
from app.widgets.named import named

SFX_PRESETS = (0.5, 1.0, 2.0, 5.0)
MUSIC_PRESETS = (10.0, 30.0, 60.0, 120.0)


class GenerationPanel(QWidget):
    """The left column of the window (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("generationPanel")
        settings = QWidget()
        layout = QVBoxLayout(settings)
        self._build_prompt(layout)
        form = QFormLayout()
        self._build_choices(form)
        self._build_numbers(form)
        layout.addLayout(form)
        layout.addWidget(self._build_init_box())
        self.adapters_panel = AdaptersPanel()  # LoRA/DoRA files: app.adapters.controller
        layout.addWidget(self.adapters_panel)
        layout.addWidget(self.advanced)
        layout.addStretch(1)
        scroll = named(SettingsScroll(), "generationScroll")
        scroll.setWidget(settings)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(scroll, 1)
        column.addLayout(self._build_buttons())

    def _build_prompt(self, layout: QVBoxLayout) -> None:
        layout.addWidget(QLabel("Prompt (Ctrl+Enter generates)"))
        self.prompt_edit = named(QPlainTextEdit(), "promptEdit")
        self.prompt_edit.setPlaceholderText("coin pickup, bright, short")
        self.prompt_edit.setMaximumHeight(90)
        layout.addWidget(self.prompt_edit)
        self.negative_edit = named(QLineEdit(), "negativePromptEdit")
        self.negative_edit.setPlaceholderText("negative prompt (what to avoid)")
        self.negative_hint = named(QLabel(NEGATIVE_OFF_HELP), "negativePromptHint")
        self.negative_hint.setWordWrap(True)
        layout.addWidget(self.negative_edit)
        layout.addWidget(self.negative_hint)

    def _build_choices(self, form: QFormLayout) -> None:
        """Model and decoder in view; the precision and codec tier combos (and the line that
        says what the chosen tiers cost and give) in the Advanced group, folded by default."""
        self.model_combo = FullNameCombo("modelCombo", 18)
        self.decoder_combo = FullNameCombo("decoderCombo", 14)
        form.addRow("Model", self.model_combo)
        form.addRow("Decoder", self.decoder_combo)
        self.advanced = AdvancedGroup()
        self.precision_combo = self.advanced.precision_combo
        self.codec_tier_combo = self.advanced.codec_tier_combo
        self.tier_note_label = self.advanced.tier_note_label
        self.compare_tiers_button = self.advanced.compare_tiers_button

    def _build_numbers(self, form: QFormLayout) -> None:
        self.seconds_spin = named(QDoubleSpinBox(), "secondsSpin")
        self.seconds_spin.setRange(0.1, 380.4)
        self.seconds_spin.setDecimals(2)
        self.seconds_spin.setSuffix(" s")
        self.seconds_spin.setValue(2.0)
        form.addRow("Length", self.seconds_spin)
        form.addRow(self._build_length_presets())
        self.steps_spin = named(QSpinBox(), "stepsSpin")
        self.steps_spin.setRange(1, 50)
        self.steps_spin.setValue(8)
        form.addRow("Steps", self.steps_spin)
        self.cfg_spin = named(QDoubleSpinBox(), "cfgSpin")
        self.cfg_spin.setRange(0.0, 15.0)
        self.cfg_spin.setSingleStep(0.5)
        self.cfg_spin.setValue(1.0)
        form.addRow("CFG", self.cfg_spin)
        self.apg_spin = named(QDoubleSpinBox(), "apgSpin")
        self.apg_spin.setRange(0.0, 1.0)
        self.apg_spin.setSingleStep(0.1)
        self.apg_spin.setValue(1.0)
        form.addRow("APG", self.apg_spin)
        seed_row = QHBoxLayout()
        self.seed_edit = named(QLineEdit(), "seedEdit")
        self.seed_edit.setPlaceholderText("random")
        self.seed_lock = named(QCheckBox("Lock"), "seedLockCheck")
        self.dice_button = named(QToolButton(), "diceButton", icon("dice"))
        self.dice_button.setText("Dice")  # the accessible name; the dice icon is what shows
        self.dice_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
        self.dice_button.setToolTip("Pick a new random seed")
        seed_row.addWidget(self.seed_edit)
        seed_row.addWidget(self.seed_lock)
        seed_row.addWidget(self.dice_button)
        form.addRow("Seed", seed_row)
        self.variations_spin = named(QSpinBox(), "variationsSpin")
        self.variations_spin.setRange(1, 16)
        self.variations_spin.setValue(1)
        form.addRow("Variations", self.variations_spin)
        self.reroll_flagged_check = named(QCheckBox("Reroll flagged takes"),
                                          "rerollFlaggedCheck")
        self.reroll_flagged_check.setToolTip(
            "A take flagged for silence, clipping, DC offset or broken samples is made again "
            "with a new seed (up to 3 times)")
        form.addRow(self.reroll_flagged_check)

    def _build_length_presets(self) -> QGridLayout:
        """The SFX and Music lengths, one button each (`seconds` property: the length)."""
        presets = QGridLayout()
        self.preset_buttons: list[QToolButton] = []
        for row, (label, values) in enumerate((("SFX", SFX_PRESETS), ("Music", MUSIC_PRESETS))):
            presets.addWidget(QLabel(label), row, 0)
            for col, value in enumerate(values):
                button = QToolButton()
                button.setText(f"{value:g} s")
                # as wide as the row allows, never narrower than the label
                button.setSizePolicy(QSizePolicy.Policy.MinimumExpanding,
                                     QSizePolicy.Policy.Fixed)
                button.setToolTip(f"Set the length to {value:g} s")
                button.setObjectName(f"preset{value:g}".replace(".", "_"))
                button.setProperty("seconds", value)
                presets.addWidget(button, row, col + 1)
                self.preset_buttons.append(button)
        return presets

    def _build_init_box(self) -> QGroupBox:
        init_box = QGroupBox("Init audio")
        init_layout = QVBoxLayout(init_box)
        self.init_label = named(QLabel(NO_INIT), "initLabel")
        self.init_label.setWordWrap(True)
        init_layout.addWidget(self.init_label)
        row = QHBoxLayout()
        self.clear_init_button = named(QPushButton("Clear"), "clearInitButton", icon("cancel"))
        self.span_mode_check = named(QCheckBox("Paint spans to regenerate"), "spanModeCheck")
        row.addWidget(self.span_mode_check)
        row.addWidget(self.clear_init_button)
        init_layout.addLayout(row)
        self.init_noise_slider = named(QSlider(Qt.Orientation.Horizontal), "initNoiseSlider")
        self.init_noise_slider.setRange(1, 100)
        self.init_noise_slider.setValue(60)
        self.init_noise_label = named(QLabel(), "initNoiseLabel")
        self.init_noise_label.setWordWrap(True)
        init_layout.addWidget(self.init_noise_slider)
        init_layout.addWidget(self.init_noise_label)
        return init_box

    def _build_buttons(self) -> QGridLayout:
        buttons = QGridLayout()
        self.generate_button = named(QPushButton("Generate"), "generateButton",
                                     icon("generate"))
        self.generate_button.setDefault(True)
        self.generate_button.setToolTip("Generate takes from the prompt (Ctrl+Enter)")
        self.reroll_button = named(QPushButton("Reroll"), "rerollButton", icon("reroll"))
        self.reroll_button.setToolTip("One more take with the same settings and a new seed")
        self.cancel_button = named(QPushButton("Cancel"), "cancelButton", icon("cancel"))
        self.cancel_button.setEnabled(False)
        buttons.addWidget(self.generate_button, 0, 0, 1, 2)
        buttons.addWidget(self.reroll_button, 1, 0)
        buttons.addWidget(self.cancel_button, 1, 1)
        self.seed_used_label = named(QLabel("Seed used: -"), "seedUsedLabel")
        self.seed_used_label.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse)
        buttons.addWidget(self.seed_used_label, 2, 0, 1, 2)
        self.live_toggle = named(QPushButton("Live"), "liveToggle", icon("play"))
        self.live_toggle.setCheckable(True)
        self.live_toggle.setToolTip("Live audition: hear every change as you type, with the "
                                    "seed locked (Ctrl+L)")
        self.keep_live_button = named(QPushButton("Keep"), "keepLiveButton", icon("save"))
        self.keep_live_button.setToolTip("Keep the live take in the session and the library "
                                         "(Enter while live)")
        self.keep_live_button.setEnabled(False)
        buttons.addWidget(self.live_toggle, 3, 0)
        buttons.addWidget(self.keep_live_button, 3, 1)
        self.live_latency_label = named(QLabel(""), "liveLatencyLabel")
        self.live_latency_label.setWordWrap(True)
        self.live_latency_label.setToolTip("From your last change to the first sample heard")
        buttons.addWidget(self.live_latency_label, 4, 0, 1, 2)
        buttons.setContentsMargins(9, 0, 9, 6)
        return buttons
