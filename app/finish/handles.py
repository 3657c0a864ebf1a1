"""Trim and fade handles drawn on the waveform's plots (both channels), draggable.

Four lines in seconds of the raw take: trim in and out (what is kept lies between them; the
parts cut off are shaded), and the ends of the fade in and fade out (short lines from the
top). Dragging one moves the same line on the other channel at once; letting go reports which
line went where (`moved`) for the controller to put into the chain. Drawing only: the
controller says where the lines are (`set_marks`) and when they are shown.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QObject, Signal

_TRIM_PEN = pg.mkPen("#7ee787", width=2)
_FADE_PEN = pg.mkPen("#d2a8ff", width=2, style=pg.QtCore.Qt.PenStyle.DashLine)
_HOVER_PEN = pg.mkPen("#ffffff", width=3)
_CUT_BRUSH = pg.mkBrush(0, 0, 0, 150)
FADE_SPAN = 0.35  # of the plot's height, from the top
_KINDS = ("trim_in", "trim_out", "fade_in", "fade_out")
_TIPS = {"trim_in": "Trim in: drag to cut the start", "trim_out": "Trim out: drag to cut the end",
         "fade_in": "End of the fade in: drag to lengthen it",
         "fade_out": "Start of the fade out: drag to lengthen it"}


class FinishHandles(QObject):
    moved = Signal(str, float)  # "trim_in" | "trim_out" | "fade_in" | "fade_out", seconds

    def __init__(self, plots: list, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._lines: dict[str, list[pg.InfiniteLine]] = {kind: [] for kind in _KINDS}
        self._cuts: list[tuple[pg.LinearRegionItem, pg.LinearRegionItem]] = []
        self._duration = 0.0
        for plot in plots:
            for kind in _KINDS:
                pen = _TRIM_PEN if kind.startswith("trim") else _FADE_PEN
                line = pg.InfiniteLine(pos=0.0, angle=90, movable=True, pen=pen,
                                       hoverPen=_HOVER_PEN)
                line.setToolTip(_TIPS[kind])
                if kind.startswith("fade"):
                    # Fade handles reach down from the top only, as in a DAW, so one that
                    # sits on a trim line (no fade yet) is still grabbed apart from it.
                    line.setSpan(1 - FADE_SPAN, 1.0)
                line.setZValue(31 if kind.startswith("fade") else 30)
                line.sigPositionChanged.connect(lambda ln, k=kind: self._follow(k, ln))
                line.sigPositionChangeFinished.connect(
                    lambda ln, k=kind: self.moved.emit(k, float(ln.value())))
                plot.addItem(line, ignoreBounds=True)
                self._lines[kind].append(line)
            cuts = []
            for _ in range(2):
                region = pg.LinearRegionItem(values=(0.0, 0.0), movable=False,
                                             brush=_CUT_BRUSH, pen=pg.mkPen(None))
                region.setZValue(8)
                plot.addItem(region, ignoreBounds=True)
                cuts.append(region)
            self._cuts.append((cuts[0], cuts[1]))
        self.set_shown(False)

    # ------------------------------------------------------------------ from the controller
    def set_marks(self, duration: float, start: float, end: float, fade_in_ms: float,
                  fade_out_ms: float) -> None:
        """Show the kept part [start, end] of a `duration` s take and its fade lengths."""
        self._duration = max(float(duration), 0.0)
        end = min(max(end, 0.0), self._duration)
        start = min(max(start, 0.0), end)
        fade_in = min(start + fade_in_ms / 1000, end)
        fade_out = max(end - fade_out_ms / 1000, start)
        for kind, value in (("trim_in", start), ("trim_out", end), ("fade_in", fade_in),
                            ("fade_out", fade_out)):
            for line in self._lines[kind]:
                line.blockSignals(True)
                line.setBounds((0.0, self._duration))
                line.setValue(value)
                line.blockSignals(False)
        self._shade()

    def set_shown(self, shown: bool) -> None:
        for lines in self._lines.values():
            for line in lines:
                line.setVisible(shown)
        for first, last in self._cuts:
            first.setVisible(shown)
            last.setVisible(shown)

    def is_shown(self) -> bool:
        return self._lines["trim_in"][0].isVisible()

    def value(self, kind: str) -> float:
        """Where a line is (seconds): "trim_in", "trim_out", "fade_in" or "fade_out"."""
        return float(self._lines[kind][0].value())

    def lines(self, kind: str) -> list[pg.InfiniteLine]:
        return list(self._lines[kind])

    # ------------------------------------------------------------------ dragging
    def _follow(self, kind: str, moved: pg.InfiniteLine) -> None:
        for line in self._lines[kind]:
            if line is not moved:
                line.blockSignals(True)
                line.setValue(moved.value())
                line.blockSignals(False)
        self._shade()

    def _shade(self) -> None:
        start, end = self.value("trim_in"), self.value("trim_out")
        for first, last in self._cuts:
            first.setRegion((0.0, start))
            last.setRegion((end, self._duration))
