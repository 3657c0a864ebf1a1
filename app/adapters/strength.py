"""An adapter's strength: a slider for the range designers use (0 to 2 in steps of 0.05) and a
number box for the whole range the engine takes (0 to 10, the official app's), kept in step.

Past 2 an adapter's effect is exaggerated far beyond what it was trained for, and a 0..10
slider would leave the useful part (0 to about 1.5) a few pixels wide; so the slider stops at
2 and stays at its end while a larger number is typed."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QDoubleSpinBox, QHBoxLayout, QSlider, QWidget

from engines.adapters.choice import DEFAULT_STRENGTH
from engines.request_adapters import MAX_STRENGTH, MIN_STRENGTH

SLIDER_STEP = 0.05
SLIDER_TOP = 2.0
SLIDER_TICKS = round(SLIDER_TOP / SLIDER_STEP)


class StrengthControl(QWidget):
    """A slider and a number box showing one strength; `valueChanged` once per change."""

    valueChanged = Signal(float)

    def __init__(self, value: float = DEFAULT_STRENGTH) -> None:
        super().__init__()
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, SLIDER_TICKS)
        self.slider.setPageStep(4)  # 0.2 a click beside the handle
        self.slider.setToolTip("Strength: 0 is off, 1 the adapter's full trained effect; type "
                               f"a number up to {MAX_STRENGTH:g} to go past {SLIDER_TOP:g}")
        self.spin = QDoubleSpinBox()
        self.spin.setRange(MIN_STRENGTH, MAX_STRENGTH)
        self.spin.setDecimals(2)
        self.spin.setSingleStep(SLIDER_STEP)
        self.spin.setKeyboardTracking(False)  # a typed number counts once it is complete
        self.spin.setToolTip(self.slider.toolTip())
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.slider, 1)
        layout.addWidget(self.spin)
        self.setValue(value)
        self.slider.valueChanged.connect(self._slid)
        self.spin.valueChanged.connect(self._typed)

    def value(self) -> float:
        return self.spin.value()

    def setValue(self, value: float) -> None:  # noqa: N802 - Qt's spelling, as the boxes'
        self.spin.setValue(value)
        self._place_slider(self.spin.value())

    def set_names(self, slider: str, spin: str) -> None:
        self.slider.setObjectName(slider)
        self.spin.setObjectName(spin)

    def _slid(self, tick: int) -> None:
        if tick == SLIDER_TICKS and self.spin.value() > SLIDER_TOP:
            return  # the slider sits at its end for every typed strength past it
        self.spin.setValue(tick * SLIDER_STEP)

    def _typed(self, value: float) -> None:
        self._place_slider(value)
        self.valueChanged.emit(value)

    def _place_slider(self, value: float) -> None:
        blocked = self.slider.blockSignals(True)
        self.slider.setValue(min(round(value / SLIDER_STEP), SLIDER_TICKS))
        self.slider.blockSignals(blocked)
