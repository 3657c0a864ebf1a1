"""The session's takes list: a list that drags its items out as files."""

from __future__ import annotations

from PySide6.QtWidgets import QAbstractItemView, QListWidget


class TakesListWidget(QListWidget):
    """The session's takes; dragging an item out gives a file URL (app.export_controller)."""

    def __init__(self) -> None:
        super().__init__()
        self.drag_source = None  # export controller hook: item -> QMimeData
        self.setDragEnabled(True)
        self.setDragDropMode(QAbstractItemView.DragDropMode.DragOnly)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.EditKeyPressed
                             | QAbstractItemView.EditTrigger.DoubleClicked)

    def mimeData(self, items):  # noqa: N802 - Qt override
        if self.drag_source is not None and items:
            data = self.drag_source(items[0])
            if data is not None:
                return data
        return super().mimeData(items)
