"""One row of the session's takes list, drawn as a sample browser draws it: the waveform
thumbnail, then two lines - the take's name, and `#2 · seed 42 · 2.0 s · ★★★☆☆` with its quality
badge and loop badge at the end. Both lines are elided to the row's width (the tooltip holds
them in full), so the list never needs to scroll sideways.

Takes of one prompt share their name, so the second line leads with what tells them apart -
the codec tier of a Compare tiers take (and of its original), the variation number, the seed,
"finished" - and the length and stars come last: a narrow column cuts those, not the
difference. A narrow row draws a narrower thumbnail to leave the text its room.

The row's facts live in item roles (`fill_take_row` writes them from a Take), so the
delegate only draws and never looks a take up.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QIcon, QPainter, QPalette, QPixmap
from PySide6.QtWidgets import (
    QApplication,
    QListWidgetItem,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QWidget,
)

from app.widgets.badges import BADGE_PX, quality_badge, quality_tooltip
from app.widgets.take_text import format_seconds, rating_stars

DETAIL_ROLE = Qt.ItemDataRole.UserRole + 20  # the second line's text
FLAGS_ROLE = Qt.ItemDataRole.UserRole + 21  # the take's quality flag codes (list of str)
LOOP_ROLE = Qt.ItemDataRole.UserRole + 22  # whether a loop was made for it

THUMB_SIZE = QSize(72, 30)
NARROW_THUMB_WIDTH = 44  # the thumbnail's width in a row narrower than NARROW_ROW_PX
NARROW_ROW_PX = 300
PAD = 4
GAP = 8
LOOP_MARK = "⟲ loop"
SHORT_LOOP_MARK = "⟲"  # in a narrow row
SEPARATOR = " · "


def row_details(take) -> str:
    """The second line of a take's row (see the module docstring): `coarse tier · #2 · seed 42
    · finished · 2.0 s · ★★★☆☆`; imported audio says "imported" where a seed would be."""
    parts = []
    if take.tier_group is not None and take.codec_tier:
        parts.append(f"{take.codec_tier} tier")
    if not take.imported and take.variation > 1:
        parts.append(f"#{take.variation}")
    parts.append("imported" if take.imported else f"seed {take.seed}")
    if take.finishing is not None and take.loop is None:
        parts.append("finished")
    parts.append(format_seconds(take.seconds))
    if take.rating:
        parts.append(rating_stars(take.rating))
    return SEPARATOR.join(parts)


def fill_take_row(item: QListWidgetItem, take) -> None:
    """Write a take's (app.common.session_take.Take) facts into its row's roles."""
    item.setText(take.title())
    details = row_details(take)
    item.setData(DETAIL_ROLE, details)
    item.setData(FLAGS_ROLE, list(take.quality))
    item.setData(LOOP_ROLE, take.loop is not None)
    model = "" if take.imported else f" · {take.model}"
    full = f"{take.title()}\n{details}{model}"
    if take.prompt and take.prompt != take.title():
        full += f"\n{take.prompt}"
    made_with = take.engine_words()  # which tier and engine files made it (issue 14)
    if made_with:
        full += f"\n{made_with}"
    item.setToolTip(quality_tooltip(full, take.quality))


def _pixmap(value) -> QPixmap | None:
    if isinstance(value, QPixmap) and not value.isNull():
        return value
    if isinstance(value, QIcon) and not value.isNull():
        return value.pixmap(THUMB_SIZE)
    return None


def thumb_width(row: QRect) -> int:
    return THUMB_SIZE.width() if row.width() >= NARROW_ROW_PX else NARROW_THUMB_WIDTH


@dataclass(frozen=True)
class RowLayout:
    """Where a row's parts go, and the texts as they are drawn (elided to fit)."""

    thumb: QRect
    name: QRect
    detail: QRect
    loop: QRect | None  # the loop mark, when the take has a loop
    badge: QRect | None  # the quality badge, when the take has flags
    name_text: str
    detail_text: str
    loop_text: str


def row_layout(option: QStyleOptionViewItem, index: QModelIndex) -> RowLayout:
    """The layout `TakeRowDelegate` paints for `index` in `option.rect` (also what a test or
    an assistive tool reads as the row's visible texts)."""
    rect, metrics = option.rect, option.fontMetrics
    width = thumb_width(rect)
    thumb = QRect(rect.left() + PAD, rect.center().y() - THUMB_SIZE.height() // 2,
                  width, THUMB_SIZE.height())
    text = rect.adjusted(PAD + width + GAP, PAD, -PAD, -PAD)
    name_rect = QRect(text.left(), text.top(), text.width(), metrics.height())
    bold = QFont(option.font)
    bold.setBold(True)
    name = str(index.data(Qt.ItemDataRole.DisplayRole) or "")
    name_text = QFontMetrics(bold).elidedText(name, Qt.TextElideMode.ElideRight,
                                              name_rect.width())
    detail_rect = QRect(text.left(), name_rect.bottom() + 2, text.width(), metrics.height())
    right = detail_rect.right()
    badge = loop = None
    if index.data(FLAGS_ROLE):
        badge = QRect(right - BADGE_PX + 1, detail_rect.center().y() - BADGE_PX // 2,
                      BADGE_PX, BADGE_PX)
        right = badge.left() - PAD
    loop_text = ""
    if index.data(LOOP_ROLE):
        loop_text = LOOP_MARK if rect.width() >= NARROW_ROW_PX else SHORT_LOOP_MARK
        mark = metrics.horizontalAdvance(loop_text)
        loop = QRect(right - mark + 1, detail_rect.top(), mark, metrics.height())
        right = loop.left() - PAD
    detail_rect.setRight(right)
    detail_text = metrics.elidedText(str(index.data(DETAIL_ROLE) or ""),
                                     Qt.TextElideMode.ElideRight, max(detail_rect.width(), 0))
    return RowLayout(thumb, name_rect, detail_rect, loop, badge, name_text, detail_text,
                     loop_text)


class TakeRowDelegate(QStyledItemDelegate):
    """Draws a takes-list row (see the module text); renaming edits the name line only."""

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:  # noqa: N802
        lines = 2 * option.fontMetrics.height() + 2
        return QSize(NARROW_THUMB_WIDTH + GAP + 120,
                     max(THUMB_SIZE.height(), lines) + 2 * PAD)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex) -> None:
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        widget: QWidget | None = opt.widget
        style = widget.style() if widget is not None else QApplication.style()
        style.drawPrimitive(QStyle.PrimitiveElement.PE_PanelItemViewItem, opt, painter, widget)
        painter.save()
        try:
            self._paint_row(painter, opt, index)
        finally:
            painter.restore()

    def _paint_row(self, painter: QPainter, opt: QStyleOptionViewItem,
                   index: QModelIndex) -> None:
        layout = row_layout(opt, index)
        thumb = layout.thumb
        pixmap = _pixmap(index.data(Qt.ItemDataRole.DecorationRole))
        if pixmap is not None:
            painter.drawPixmap(thumb, pixmap)
        else:  # still being drawn: a quiet centre line holds its place
            painter.setPen(QColor(128, 128, 128, 90))
            painter.drawLine(thumb.left(), thumb.center().y(), thumb.right(), thumb.center().y())
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        group = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        colour = opt.palette.color(group)
        left = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
        bold = QFont(opt.font)
        bold.setBold(True)
        painter.setFont(bold)
        painter.setPen(colour)
        painter.drawText(layout.name, left, layout.name_text)
        painter.setFont(opt.font)
        if layout.badge is not None:
            quality_badge(len(index.data(FLAGS_ROLE))).paint(painter, layout.badge)
        if layout.loop is not None:
            painter.drawText(layout.loop, Qt.AlignmentFlag.AlignVCenter, layout.loop_text)
        dim = QColor(colour)
        dim.setAlpha(170)
        painter.setPen(dim)
        painter.drawText(layout.detail, left, layout.detail_text)

    def updateEditorGeometry(self, editor: QWidget, option: QStyleOptionViewItem,  # noqa: N802
                             index: QModelIndex) -> None:
        name = QRect(row_layout(option, index).name)
        name.setHeight(min(max(name.height(), editor.sizeHint().height()),
                           option.rect.bottom() - name.top()))
        editor.setGeometry(name)
