"""The Finish panel under the waveform: layout, and the panel as FinishSettings and back.

Behaviour lives in app.finish.controller; this widget only says when a value was edited
(`edited`). Manual trim points have no fields here: they are the trim handles on the waveform
(app.finish.handles), kept with the panel's values so `settings()` is the whole chain.

Object names (a contract for tests): finishPanel, presetCombo, savePresetButton,
deletePresetButton, nameTemplateEdit, trimCheck, trimDbSpin, resetTrimButton, fadeInSpin,
fadeOutSpin, fadeCurveCombo, loudnessCheck, loudnessSpin, truePeakCheck, truePeakSpin,
rateCombo, monoCheck, formatCombo, loopButton, remakeLoopButton, loopSeamSpin,
loopMethodCombo, hearWrapButton, abButton, loudnessLabel.
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from engines.delivery.names import DEFAULT_TEMPLATE
from engines.finish.settings import (
    FADE_CURVES,
    FADE_RANGE_MS,
    LOOP_SEAM_RANGE_S,
    LOUDNESS_RANGE,
    TRIM_DB_RANGE,
    TRUE_PEAK_RANGE,
    FinishSettings,
)

FORMAT_LABELS = {"wav16": "WAV 16-bit", "wav24": "WAV 24-bit", "wav32f": "WAV 32-bit float",
                 "flac": "FLAC", "ogg": "OGG Vorbis"}
RATE_LABELS = {44100: "44.1 kHz", 48000: "48 kHz"}
LOOP_METHODS = {"model": "Model seam", "crossfade": "Crossfade"}
AB_TEXT = {False: "Hearing: raw", True: "Hearing: finished"}
LOOP_SKIPS = ("A loop is not trimmed or faded: its end plays into its start without a gap. "
              "Press Looped to go back to the one-shot and trim or fade it.")


def _named(widget, name: str, tip: str = ""):
    widget.setObjectName(name)
    if tip:
        widget.setToolTip(tip)
    return widget


def _spin(name: str, bounds: tuple[float, float], suffix: str, decimals: int = 1,
          step: float = 1.0, tip: str = "") -> QDoubleSpinBox:
    spin = _named(QDoubleSpinBox(), name, tip)
    spin.setRange(*bounds)
    spin.setDecimals(decimals)
    spin.setSingleStep(step)
    spin.setSuffix(suffix)
    spin.setKeyboardTracking(False)  # one change per typed value, not one per digit
    return spin


def _combo(name: str, items: dict, tip: str = "", chars: int = 0) -> QComboBox:
    combo = _named(QComboBox(), name, tip)
    if chars:  # narrower than its longest item; the open list still shows every item whole
        combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        combo.setMinimumContentsLength(chars)
    for data, label in items.items():
        combo.addItem(label, data)
    return combo


def _tool(name: str, text: str, tip: str) -> QToolButton:
    button = _named(QToolButton(), name, tip)
    button.setText(text)
    return button


def _gap() -> QWidget:
    gap = QWidget()
    gap.setFixedWidth(10)
    return gap


def _row(*widgets, stretch: bool = True) -> QHBoxLayout:
    row = QHBoxLayout()
    row.setSpacing(6)
    for widget in widgets:
        if isinstance(widget, str):
            widget = QLabel(widget)
        row.addWidget(widget)
    if stretch:
        row.addStretch(1)
    return row


class FinishPanel(QGroupBox):
    """Preset, trim, fades, loudness, delivery, loop and A/B for the selected take."""

    edited = Signal()  # a value of the chain was changed by the user

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Finish", parent)
        self.setObjectName("finishPanel")
        self._hidden = FinishSettings()  # the values without fields: trim points, loop, ...
        self._build_widgets()
        # Five short rows: the panel must fit the centre column of a 1280x720 window.
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 2, 6, 4)
        layout.setSpacing(3)
        layout.addLayout(_row("Preset", self.preset_combo, self.save_preset_button,
                              self.delete_preset_button, _gap(), "Format", self.format_combo))
        layout.addLayout(_row(self.trim_check, self.trim_db_spin, self.reset_trim_button,
                              _gap(), "Fades", self.fade_in_spin, self.fade_out_spin,
                              self.fade_curve_combo))
        layout.addLayout(_row(self.loudness_check, self.loudness_spin, self.true_peak_check,
                              self.true_peak_spin, _gap(), self.rate_combo, self.mono_check))
        layout.addLayout(_row(self.loop_button, self.remake_loop_button, self.seam_spin,
                              self.loop_method_combo, self.hear_wrap_button, _gap(),
                              self.ab_button))
        names = _row("Name", stretch=False)
        names.addWidget(self.template_edit, 1)
        names.addSpacing(12)
        names.addWidget(self.loudness_label, 2)
        layout.addLayout(names)
        for check, spin in ((self.loudness_check, self.loudness_spin),
                            (self.true_peak_check, self.true_peak_spin)):
            check.toggled.connect(spin.setEnabled)
        for signal in (
                self.trim_check.toggled, self.trim_db_spin.valueChanged,
                self.fade_in_spin.valueChanged, self.fade_out_spin.valueChanged,
                self.fade_curve_combo.currentIndexChanged, self.loudness_check.toggled,
                self.loudness_spin.valueChanged, self.true_peak_check.toggled,
                self.true_peak_spin.valueChanged, self.rate_combo.currentIndexChanged,
                self.mono_check.toggled, self.format_combo.currentIndexChanged,
                self.seam_spin.valueChanged):
            signal.connect(self.edited)
        self.set_settings(FinishSettings())

    def _build_widgets(self) -> None:
        self.preset_combo = _named(QComboBox(), "presetCombo",
                                   "Finishing presets: the built-ins, then your own")
        self.preset_combo.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.preset_combo.setMinimumContentsLength(16)
        self.save_preset_button = _tool("savePresetButton", "Save...",
                                        "Save these values as a preset of your own")
        self.delete_preset_button = _tool("deletePresetButton", "Delete",
                                          "Delete the chosen preset of your own")
        self.rate_combo = _combo("rateCombo", RATE_LABELS, "Delivery sample rate")
        self.mono_check = _named(QCheckBox("Mono"), "monoCheck", "Fold down to mono")
        self.format_combo = _combo("formatCombo", FORMAT_LABELS, "Delivery file format", 10)
        self.trim_check = _named(QCheckBox("Trim"), "trimCheck",
                                 "Cut leading and trailing silence (a short pad is kept)")
        self.trim_db_spin = _spin("trimDbSpin", TRIM_DB_RANGE, " dBFS", 0,
                                  tip="Silence threshold for Trim")
        self.reset_trim_button = _tool("resetTrimButton", "Reset",
                                       "Forget the trim points dragged on the waveform")
        self.fade_in_spin = _spin("fadeInSpin", FADE_RANGE_MS, " ms", 0, 5.0, "Fade in")
        self.fade_out_spin = _spin("fadeOutSpin", FADE_RANGE_MS, " ms", 0, 5.0, "Fade out")
        self.fade_curve_combo = _combo("fadeCurveCombo", {c: c for c in FADE_CURVES},
                                       "Fade curve", 9)
        self.loudness_check = _named(QCheckBox("Loudness"), "loudnessCheck",
                                     "Bring the loudness (BS.1770 integrated; a take under 0.4 s: "
                                     "one 400 ms block) to a target")
        self.loudness_spin = _spin("loudnessSpin", LOUDNESS_RANGE, " LUFS", 1, 0.5)
        self.true_peak_check = _named(QCheckBox("Peak"), "truePeakCheck",
                                      "Keep the true peak (4x oversampled) under a ceiling")
        self.true_peak_spin = _spin("truePeakSpin", TRUE_PEAK_RANGE, " dBTP", 1, 0.1)
        self.ab_button = _named(QPushButton(AB_TEXT[False]), "abButton",
                                "A/B: hear the raw take or the finished one (the playhead "
                                "stays where it is)")
        self.ab_button.setCheckable(True)
        self.ab_button.toggled.connect(lambda on: self.ab_button.setText(AB_TEXT[on]))
        self.loop_button = _named(QPushButton("Make loop"), "loopButton",
                                  "Make a seamless loop with loop points (the model rewrites "
                                  "the seam); press again to go back to the one-shot")
        self.loop_button.setCheckable(True)
        self.remake_loop_button = _tool("remakeLoopButton", "New seam",
                                        "Make the loop again with a new seed")
        self.seam_spin = _spin("loopSeamSpin", LOOP_SEAM_RANGE_S, " s", 2, 0.1,
                               "Seam width the model rewrites")
        self.loop_method_combo = _combo(
            "loopMethodCombo", LOOP_METHODS,
            "Model seam: the model rewrites the seam (needs the take's prompt). Crossfade: "
            "blend end into start (any take; also used while the GPU is busy)")
        self.hear_wrap_button = _named(QPushButton("Hear wrap"), "hearWrapButton",
                                       "Play the loop's last 2 s into its first 2 s (or press "
                                       "L to loop playback)")
        self.template_edit = _named(QLineEdit(DEFAULT_TEMPLATE), "nameTemplateEdit",
                                    "Export name template: {name} {prompt} {seed} {n:02} "
                                    "{preset} {date} {category}")
        self.template_edit.setMinimumWidth(80)
        self.loudness_label = _named(QLabel("-"), "loudnessLabel",
                                     "Loudness and true peak: raw -> finished")
        # The readout also names a short take's loudness method and the trim's lengths: it
        # wraps rather than widening the window.
        self.loudness_label.setWordWrap(True)

    # ------------------------------------------------------------------ values
    def settings(self) -> FinishSettings:
        """The chain the panel shows (not validated: the fields keep values in range)."""
        return replace(
            self._hidden,
            trim=self.trim_check.isChecked(), trim_db=self.trim_db_spin.value(),
            fade_in_ms=self.fade_in_spin.value(), fade_out_ms=self.fade_out_spin.value(),
            fade_curve=self.fade_curve_combo.currentData(),
            loudness_lufs=(self.loudness_spin.value() if self.loudness_check.isChecked()
                           else None),
            true_peak_dbtp=(self.true_peak_spin.value() if self.true_peak_check.isChecked()
                            else None),
            loop=self.loop_button.isChecked(), loop_seam_s=self.seam_spin.value(),
            loop_method=self.loop_method_combo.currentData(),
            rate=self.rate_combo.currentData(), mono=self.mono_check.isChecked(),
            format=self.format_combo.currentData())

    def set_settings(self, settings: FinishSettings) -> None:
        """Show `settings` without emitting `edited`."""
        widgets = [self.trim_check, self.trim_db_spin, self.fade_in_spin, self.fade_out_spin,
                   self.fade_curve_combo, self.loudness_check, self.loudness_spin,
                   self.true_peak_check, self.true_peak_spin, self.rate_combo, self.mono_check,
                   self.format_combo, self.seam_spin, self.loop_button,
                   self.loop_method_combo]
        for widget in widgets:
            widget.blockSignals(True)
        try:
            self._hidden = settings
            s = settings
            self.trim_check.setChecked(s.trim)
            self.trim_db_spin.setValue(s.trim_db)
            self.fade_in_spin.setValue(s.fade_in_ms)
            self.fade_out_spin.setValue(s.fade_out_ms)
            self.fade_curve_combo.setCurrentIndex(self.fade_curve_combo.findData(s.fade_curve))
            self.loudness_check.setChecked(s.loudness_lufs is not None)
            self.loudness_spin.setValue(s.loudness_lufs if s.loudness_lufs is not None else -18)
            self.loudness_spin.setEnabled(s.loudness_lufs is not None)
            self.true_peak_check.setChecked(s.true_peak_dbtp is not None)
            self.true_peak_spin.setValue(s.true_peak_dbtp if s.true_peak_dbtp is not None
                                         else -1)
            self.true_peak_spin.setEnabled(s.true_peak_dbtp is not None)
            self.rate_combo.setCurrentIndex(self.rate_combo.findData(s.rate))
            self.mono_check.setChecked(s.mono)
            self.format_combo.setCurrentIndex(self.format_combo.findData(s.format))
            self.seam_spin.setValue(s.loop_seam_s)
            self.loop_method_combo.setCurrentIndex(
                self.loop_method_combo.findData(s.loop_method))
            self.loop_button.setChecked(s.loop)
        finally:
            for widget in widgets:
                widget.blockSignals(False)

    def set_hidden(self, **changes) -> None:
        """Change values that have no field (trim points, preset name), without `edited`."""
        self._hidden = replace(self.settings(), **changes)

    def skip_for_loop(self, looped: bool) -> None:
        """A loop is not trimmed or faded (engines.finish.chain): those controls are disabled
        while the take is a loop, and say why."""
        for widget in (self.trim_check, self.trim_db_spin, self.reset_trim_button,
                       self.fade_in_spin, self.fade_out_spin, self.fade_curve_combo):
            own = widget.property("ownToolTip")
            if own is None:
                own = widget.toolTip()
                widget.setProperty("ownToolTip", own)
            widget.setEnabled(not looped)
            widget.setToolTip(LOOP_SKIPS if looped else own)

    def set_presets(self, names: list[str], current: str | None) -> None:
        combo = self.preset_combo
        combo.blockSignals(True)
        combo.clear()
        combo.addItems(names)
        combo.setCurrentIndex(max(combo.findText(current or ""), 0) if current else -1)
        combo.blockSignals(False)

    def show_preset(self, name: str) -> None:
        """Show `name` as the chosen preset (-1: none) without choosing it."""
        self.preset_combo.blockSignals(True)
        self.preset_combo.setCurrentIndex(self.preset_combo.findText(name) if name else -1)
        self.preset_combo.blockSignals(False)
