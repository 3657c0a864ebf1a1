"""The session's takes list: sample-browser rows (app.widgets.take_row_delegate) that never
scroll sideways, Up/Down to audition, and items that drag out as files."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QListWidget, QStyleOptionViewItem

from app.widgets.take_row_delegate import THUMB_SIZE, TakeRowDelegate, row_layout

AUDITION_KEYS = (Qt.Key.Key_Up, Qt.Key.Key_Down)


def plain_arrow(event) -> bool:
    """Up or Down with no modifier (the keypad flag some platforms add to arrows aside):
    Shift or Ctrl with an arrow keeps its usual selection meaning."""
    modifiers = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
    return event.key() in AUDITION_KEYS and modifiers == Qt.KeyboardModifier.NoModifier


class TakesListWidget(QListWidget):
    """The session's takes; dragging an item out gives a file URL (app.export.controller)."""

    auditionRequested = Signal()  # Up/Down moved to another take: play it now

    def __init__(self) -> None:
        super().__init__()
        self.drag_source = None  # export controller hook: item -> QMimeData
        self.setDragEnabled(True)
        self.setDragDropMode(QAbstractItemView.DragDropMode.DragOnly)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.EditKeyPressed
                             | QAbstractItemView.EditTrigger.DoubleClicked)
        self.setItemDelegate(TakeRowDelegate(self))
        self.setIconSize(THUMB_SIZE)
        self.setUniformItemSizes(True)
        self.setWordWrap(False)
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

    def visible_texts(self, row: int) -> tuple[str, str]:
        """The name and details of `row` as its delegate draws them now (elided to fit)."""
        index = self.model().index(row, 0)
        option = QStyleOptionViewItem()
        self.initViewItemOption(option)
        option.rect = self.visualRect(index)
        layout = row_layout(option, index)
        return layout.name_text, layout.detail_text

    def keyPressEvent(self, event) -> None:  # noqa: N802 - Qt override
        before = self.currentRow()
        super().keyPressEvent(event)
        if plain_arrow(event) and self.currentRow() != before and self.currentRow() >= 0:
            self.auditionRequested.emit()

    def mimeData(self, items):  # noqa: N802 - Qt override
        if self.drag_source is not None and items:
            data = self.drag_source(items[0])
            if data is not None:
                return data
        return super().mimeData(items)
