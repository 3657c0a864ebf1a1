"""Stereo waveform of one take: zoom, pan, playhead, inpaint spans, drop in and drag out.

Layout and signals only. What a click, a span, a dropped file or a drag-out means is the
controller's business; this widget reports them (`seekRequested`, `spansChanged`,
`fileDropped`, `dragOutRequested`).

Samples are drawn through a `PeakPyramid` per channel, so a redraw costs about the plot's width
in points whatever the take's length. int16 input is scaled by 1/32768 (-32768 -> exactly -1.0).
The span regions are drawn by a `SpanOverlay`; the axes follow `plot_axes`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPoint, QPointF, QRect, Qt, Signal
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent, QFontMetrics, QResizeEvent
from PySide6.QtWidgets import QVBoxLayout, QWidget

from app.widgets.drops import dropped_file
from app.widgets.peaks import PeakPyramid
from app.widgets.plot_axes import (
    AMPLITUDE_TICKS,
    EMPTY_SECONDS,
    SHORT_AMPLITUDE_TICKS,
    plain_axis_label,
)
from app.widgets.span_overlay import SpanOverlay
from app.widgets.wave_data import Span, prepare_waveform, snap_spans
from app.widgets.wave_input import DragHandle, WaveViewBox
from engines.constants import SAMPLE_RATE, SAMPLES_PER_LATENT

# Used until the plot has been laid out (a hidden widget has no width yet).
FALLBACK_WIDTH_PX = 1024
# Narrowest visible range: a few dozen samples is as far as zooming in is useful.
MIN_VISIBLE_SAMPLES = 32

AXIS_WIDTH = 44  # the amplitude axes' width (wider when the drag grip needs it)
GRIP_MARGIN = 3

_CURVE_PEN = pg.mkPen("#7fc8ff", width=1)
_PLAYHEAD_PEN = pg.mkPen("#ffcc33", width=1)


class WaveformView(QWidget):
    """Both channels of a take as two stacked plots sharing one time axis (seconds)."""

    seekRequested = Signal(float)
    spansChanged = Signal(list)
    fileDropped = Signal(str)
    dragOutRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("waveformView")
        self.setAcceptDrops(True)
        self._sample_rate = SAMPLE_RATE
        self._channels: list[np.ndarray] = []
        self._pyramids: list[PeakPyramid] = []
        self._spans: list[Span] = []
        self._painted: list[Span] = []
        self._playhead_s = 0.0

        self._plots = pg.GraphicsLayoutWidget()
        self._plots.setObjectName("waveformPlots")
        # Drops must reach this widget, not the graphics view (which would hand them to the scene).
        self._plots.setAcceptDrops(False)
        self._plots.viewport().setAcceptDrops(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._plots)

        self._view_boxes: list[WaveViewBox] = []
        self._curves: list[pg.PlotCurveItem] = []
        self._playheads: list[pg.InfiniteLine] = []
        self._plot_items: list[pg.PlotItem] = []
        for channel, name in enumerate(("L", "R")):
            self._add_channel_plot(channel, name)
        self._plot_items[1].setXLink(self._plot_items[0])
        self._overlay = SpanOverlay(self._plot_items)

        top = self._view_boxes[0]
        top.sigXRangeChanged.connect(self._redraw)
        top.sigResized.connect(self._redraw)
        top.sigResized.connect(self._fit_amplitude_ticks)
        for box in self._view_boxes:
            box.leftClicked.connect(self._on_left_click)
            box.rightClicked.connect(self.remove_span_at)
            box.spanDragged.connect(self._on_span_drag)

        # The drag grip sits in the corner under the amplitude axis, beside the time axis: never
        # over the plots, where the end marker and the fade-out and trim handles are drawn.
        self._drag_handle = DragHandle(self)
        self._drag_handle.dragStarted.connect(self.dragOutRequested)
        self._drag_handle.adjustSize()
        axis_width = max(AXIS_WIDTH, self._drag_handle.width() + 2 * GRIP_MARGIN)
        for plot in self._plot_items:
            plot.getAxis("left").setWidth(axis_width)
        self._drag_handle.raise_()

    def _add_channel_plot(self, channel: int, name: str) -> None:
        box = WaveViewBox()
        plot = self._plots.addPlot(row=channel, col=0, viewBox=box)
        plot.hideButtons()
        plot.setMenuEnabled(False)
        plot.setLabel("left", name)
        left = plot.getAxis("left")
        left.setWidth(AXIS_WIDTH)  # equal widths keep the two time axes aligned
        left.setTicks(AMPLITUDE_TICKS)
        # A label that would spill past its own plot (a very short plot) is hidden instead of
        # drawn over the other channel's.
        left.setStyle(hideOverlappingLabels=True)
        if channel == 0:
            plot.hideAxis("bottom")
        else:
            plain_axis_label(plot, "bottom", "Time (s)")
        box.setMouseEnabled(x=True, y=False)
        box.disableAutoRange()
        box.setYRange(-1.0, 1.0, padding=0)
        box.setXRange(0.0, EMPTY_SECONDS, padding=0)

        curve = pg.PlotCurveItem(pen=_CURVE_PEN, antialias=False, skipFiniteCheck=True)
        plot.addItem(curve)
        playhead = pg.InfiniteLine(pos=0.0, angle=90, movable=False, pen=_PLAYHEAD_PEN)
        playhead.setZValue(20)
        plot.addItem(playhead, ignoreBounds=True)

        self._view_boxes.append(box)
        self._plot_items.append(plot)
        self._curves.append(curve)
        self._playheads.append(playhead)

    # ---- audio ---------------------------------------------------------------------------

    def set_audio(self, pcm: np.ndarray, sample_rate: int = SAMPLE_RATE, *,
                  prepared: tuple[list[np.ndarray], list[PeakPyramid]] | None = None) -> None:
        """Show a take: (N, 2) int16 (scaled by 1/32768) or float; zooms out to all of it.

        Existing spans are kept, re-snapped to the new length (spansChanged only if that
        changed them): a regenerated take usually keeps the spans the user marked.
        """
        if sample_rate <= 0:
            raise ValueError(f"sample rate must be positive, got {sample_rate}")
        # `prepared` (from prepare_waveform, built off the GUI thread) skips the heavy part.
        channels, pyramids = prepared if prepared is not None else prepare_waveform(pcm)
        self._sample_rate = int(sample_rate)
        self._channels = channels
        self._pyramids = pyramids
        duration = self.duration
        box = self._view_boxes[0]
        if duration > 0:
            min_range = min(duration, MIN_VISIBLE_SAMPLES / self._sample_rate)
            for each in self._view_boxes:
                each.setLimits(xMin=0.0, xMax=duration, minXRange=min_range)
        box.setXRange(0.0, max(duration, 1.0 / self._sample_rate), padding=0)
        self._redraw()
        self.set_spans(self._spans)

    def clear(self) -> None:
        """Forget the take, its spans (emitting spansChanged if there were any) and the playhead."""
        self._channels = []
        self._pyramids = []
        for box in self._view_boxes:
            box.setLimits(xMin=None, xMax=None, minXRange=None)
        for curve in self._curves:
            curve.setData([], [])
        self.clear_spans()
        self.set_painted_spans([])
        self.set_playhead(0.0)
        self._view_boxes[0].setXRange(0.0, EMPTY_SECONDS, padding=0)

    def samples(self) -> np.ndarray:
        """The (N, 2) float32 samples shown, at full resolution (a copy)."""
        if not self._channels:
            return np.zeros((0, 2), dtype=np.float32)
        return np.column_stack(self._channels)

    @property
    def sample_rate(self) -> int:
        return self._sample_rate

    @property
    def duration(self) -> float:
        """Length of the take in seconds (0.0 when empty)."""
        return len(self._channels[0]) / self._sample_rate if self._channels else 0.0

    # ---- view ----------------------------------------------------------------------------

    def visible_range(self) -> tuple[float, float]:
        """The (start, end) seconds currently shown."""
        start, end = self._view_boxes[0].viewRange()[0]
        return float(start), float(end)

    def set_visible_range(self, start: float, end: float) -> None:
        """Show [start, end] seconds (clamped to the take by the view's limits)."""
        self._view_boxes[0].setXRange(start, end, padding=0)

    def plot_width_px(self) -> int:
        """Device pixels across the plot area: the number of columns a redraw needs."""
        width = self._view_boxes[0].width() * self._plots.devicePixelRatioF()
        return int(width) if width >= 16 else FALLBACK_WIDTH_PX

    def curve_data(self, channel: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """The (x seconds, y) points currently drawn for a channel (for tests and benchmarks)."""
        x, y = self._curves[channel].getData()
        if x is None:
            return np.zeros(0), np.zeros(0, dtype=np.float32)
        return x, y

    def _redraw(self, *_args: object) -> None:
        if not self._pyramids:
            return
        start_s, end_s = self.visible_range()
        rate = self._sample_rate
        start = max(int(math.floor(start_s * rate)), 0)
        stop = int(math.ceil(end_s * rate)) + 1
        width = self.plot_width_px()
        for pyramid, curve in zip(self._pyramids, self._curves, strict=True):
            x, y = pyramid.envelope(start, stop, width)
            curve.setData(x / rate, y)

    def _fit_amplitude_ticks(self, *_args) -> None:
        axis = self._plot_items[0].getAxis("left")
        line = QFontMetrics(axis.style["tickFont"] or axis.font()).height()
        roomy = self._view_boxes[0].height() / 4 > line + 2  # 0.5 apart = a quarter height
        for plot in self._plot_items:
            plot.getAxis("left").setTicks(AMPLITUDE_TICKS if roomy else SHORT_AMPLITUDE_TICKS)

    def plot_viewport(self) -> QWidget:
        """The widget that receives mouse events over the plots."""
        return self._plots.viewport()

    def plot_items(self) -> list[pg.PlotItem]:  # for overlays (app.finish.handles)
        return list(self._plot_items)

    def position_for_seconds(self, seconds: float, channel: int = 0) -> QPoint:
        """Where `seconds` lies on `plot_viewport()`, vertically centred on a channel's plot."""
        box = self._view_boxes[channel]
        centre_y = box.mapViewToScene(QPointF(0.0, 0.0)).y()
        scene_x = box.mapViewToScene(QPointF(seconds, 0.0)).x()
        return self._plots.mapFromScene(QPointF(scene_x, centre_y))

    def seconds_at(self, pos: QPoint) -> float:
        """The time under a point of `plot_viewport()`."""
        scene = self._plots.mapToScene(pos)
        return float(self._view_boxes[0].mapSceneToView(scene).x())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        handle = self._drag_handle
        handle.adjustSize()
        handle.move(GRIP_MARGIN, self.height() - handle.height() - GRIP_MARGIN)
        handle.raise_()

    def plot_rects(self) -> list[QRect]:
        """Where the channels' plot areas are in this widget (what the grip must not cover)."""
        rects = []
        for box in self._view_boxes:
            area = self._plots.mapFromScene(box.sceneBoundingRect()).boundingRect()
            rects.append(area.translated(self._plots.viewport().mapTo(self, QPoint(0, 0))))
        return rects

    # ---- playhead and seeking ------------------------------------------------------------

    def set_playhead(self, seconds: float) -> None:
        self._playhead_s = float(seconds)
        for line in self._playheads:
            line.setValue(self._playhead_s)

    def playhead(self) -> float:
        return self._playhead_s

    def _on_left_click(self, seconds: float) -> None:
        if self._channels:
            self.seekRequested.emit(min(max(seconds, 0.0), self.duration))

    # ---- inpaint spans -------------------------------------------------------------------

    def set_span_mode(self, enabled: bool) -> None:
        """In span mode a left drag on the plot marks a span instead of panning."""
        for box in self._view_boxes:
            box.span_mode = bool(enabled)
        cursor = Qt.CursorShape.IBeamCursor if enabled else Qt.CursorShape.ArrowCursor
        self._plots.viewport().setCursor(cursor)
        if not enabled:
            self._overlay.show_preview(None)

    def span_mode(self) -> bool:
        return self._view_boxes[0].span_mode

    def spans(self) -> list[Span]:
        return list(self._spans)

    def set_spans(self, spans: Iterable[Sequence[float]]) -> None:
        """Replace all spans (seconds); they are snapped, clipped and merged first."""
        snapped = snap_spans(spans, self.duration, SAMPLES_PER_LATENT, self._sample_rate)
        if snapped == self._spans:
            return
        self._spans = snapped
        self._overlay.draw_spans(snapped)
        self.spansChanged.emit(list(self._spans))

    def add_span(self, start: float, end: float) -> None:
        """Add a span (seconds), as a span-mode drag does when the button is released."""
        self.set_spans([*self._spans, (start, end)])

    def remove_span(self, index: int) -> None:
        spans = list(self._spans)
        del spans[index]
        self.set_spans(spans)

    def remove_span_at(self, seconds: float) -> bool:
        """Remove the span under `seconds` (what a right-click does); False if none is there."""
        for index, (start, end) in enumerate(self._spans):
            if start <= seconds <= end:
                self.remove_span(index)
                return True
        return False

    def clear_spans(self) -> None:
        self.set_spans([])

    def span_regions(self) -> list[pg.LinearRegionItem]:
        """The region items drawn for the spans, one per span per channel."""
        return self._overlay.span_regions()

    # ---- what an inpainted take had regenerated (a record: not editable, not emitted) ------

    def set_painted_spans(self, spans: Iterable[Sequence[float]]) -> None:
        """Tint the parts (seconds) that inpainting regenerated in the take shown; [] clears."""
        painted = sorted((float(a), float(b)) for a, b in spans if float(b) > float(a))
        if painted == self._painted:
            return
        self._painted = painted
        self._overlay.draw_painted(painted)

    def painted_spans(self) -> list[Span]:
        return list(self._painted)

    def painted_regions(self) -> list[pg.LinearRegionItem]:
        """The tinted items of `set_painted_spans`, one per span per channel."""
        return self._overlay.painted_regions()

    def _on_span_drag(self, start: float, now: float, finished: bool) -> None:
        if finished:
            self._overlay.show_preview(None)
            self.add_span(start, now)
            return
        snapped = snap_spans([(start, now)], self.duration, SAMPLES_PER_LATENT, self._sample_rate)
        self._overlay.show_preview(snapped[0] if snapped else None)

    # ---- drop in -------------------------------------------------------------------------

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if dropped_file(event):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:
        if dropped_file(event):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:
        path = dropped_file(event)
        if path is None:
            event.ignore()
            return
        event.acceptProposedAction()
        # The controller decides whether the file is audio it can read, and says so if not.
        self.fileDropped.emit(path)
