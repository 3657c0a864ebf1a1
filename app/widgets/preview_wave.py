"""A sample browser's preview: the selected sound's waveform (a peaks thumbnail, as the library
table draws, at a larger size), the playhead over it, and the mouse to play: a click plays from
where it lands, a drag scrubs (the playhead follows the pointer, and so does what plays).

Layout and signals only: the controller (app.library.inspector) plays and moves the playhead.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QPainter, QPen, QPixmap
from PySide6.QtWidgets import QSizePolicy, QWidget

PREVIEW_SIZE = QSize(600, 72)  # the peaks drawn (then scaled to the widget)
MIN_HEIGHT = 56
PLAYHEAD = QColor("#ffcc33")  # the Take page waveform's playhead colour
EMPTY_TEXT = "No take selected"


class PreviewWave(QWidget):
    playFrom = Signal(float)  # seconds: a click landed there
    scrubTo = Signal(float)  # seconds: the pointer was dragged there (button held)

    def __init__(self) -> None:
        super().__init__()
        self.setMinimumHeight(MIN_HEIGHT)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip("Click to play from there; drag to scrub")
        self._pixmap: QPixmap | None = None
        self._duration = 0.0
        self._playhead: float | None = None
        self._placeholder = EMPTY_TEXT

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(240, PREVIEW_SIZE.height())

    # ---- what it shows -------------------------------------------------------------------
    def show_sound(self, duration: float, pixmap: QPixmap | None,
                   placeholder: str = "") -> None:
        """A sound of `duration` seconds; `pixmap` its peaks (None while being drawn, or
        when it cannot be: then `placeholder` says why)."""
        self._duration = max(float(duration), 0.0)
        self._pixmap = pixmap
        self._placeholder = placeholder
        self._playhead = None
        self.update()

    def set_pixmap(self, pixmap: QPixmap | None) -> None:
        self._pixmap = pixmap
        self.update()

    def clear(self) -> None:
        self.show_sound(0.0, None, EMPTY_TEXT)

    def has_peaks(self) -> bool:
        """Whether the waveform is drawn (not "drawing..." or a reason it cannot be)."""
        return self._pixmap is not None

    @property
    def duration(self) -> float:
        return self._duration

    def set_playhead(self, seconds: float | None) -> None:
        """Where playing is (None: this sound is not the one playing)."""
        if seconds != self._playhead:
            self._playhead = seconds
            self.update()

    def playhead(self) -> float | None:
        return self._playhead

    # ---- geometry ------------------------------------------------------------------------
    def seconds_at(self, x: float) -> float:
        width = max(self.width() - 1, 1)
        return min(max(x / width, 0.0), 1.0) * self._duration

    def x_of(self, seconds: float) -> float:
        if self._duration <= 0:
            return 0.0
        return min(max(seconds / self._duration, 0.0), 1.0) * (self.width() - 1)

    # ---- mouse ---------------------------------------------------------------------------
    def mousePressEvent(self, event) -> None:  # noqa: N802 - Qt override
        if event.button() == Qt.MouseButton.LeftButton and self._duration > 0:
            self.playFrom.emit(self.seconds_at(event.position().x()))
            event.accept()
            return
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event) -> None:  # noqa: N802 - Qt override
        if event.buttons() & Qt.MouseButton.LeftButton and self._duration > 0:
            self.scrubTo.emit(self.seconds_at(event.position().x()))
            event.accept()
            return
        super().mouseMoveEvent(event)

    # ---- painting ------------------------------------------------------------------------
    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt override
        painter = QPainter(self)
        rect = QRectF(self.rect())
        painter.fillRect(rect, self.palette().color(self.palette().ColorRole.Base))
        if self._pixmap is not None:
            painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
            painter.drawPixmap(rect, self._pixmap, QRectF(self._pixmap.rect()))
        else:
            painter.setPen(self.palette().color(self.palette().ColorRole.PlaceholderText))
            painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, self._placeholder)
        if self._playhead is not None and self._duration > 0:
            painter.setPen(QPen(PLAYHEAD, 1))
            x = self.x_of(self._playhead)
            painter.drawLine(int(x), 0, int(x), self.height())
        painter.end()
