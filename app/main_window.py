"""The main window: layout only. Behaviour lives in the feature controllers that
app.studio.Studio composes (app/*_controller.py).

Object names (a contract for tests and assistive tools): promptEdit, negativePromptEdit,
modelCombo, decoderCombo, precisionCombo, codecTierCombo, secondsSpin, stepsSpin, cfgSpin,
apgSpin, seedEdit, seedLockCheck, generateButton, rerollButton, variationsSpin,
rerollFlaggedCheck, cancelButton, takesList, waveformView, spectrogramView, latentView,
playButton, loopCheck, initNoiseSlider, exportButton, compareTiersButton, statusBar,
renderListAction, renderListProgress, renderListCancelButton, mainSplitter, shortcutsAction,
aboutAction, and the Finish panel's (app.widgets.finish_panel:
finishPanel, presetCombo, loudnessLabel, loopButton, abButton, ...).

The look is app.theme's (applied when the first window is built); the menus are
app.main_menus'; what the window remembers between runs is app.window_state's.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QDoubleSpinBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSlider,
    QSpinBox,
    QSplitter,
    QStatusBar,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.library_panel import LibraryPanel
from app.main_menus import build_menus
from app.texts import NEGATIVE_OFF_HELP, NO_INIT
from app.theme import apply_theme, icon
from app.widgets.finish_panel import FinishPanel
from app.widgets.fitting import FullNameCombo, SettingsScroll
from app.widgets.latent_view import LatentView
from app.widgets.spectrogram import SpectrogramView
from app.widgets.takes_list import TakesListWidget
from app.widgets.tier_widgets import add_compare_button, add_tier_rows
from app.widgets.waveform import WaveformView

log = logging.getLogger(__name__)

WINDOW_TITLE = "SA3 Studio"
SFX_PRESETS = (0.5, 1.0, 2.0, 5.0)
MUSIC_PRESETS = (10.0, 30.0, 60.0, 120.0)
WAVEFORM_MIN_HEIGHT = 160  # px


def _named(widget, name: str, icon_name: str = ""):
    widget.setObjectName(name)
    if icon_name:
        widget.setIcon(icon(icon_name))
    return widget


class MainWindow(QMainWindow):
    """Holds the widgets; `app.studio.Studio` composes the controllers that wire them up."""

    def __init__(self) -> None:
        super().__init__()
        apply_theme(QApplication.instance())  # however the window is built, it looks the same
        self.setObjectName("mainWindow")
        self.setWindowTitle(WINDOW_TITLE)
        self.setWindowIcon(icon("app"))
        self.resize(1280, 800)
        self.was_shown = False  # a window never on screen has no layout the user arranged
        self._build_generation_panel()
        self._build_center()
        self._build_takes_panel()
        splitter = _named(QSplitter(Qt.Orientation.Horizontal), "mainSplitter")
        splitter.addWidget(self.generation_panel)
        splitter.addWidget(self.center)
        splitter.addWidget(self.takes_panel)
        splitter.setStretchFactor(1, 1)
        # Dragging a handle stops at a column's minimum instead of hiding the column.
        splitter.setChildrenCollapsible(False)
        splitter.setSizes([330, 640, 380])
        self.splitter = splitter
        self.setCentralWidget(splitter)
        self.setStatusBar(_named(QStatusBar(), "statusBar"))
        self._build_list_progress()
        build_menus(self)

    # ------------------------------------------------------------------ generation panel
    def _build_generation_panel(self) -> None:
        panel = QWidget()
        layout = QVBoxLayout(panel)
        layout.addWidget(QLabel("Prompt (Ctrl+Enter generates)"))
        self.prompt_edit = _named(QPlainTextEdit(), "promptEdit")
        self.prompt_edit.setPlaceholderText("coin pickup, bright, short")
        self.prompt_edit.setMaximumHeight(90)
        layout.addWidget(self.prompt_edit)
        self.negative_edit = _named(QLineEdit(), "negativePromptEdit")
        self.negative_edit.setPlaceholderText("negative prompt (what to avoid)")
        self.negative_hint = _named(QLabel(NEGATIVE_OFF_HELP), "negativePromptHint")
        self.negative_hint.setWordWrap(True)
        layout.addWidget(self.negative_edit)
        layout.addWidget(self.negative_hint)

        form = QFormLayout()
        self.model_combo = FullNameCombo("modelCombo", 18)
        self.decoder_combo = FullNameCombo("decoderCombo", 14)
        self.precision_combo = FullNameCombo("precisionCombo", 14)
        form.addRow("Model", self.model_combo)
        form.addRow("Decoder", self.decoder_combo)
        form.addRow("Precision", self.precision_combo)
        add_tier_rows(self, form)  # Codec tier, and what the chosen tiers cost and give
        self.seconds_spin = _named(QDoubleSpinBox(), "secondsSpin")
        self.seconds_spin.setRange(0.1, 380.4)
        self.seconds_spin.setDecimals(2)
        self.seconds_spin.setSuffix(" s")
        self.seconds_spin.setValue(2.0)
        form.addRow("Length", self.seconds_spin)
        presets = QGridLayout()
        self.preset_buttons = []
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
        form.addRow(presets)
        self.steps_spin = _named(QSpinBox(), "stepsSpin")
        self.steps_spin.setRange(1, 50)
        self.steps_spin.setValue(8)
        form.addRow("Steps", self.steps_spin)
        self.cfg_spin = _named(QDoubleSpinBox(), "cfgSpin")
        self.cfg_spin.setRange(0.0, 15.0)
        self.cfg_spin.setSingleStep(0.5)
        self.cfg_spin.setValue(1.0)
        form.addRow("CFG", self.cfg_spin)
        self.apg_spin = _named(QDoubleSpinBox(), "apgSpin")
        self.apg_spin.setRange(0.0, 1.0)
        self.apg_spin.setSingleStep(0.1)
        self.apg_spin.setValue(1.0)
        form.addRow("APG", self.apg_spin)
        seed_row = QHBoxLayout()
        self.seed_edit = _named(QLineEdit(), "seedEdit")
        self.seed_edit.setPlaceholderText("random")
        self.seed_lock = _named(QCheckBox("Lock"), "seedLockCheck")
        self.dice_button = _named(QToolButton(), "diceButton", "dice")
        self.dice_button.setText("Dice")  # the accessible name; the dice icon is what shows
        self.dice_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
        self.dice_button.setToolTip("Pick a new random seed")
        seed_row.addWidget(self.seed_edit)
        seed_row.addWidget(self.seed_lock)
        seed_row.addWidget(self.dice_button)
        form.addRow("Seed", seed_row)
        self.variations_spin = _named(QSpinBox(), "variationsSpin")
        self.variations_spin.setRange(1, 16)
        self.variations_spin.setValue(1)
        form.addRow("Variations", self.variations_spin)
        self.reroll_flagged_check = _named(QCheckBox("Reroll flagged takes"),
                                           "rerollFlaggedCheck")
        self.reroll_flagged_check.setToolTip(
            "A take flagged for silence, clipping, DC offset or broken samples is made again "
            "with a new seed (up to 3 times)")
        form.addRow(self.reroll_flagged_check)
        layout.addLayout(form)

        init_box = QGroupBox("Init audio")
        init_layout = QVBoxLayout(init_box)
        self.init_label = _named(QLabel(NO_INIT), "initLabel")
        self.init_label.setWordWrap(True)
        init_layout.addWidget(self.init_label)
        row = QHBoxLayout()
        self.clear_init_button = _named(QPushButton("Clear"), "clearInitButton", "cancel")
        self.span_mode_check = _named(QCheckBox("Paint spans to regenerate"), "spanModeCheck")
        row.addWidget(self.span_mode_check)
        row.addWidget(self.clear_init_button)
        init_layout.addLayout(row)
        self.init_noise_slider = _named(QSlider(Qt.Orientation.Horizontal), "initNoiseSlider")
        self.init_noise_slider.setRange(1, 100)
        self.init_noise_slider.setValue(60)
        self.init_noise_label = _named(QLabel(), "initNoiseLabel")
        self.init_noise_label.setWordWrap(True)
        init_layout.addWidget(self.init_noise_slider)
        init_layout.addWidget(self.init_noise_label)
        layout.addWidget(init_box)

        buttons = QGridLayout()
        self.generate_button = _named(QPushButton("Generate"), "generateButton", "generate")
        self.generate_button.setDefault(True)
        self.generate_button.setToolTip("Generate takes from the prompt (Ctrl+Enter)")
        self.reroll_button = _named(QPushButton("Reroll"), "rerollButton", "reroll")
        self.reroll_button.setToolTip("One more take with the same settings and a new seed")
        self.cancel_button = _named(QPushButton("Cancel"), "cancelButton", "cancel")
        self.cancel_button.setEnabled(False)
        buttons.addWidget(self.generate_button, 0, 0, 1, 2)
        buttons.addWidget(self.reroll_button, 1, 0)
        buttons.addWidget(self.cancel_button, 1, 1)
        self.seed_used_label = _named(QLabel("Seed used: -"), "seedUsedLabel")
        self.seed_used_label.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse)
        buttons.addWidget(self.seed_used_label, 2, 0, 1, 2)
        layout.addStretch(1)
        # On a short screen the settings scroll instead of squeezing (or cutting off) their
        # rows; Generate stays in sight below them.
        scroll = _named(SettingsScroll(), "generationScroll")
        scroll.setWidget(panel)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        column = QWidget()
        column_layout = QVBoxLayout(column)
        column_layout.setContentsMargins(0, 0, 0, 0)
        column_layout.addWidget(scroll, 1)
        column_layout.addLayout(buttons)
        buttons.setContentsMargins(9, 0, 9, 6)
        self.generation_panel = column

    # ------------------------------------------------------------------ center
    def _build_center(self) -> None:
        center = QWidget()
        layout = QVBoxLayout(center)
        self.model_banner = _named(QLabel(), "modelBanner")
        layout.addWidget(self.model_banner)
        self.waveform = WaveformView()
        # The waveform is what a designer looks at: at the window's minimum size it keeps
        # room for two channels and their time axis (the window's minimum grows instead).
        self.waveform.setMinimumHeight(max(self.waveform.minimumSizeHint().height(),
                                           WAVEFORM_MIN_HEIGHT))
        layout.addWidget(self.waveform, stretch=3)
        self.finish_panel = FinishPanel()
        layout.addWidget(self.finish_panel)
        self.tabs = QTabWidget()
        self.spectrogram = SpectrogramView()
        self.latent_view = LatentView()
        self.tabs.addTab(self.spectrogram, "Spectrogram")
        self.tabs.addTab(self.latent_view, "Latent")
        layout.addWidget(self.tabs, stretch=2)
        transport = QHBoxLayout()
        # one icon for both states: the controllers switch the text between Play and Pause
        self.play_button = _named(QPushButton("Play"), "playButton", "play-pause")
        self.play_button.setToolTip("Play / pause (Space)")
        self.loop_check = _named(QCheckBox("Loop (L)"), "loopCheck", "loop")
        self.autoplay_check = _named(QCheckBox("Auto-play new takes"), "autoplayCheck")
        self.autoplay_check.setChecked(True)
        self.volume_slider = _named(QSlider(Qt.Orientation.Horizontal), "volumeSlider")
        self.volume_slider.setRange(0, 100)
        self.volume_slider.setValue(80)
        self.volume_slider.setMaximumWidth(120)
        self.position_label = _named(QLabel("0.00 / 0.00 s"), "positionLabel")
        transport.addWidget(self.play_button)
        transport.addWidget(self.loop_check)
        transport.addWidget(self.autoplay_check)
        transport.addWidget(QLabel("Volume"))
        transport.addWidget(self.volume_slider)
        transport.addStretch(1)
        transport.addWidget(self.position_label)
        layout.addLayout(transport)
        self.center = center

    # ------------------------------------------------------------------ takes
    def _build_takes_panel(self) -> None:
        panel = QWidget()
        layout = QVBoxLayout(panel)
        hint = QLabel("Takes (Up/Down to compare, drag out to export)")
        hint.setWordWrap(True)  # the column may be narrower than the sentence
        layout.addWidget(hint)
        self.takes_list = _named(TakesListWidget(), "takesList")
        layout.addWidget(self.takes_list, stretch=1)
        grid = QGridLayout()
        self.use_init_button = _named(QPushButton("Use as init"), "useAsInitButton", "init")
        self.use_init_button.setToolTip("Use the take as init audio for the next generation")
        self.export_button = _named(QPushButton("Save As..."), "exportButton", "save")
        self.export_button.setToolTip("Save the take to a file (Ctrl+S)")
        self.copy_button = _named(QPushButton("Copy"), "copyButton", "copy")
        self.copy_button.setToolTip("Copy the take's file to the clipboard")
        self.delete_button = _named(QPushButton("Delete"), "deleteTakeButton", "delete")
        self.delete_button.setToolTip("Remove the take from the session")
        grid.addWidget(self.use_init_button, 0, 0)
        grid.addWidget(self.export_button, 0, 1)
        grid.addWidget(self.copy_button, 1, 0)
        grid.addWidget(self.delete_button, 1, 1)
        add_compare_button(self, grid, 2)
        layout.addLayout(grid)
        self.library_panel = LibraryPanel()
        tabs = _named(QTabWidget(), "sideTabs")
        tabs.addTab(panel, "Session")
        tabs.addTab(self.library_panel, "Library")
        self.side_tabs = tabs
        self.takes_panel = tabs

    def showEvent(self, event) -> None:  # noqa: N802 - Qt override
        self.was_shown = True
        super().showEvent(event)

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt override
        studio = getattr(self, "studio", None)
        if studio is not None:
            if self.was_shown:
                studio.remember_window()
            studio.shutdown()
        super().closeEvent(event)

    def _build_list_progress(self) -> None:
        """A sound list's progress and its Cancel, at the right of the status bar while it
        renders (app.batch_controller shows and hides them)."""
        self.list_progress = _named(QProgressBar(), "renderListProgress")
        self.list_progress.setMaximumWidth(220)
        self.list_progress.setFormat("%v/%m takes")
        self.list_cancel_button = _named(QPushButton("Cancel list"), "renderListCancelButton")
        self.list_cancel_button.setToolTip("Stop after the current take; render the list "
                                           "again to continue")
        for widget in (self.list_progress, self.list_cancel_button):
            self.statusBar().addPermanentWidget(widget)
            widget.hide()

def build_main_window(*, start_worker: bool = True):
    """The main window, wired to its controllers, not shown; honours SA3_STUDIO_HOME."""
    from app.studio import Studio

    window = MainWindow()
    window.studio = Studio(window, start_worker=start_worker)
    return window
