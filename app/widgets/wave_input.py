"""The waveform's input pieces: a ViewBox that reports clicks and span drags, and the drag-out
grip. They only report gestures; `WaveformView` and its controller decide what they mean."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication, QToolButton, QWidget

DRAG_HANDLE_TOOLTIP = "Drag this take into a folder or DAW"


class WaveViewBox(pg.ViewBox):
    """A ViewBox that reports clicks and, in span mode, left drags instead of panning."""

    leftClicked = Signal(float)
    rightClicked = Signal(float)
    # (where the drag started, where it is now, whether the button was released), in seconds
    spanDragged = Signal(float, float, bool)

    def __init__(self) -> None:
        super().__init__(enableMenu=False)
        self.span_mode = False

    def mouseClickEvent(self, ev) -> None:
        x = self.mapSceneToView(ev.scenePos()).x()
        if ev.button() == Qt.MouseButton.LeftButton:
            ev.accept()
            self.leftClicked.emit(x)
        elif ev.button() == Qt.MouseButton.RightButton:
            ev.accept()
            self.rightClicked.emit(x)
        else:
            super().mouseClickEvent(ev)

    def mouseDragEvent(self, ev, axis=None) -> None:
        # Drags on an axis (axis is not None) keep panning even in span mode.
        if self.span_mode and axis is None and ev.button() == Qt.MouseButton.LeftButton:
            ev.accept()
            start = self.mapSceneToView(ev.buttonDownScenePos(Qt.MouseButton.LeftButton)).x()
            now = self.mapSceneToView(ev.scenePos()).x()
            self.spanDragged.emit(start, now, ev.isFinish())
            return
        super().mouseDragEvent(ev, axis)


class DragHandle(QToolButton):
    """A small grip that reports a drag gesture; the controller starts the real QDrag."""

    dragStarted = Signal()

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("waveformDragHandle")
        # Two short lines in a smaller font: it fits the corner beside the plots (see
        # WaveformView), so the plots keep their width and line up with the spectrogram's.
        self.setText("⠿\nDrag")
        font = self.font()
        font.setPointSizeF(font.pointSizeF() * 0.85)
        self.setFont(font)
        self.setToolTip(DRAG_HANDLE_TOOLTIP)
        self.setCursor(Qt.CursorShape.OpenHandCursor)
        self.setAutoRaise(True)
        self._press_pos: QPoint | None = None

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            self._press_pos = event.position().toPoint()
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if self._press_pos is not None and event.buttons() & Qt.MouseButton.LeftButton:
            moved = (event.position().toPoint() - self._press_pos).manhattanLength()
            if moved >= QApplication.startDragDistance():
                self._press_pos = None
                self.setDown(False)
                self.dragStarted.emit()
                return
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        self._press_pos = None
        super().mouseReleaseEvent(event)
