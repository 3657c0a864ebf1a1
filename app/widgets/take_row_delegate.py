"""One row of the session's takes list, drawn as a sample browser draws it: the waveform
thumbnail, then two lines - the take's name, and `2.0 s · seed 42 · ★★★☆☆` with its quality
badge and loop badge at the end. Both lines are elided to the row's width (the tooltip holds
them in full), so the list never needs to scroll sideways.

The row's facts live in item roles (`fill_take_row` writes them from a Take), so the
delegate only draws and never looks a take up.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFont, QIcon, QPainter, QPalette, QPixmap
from PySide6.QtWidgets import (
    QApplication,
    QListWidgetItem,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QWidget,
)

from app.widgets.badges import BADGE_PX, quality_badge, quality_tooltip

DETAIL_ROLE = Qt.ItemDataRole.UserRole + 20  # the second line's text
FLAGS_ROLE = Qt.ItemDataRole.UserRole + 21  # the take's quality flag codes (list of str)
LOOP_ROLE = Qt.ItemDataRole.UserRole + 22  # whether a loop was made for it

THUMB_SIZE = QSize(72, 30)
PAD = 4
GAP = 8
LOOP_MARK = "⟲ loop"


def fill_take_row(item: QListWidgetItem, take) -> None:
    """Write a take's (app.common.take.Take) facts into its row's roles."""
    item.setText(take.title())
    item.setData(DETAIL_ROLE, take.details())
    item.setData(FLAGS_ROLE, list(take.quality))
    item.setData(LOOP_ROLE, take.loop is not None)
    model = "" if take.imported else f" · {take.model}"
    full = f"{take.title()}\n{take.details()}{model}"
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


class TakeRowDelegate(QStyledItemDelegate):
    """Draws a takes-list row (see the module text); renaming edits the name line only."""

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:  # noqa: N802
        lines = 2 * option.fontMetrics.height() + 2
        return QSize(THUMB_SIZE.width() + GAP + 120,
                     max(THUMB_SIZE.height(), lines) + 2 * PAD)

    def _text_rect(self, rect: QRect) -> QRect:
        return rect.adjusted(PAD + THUMB_SIZE.width() + GAP, PAD, -PAD, -PAD)

    def _name_rect(self, option: QStyleOptionViewItem) -> QRect:
        text = self._text_rect(option.rect)
        return QRect(text.left(), text.top(), text.width(), option.fontMetrics.height())

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
        rect = opt.rect
        thumb = QRect(rect.left() + PAD, rect.center().y() - THUMB_SIZE.height() // 2,
                      THUMB_SIZE.width(), THUMB_SIZE.height())
        pixmap = _pixmap(index.data(Qt.ItemDataRole.DecorationRole))
        if pixmap is not None:
            painter.drawPixmap(thumb, pixmap)
        else:  # still being drawn: a quiet centre line holds its place
            painter.setPen(QColor(128, 128, 128, 90))
            painter.drawLine(thumb.left(), thumb.center().y(), thumb.right(), thumb.center().y())
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        group = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        colour = opt.palette.color(group)
        text = self._text_rect(rect)
        metrics = opt.fontMetrics
        name_rect = QRect(text.left(), text.top(), text.width(), metrics.height())
        bold = QFont(opt.font)
        bold.setBold(True)
        painter.setFont(bold)
        painter.setPen(colour)
        name = str(index.data(Qt.ItemDataRole.DisplayRole) or "")
        painter.drawText(name_rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                         painter.fontMetrics().elidedText(name, Qt.TextElideMode.ElideRight,
                                                          name_rect.width()))
        detail_rect = QRect(text.left(), name_rect.bottom() + 2, text.width(), metrics.height())
        right = detail_rect.right()
        painter.setFont(opt.font)
        flags = index.data(FLAGS_ROLE) or []
        if flags:
            badge = QRect(right - BADGE_PX + 1, detail_rect.center().y() - BADGE_PX // 2,
                          BADGE_PX, BADGE_PX)
            quality_badge(len(flags)).paint(painter, badge)
            right = badge.left() - PAD
        if index.data(LOOP_ROLE):
            width = metrics.horizontalAdvance(LOOP_MARK)
            loop_rect = QRect(right - width + 1, detail_rect.top(), width, metrics.height())
            painter.drawText(loop_rect, Qt.AlignmentFlag.AlignVCenter, LOOP_MARK)
            right = loop_rect.left() - PAD
        detail_rect.setRight(right)
        dim = QColor(colour)
        dim.setAlpha(170)
        painter.setPen(dim)
        detail = str(index.data(DETAIL_ROLE) or "")
        painter.drawText(detail_rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                         metrics.elidedText(detail, Qt.TextElideMode.ElideRight,
                                            max(detail_rect.width(), 0)))

    def updateEditorGeometry(self, editor: QWidget, option: QStyleOptionViewItem,  # noqa: N802
                             index: QModelIndex) -> None:
        name = self._name_rect(option)
        name.setHeight(min(max(name.height(), editor.sizeHint().height()),
                           option.rect.bottom() - name.top()))
        editor.setGeometry(name)
