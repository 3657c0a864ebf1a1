"""The latents of the last generation, one heatmap per sampler step, to watch it denoise."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtWidgets import QLabel, QSlider, QVBoxLayout, QWidget

from app.widgets.plot_axes import EMPTY_SECONDS, plain_axis_label
from engines.constants import LATENT_CHANNELS, SAMPLE_RATE, SAMPLES_PER_LATENT

COLORMAP = "CET-D1"  # diverging: latents are signed, zero sits in the middle
EMPTY_TEXT = "No generation yet"
# The colour range comes from a subsample: exact enough, and fast for hundreds of MB of steps
# (the GUI thread computes it when a take is shown: 2M values took ~20 ms).
_RANGE_SAMPLE = 200_000
_RANGE_PERCENTILE = 99.9


def symmetric_limit(latents: np.ndarray) -> float:
    """A colour limit L for the range [-L, L] shared by every step (robust to a few outliers)."""
    flat = latents.reshape(-1)
    sample = np.abs(flat[:: max(1, flat.size // _RANGE_SAMPLE)])
    if sample.size == 0:
        return 1.0
    limit = float(np.percentile(sample, _RANGE_PERCENTILE))
    return limit if limit > 0 and np.isfinite(limit) else 1.0


class LatentView(QWidget):
    """A 256 x L heatmap (x: seconds of audio the latent covers, y: channel) plus a step slider.

    All steps share one symmetric colour range, so colours mean the same value at every step.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("latentView")
        self._steps = np.zeros((0, LATENT_CHANNELS, 0), dtype=np.float32)
        self._limit = 1.0

        # The plot is built when the view is first shown: it sits on a tab that is not current
        # when the window opens (a plot costs ~18 ms of first paint), and latents given before
        # then (every take shown) wait for it rather than stall the GUI thread building it.
        self._plot: pg.PlotWidget | None = None
        self._item: pg.ImageItem | None = None

        self._slider = QSlider(Qt.Orientation.Horizontal)
        self._slider.setObjectName("latentStepSlider")
        self._slider.setToolTip("Step through the sampler to watch the noise resolve")
        self._slider.valueChanged.connect(self._show_step)
        self._label = QLabel(EMPTY_TEXT)
        self._label.setObjectName("latentStepLabel")

        layout = self._layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._slider)
        layout.addWidget(self._label)
        self.clear()

    def showEvent(self, event) -> None:  # noqa: N802 - Qt override
        self._ensure_plot()
        super().showEvent(event)

    def _ensure_plot(self) -> None:
        """The heatmap's plot, built when the view is first shown (see __init__)."""
        if self._plot is None:
            self._plot = pg.PlotWidget()
            self._plot.setObjectName("latentPlot")
            item = self._plot.getPlotItem()
            item.hideButtons()
            item.setMenuEnabled(False)
            plain_axis_label(item, "left", "Latent channel")
            plain_axis_label(item, "bottom", "Time (s)")
            self._item = pg.ImageItem()
            self._item.setColorMap(pg.colormap.get(COLORMAP))
            item.addItem(self._item)
            self._layout.insertWidget(0, self._plot, 1)
            if len(self._steps):
                self._show_step(self._slider.value())
                item.getViewBox().autoRange(padding=0)
            else:
                self._show_empty_range()

    def set_latents(self, step_latents: np.ndarray) -> None:
        """Latents per step, shape (steps, 256, L) (a single (256, L) counts as one step).

        Shows the final step.
        """
        steps = np.asarray(step_latents, dtype=np.float32)
        if steps.ndim == 2:
            steps = steps[None]
        if steps.ndim != 3 or steps.shape[0] == 0:
            raise ValueError(f"latents must have shape (steps, 256, L), got {steps.shape}")
        self._steps = steps
        self._limit = symmetric_limit(steps)
        self._slider.blockSignals(True)
        self._slider.setRange(0, len(steps) - 1)
        self._slider.setValue(len(steps) - 1)
        self._slider.blockSignals(False)
        self._slider.setEnabled(len(steps) > 1)
        self._show_step(len(steps) - 1)
        if self._plot is not None:  # else the plot zooms to them when it is built (on show)
            self._plot.getPlotItem().getViewBox().autoRange(padding=0)

    def set_step(self, index: int) -> None:
        """Show step `index` (0-based), as moving the slider does."""
        self._slider.setValue(index)

    @property
    def current_step(self) -> int:
        """The 0-based step shown (-1 when there is nothing to show)."""
        return self._slider.value() if len(self._steps) else -1

    @property
    def step_count(self) -> int:
        return len(self._steps)

    def image(self) -> np.ndarray:
        """The (256, L) latents of the step shown."""
        if not len(self._steps):
            return np.zeros((LATENT_CHANNELS, 0), dtype=np.float32)
        return self._steps[self.current_step]

    def step_text(self) -> str:
        return self._label.text()

    def clear(self) -> None:
        self._steps = np.zeros((0, LATENT_CHANNELS, 0), dtype=np.float32)
        if self._item is not None:
            self._item.clear()
            self._show_empty_range()
        self._slider.blockSignals(True)
        self._slider.setRange(0, 0)
        self._slider.blockSignals(False)
        self._slider.setEnabled(False)
        self._label.setText(EMPTY_TEXT)

    def _show_empty_range(self) -> None:
        # Empty axes that read like the filled ones (seconds by channels), not -0.5..0.5.
        self._plot.getPlotItem().getViewBox().setRange(
            xRange=(0.0, EMPTY_SECONDS), yRange=(0.0, LATENT_CHANNELS), padding=0)

    def _show_step(self, index: int) -> None:
        if not len(self._steps):
            return
        self._label.setText(f"Step {index + 1} of {len(self._steps)}")
        if self._item is None:  # not built yet: it shows this step when it is
            return
        # ImageItem's first axis is x: time goes across, channels up.
        latents = self._steps[index]
        self._item.setImage(latents.T, autoLevels=False, levels=(-self._limit, self._limit))
        # After setImage: the rect scales the image by its current size.
        channels, length = latents.shape
        self._item.setRect(QRectF(0.0, 0.0, length * SAMPLES_PER_LATENT / SAMPLE_RATE, channels))
