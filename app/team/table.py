"""The Team source's table: one row per team take (engines.team.entries TeamEntry) in the order
the server gave them (newest first, or nearest first for "more like this"), the team's average
stars with how many designers rated, the designer who published it, and rows that drag out as
files (the controller fetches them: `drag_source`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from PySide6.QtCore import QAbstractTableModel, QMimeData, QModelIndex, Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView

from app.widgets.take_text import format_seconds, rating_stars
from engines.team.entries import TeamEntry

TEAM_COLUMNS = ("Rating", "Name", "Designer", "Model", "Length", "Tags")
RATING, NAME, DESIGNER, MODEL, LENGTH, TAGS = range(len(TEAM_COLUMNS))
_ROOT = QModelIndex()


def entry_tooltip(entry: TeamEntry) -> str:
    lines = [entry.prompt or entry.name, f"team take #{entry.id}, published by {entry.designer} "
             f"on {entry.published[:10]}",
             f"rated {entry.rating_average:.1f} by {entry.rating_count} designer(s); "
             f"yours: {entry.my_rating}"]
    if entry.tags:
        lines.append("tags: " + ", ".join(entry.tags))
    if entry.distance is not None:
        lines.append(f"sound distance {entry.distance:.3f} (0 is the same sound)")
    return "\n".join(lines)


class TeamTableModel(QAbstractTableModel):
    def __init__(self) -> None:
        super().__init__()
        self.entries: list[TeamEntry] = []
        # team take ids -> QMimeData of their files, or None (the controller says why)
        self.drag_source: Callable[[list[TeamEntry]], QMimeData | None] | None = None

    def set_entries(self, entries: Iterable[TeamEntry]) -> None:
        self.beginResetModel()
        self.entries = list(entries)
        self.endResetModel()

    def add_newest(self, entries: Iterable[TeamEntry]) -> list[TeamEntry]:
        """Takes published just now, on top (newest first); those shown already are skipped.
        The entries added."""
        known = {entry.id for entry in self.entries}
        fresh = sorted((e for e in entries if e.id not in known), key=lambda e: -e.id)
        if fresh:
            self.beginInsertRows(_ROOT, 0, len(fresh) - 1)
            self.entries[:0] = fresh
            self.endInsertRows()
        return fresh

    def entry(self, row: int) -> TeamEntry | None:
        return self.entries[row] if 0 <= row < len(self.entries) else None

    def rowCount(self, parent=_ROOT) -> int:  # noqa: N802 - Qt override
        return 0 if parent.isValid() else len(self.entries)

    def columnCount(self, parent=_ROOT) -> int:  # noqa: N802 - Qt override
        return 0 if parent.isValid() else len(TEAM_COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return TEAM_COLUMNS[section]
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        entry = self.entry(index.row())
        if entry is None:
            return None
        if role == Qt.ItemDataRole.ToolTipRole:
            return entry_tooltip(entry)
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        column = index.column()
        if column == RATING:
            stars = rating_stars(round(entry.rating_average))
            return f"{stars} ({entry.rating_count})" if entry.rating_count else stars
        if column == NAME:
            return entry.title()
        if column == DESIGNER:
            return entry.designer
        if column == MODEL:
            return entry.model
        if column == LENGTH:
            return format_seconds(entry.seconds)
        return ", ".join(entry.tags)

    def flags(self, index) -> Qt.ItemFlag:
        base = super().flags(index)
        return base | Qt.ItemFlag.ItemIsDragEnabled if index.isValid() else base

    def supportedDragActions(self) -> Qt.DropAction:  # noqa: N802 - Qt override
        return Qt.DropAction.CopyAction

    def mimeTypes(self) -> list[str]:  # noqa: N802 - Qt override
        return ["text/uri-list"]

    def mimeData(self, indexes):  # noqa: N802 - Qt override
        rows = sorted({index.row() for index in indexes})
        entries = [self.entries[row] for row in rows if 0 <= row < len(self.entries)]
        if self.drag_source is None or not entries:
            return None
        return self.drag_source(entries)


class TeamTableView(QTableView):
    """Whole rows, several at once, drag-out; the name gets the room."""

    def __init__(self) -> None:
        super().__init__()
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setDragEnabled(True)
        self.setDragDropMode(QAbstractItemView.DragDropMode.DragOnly)
        self.setDefaultDropAction(Qt.DropAction.CopyAction)
        self.setWordWrap(False)
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.verticalHeader().setVisible(False)

    def fit_columns(self) -> None:
        """Called once the model is set: the name stretches, the rest fit their contents."""
        header = self.horizontalHeader()
        for column in range(len(TEAM_COLUMNS)):
            mode = QHeaderView.ResizeMode.Stretch if column == NAME else \
                QHeaderView.ResizeMode.ResizeToContents
            header.setSectionResizeMode(column, mode)
