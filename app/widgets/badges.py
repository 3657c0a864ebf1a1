"""Quality badges for the takes list: a small drawn marker with the number of flags, and the
flags in words (engines.finish.quality.describe_flag) for its tooltip.

Drawn rather than taken from the style: every platform style (and the offscreen one the tests
use) then shows the same badge.
"""

from __future__ import annotations

import html
from functools import lru_cache

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QIcon, QPainter, QPixmap

from engines.finish.quality import describe_flag

BADGE_PX = 16
TOOLTIP_CHARS = 72  # a longer tooltip line wraps (`wrapped`)
TOOLTIP_PX = 480  # the width it wraps to: a paragraph, never the screen
_FILL = QColor(230, 140, 30)


@lru_cache(maxsize=8)
def quality_badge(count: int) -> QIcon:
    """An amber disc with `count` in it (an empty icon for 0)."""
    if count <= 0:
        return QIcon()
    pixmap = QPixmap(BADGE_PX, BADGE_PX)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(_FILL)
    painter.drawEllipse(QRectF(0.5, 0.5, BADGE_PX - 1, BADGE_PX - 1))
    font = QFont()
    font.setPixelSize(11)
    font.setBold(True)
    painter.setFont(font)
    painter.setPen(QColor("black"))
    painter.drawText(QRectF(0, 0, BADGE_PX, BADGE_PX), Qt.AlignmentFlag.AlignCenter,
                     str(count) if count < 10 else "!")
    painter.end()
    return QIcon(pixmap)


def wrapped(text: str, chars: int = TOOLTIP_CHARS) -> str:
    """`text` as a tooltip that wraps: Qt shows plain text as one line however long it is (a
    1,600 px line at 1920x1080), so a text with a line longer than `chars` characters becomes
    rich text in a column TOOLTIP_PX wide (Qt's own rich-text width is a narrow column)."""
    lines = text.splitlines()
    if all(len(line) <= chars for line in lines):
        return text
    body = "<br>".join(html.escape(line, quote=False) for line in lines)
    return f"<table width={TOOLTIP_PX}><tr><td>{body}</td></tr></table>"


def quality_tooltip(prompt: str, flags: list[str]) -> str:
    """The prompt, then one line per flag in plain words; every line wrapped (`wrapped`)."""
    if not flags:
        return wrapped(prompt)
    lines = [describe_flag(code) for code in flags]
    return wrapped("\n".join([prompt, "Quality flags:", *(f"- {line}" for line in lines)]))
