"""The library's table: one row per kept take (engines.store TakeRecord), with its waveform
thumbnail beside the prompt, rating as stars, quality and loop badges, sorting by any column,
Up/Down to audition and rows that drag out as files.

Thumbnails are asked for only when a row's prompt cell is painted (app.common.thumbnails), so a
library of thousands of takes opens without reading their audio.
"""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QSize, Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QMenu, QTableView

from app.common.take import format_seconds, rating_stars
from app.common.thumbnails import ThumbnailCache, file_peaks
from app.widgets.badges import quality_badge, quality_tooltip
from app.widgets.takes_list import plain_arrow

COLUMNS = ("Fav", "Rating", "Prompt", "Seed", "Length", "Model", "Created", "Status")
FAV, RATING, PROMPT, SEED, LENGTH, MODEL, CREATED, STATUS = range(len(COLUMNS))
HEADER_LABELS = {FAV: "♥"}  # a narrow column keeps a narrow header; the tooltip says it
HEADER_TIPS = {FAV: "Favourite", RATING: "Rating (0-5 stars)",
               STATUS: "Quality flags, loop, or a missing file"}
THUMB_SIZE = QSize(56, 22)
PROMPT_FLOOR = 160  # the prompt never gets narrower: the table scrolls sideways instead
_ROOT = QModelIndex()
_CENTRED = (FAV, RATING)
_RIGHT = (SEED, LENGTH)


def looped(record) -> bool:
    """Whether the take's stored finishing chain makes a loop."""
    chain = (getattr(record, "finishing", None) or {}).get("chain")
    return isinstance(chain, dict) and bool(chain.get("loop"))


def _sort_key(record, column: int):
    if column == FAV:
        return record.favourite
    if column == RATING:
        return record.rating
    if column == PROMPT:
        return (record.name or record.prompt).casefold()
    if column == SEED:
        return -1 if record.model == "imported" else record.seed
    if column == LENGTH:
        return record.seconds
    if column == MODEL:
        return record.model
    if column == CREATED:
        return record.created
    return _status(record)


def _status(record) -> str:
    parts = ["missing"] if record.missing else []
    if looped(record):
        parts.append("⟲")
    return " · ".join(parts)


class LibraryModel(QAbstractTableModel):
    """Rows are TakeRecord objects from engines.store.library, in the library's order or
    sorted by a column (`sort`, which clicking a header calls)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list = []
        self._library_order: list = []
        self._sorted_by: tuple[int, Qt.SortOrder] | None = None
        self._rows: dict[int, int] = {}  # record id -> row, to repaint arriving thumbnails
        self.thumbnails = ThumbnailCache(self)
        self.thumbnails.ready.connect(self._thumbnail_ready)
        self.drag_source = None  # library controller hook: list of records -> QMimeData

    def set_records(self, records: list) -> None:
        self.beginResetModel()
        self._library_order = list(records)
        self.records = self._ordered()
        self._rows = {record.id: row for row, record in enumerate(self.records)}
        self.endResetModel()

    def _ordered(self) -> list:
        if self._sorted_by is None:
            return list(self._library_order)
        column, order = self._sorted_by
        return sorted(self._library_order, key=lambda r: _sort_key(r, column),
                      reverse=order == Qt.SortOrder.DescendingOrder)

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Sort by `column`; -1: back to the library's own order (the sort menu's)."""
        self._sorted_by = (column, order) if 0 <= column < len(COLUMNS) else None
        self.layoutAboutToBeChanged.emit()
        old = self.records
        self.records = self._ordered()
        self._rows = {record.id: row for row, record in enumerate(self.records)}
        moved = self.persistentIndexList()  # the selection follows its takes
        self.changePersistentIndexList(
            moved, [self.index(self._rows[old[i.row()].id], i.column()) for i in moved])
        self.layoutChanged.emit()

    def rowCount(self, parent=_ROOT) -> int:  # noqa: N802 - Qt override
        return 0 if parent.isValid() else len(self.records)

    def columnCount(self, parent=_ROOT) -> int:  # noqa: N802 - Qt override
        return len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return HEADER_LABELS.get(section, COLUMNS[section])
        if role == Qt.ItemDataRole.ToolTipRole:
            return HEADER_TIPS.get(section)
        return None

    def flags(self, index):
        return super().flags(index) | Qt.ItemFlag.ItemIsDragEnabled

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        record = self.records[index.row()]
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self._text(record, column)
        if role == Qt.ItemDataRole.ToolTipRole:
            tags = ", ".join(record.tags)
            text = f"{record.name or record.prompt}\n{record.prompt}\ntags: {tags}\n{record.notes}"
            return quality_tooltip(text.strip(), record.quality)
        if role == Qt.ItemDataRole.DecorationRole:
            if column == PROMPT:
                return self._thumbnail(record)
            if column == STATUS and record.quality:
                return quality_badge(len(record.quality))
        if role == Qt.ItemDataRole.TextAlignmentRole:
            if column in _CENTRED:
                return Qt.AlignmentFlag.AlignCenter
            if column in _RIGHT:
                return Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
        return None

    @staticmethod
    def _text(record, column: int) -> str:
        if column == FAV:
            return "♥" if record.favourite else ""
        if column == RATING:
            return rating_stars(record.rating)
        if column == PROMPT:
            return record.name or record.prompt
        if column == SEED:
            return str(record.seed) if record.model != "imported" else "-"
        if column == LENGTH:
            return format_seconds(record.seconds)
        if column == MODEL:
            return record.model
        if column == CREATED:
            return record.created.replace("T", " ")[:16]
        return _status(record)

    def _thumbnail(self, record):
        if record.missing:
            return None
        path = record.audio_path
        return self.thumbnails.pixmap(("library", record.id, record.content_sha256),
                                      THUMB_SIZE, lambda columns: file_peaks(path, columns))

    def _thumbnail_ready(self, key) -> None:
        row = self._rows.get(key[1])
        if row is not None:
            index = self.index(row, PROMPT)
            self.dataChanged.emit(index, index, [Qt.ItemDataRole.DecorationRole])

    def record(self, row: int):
        return self.records[row] if 0 <= row < len(self.records) else None

    # ---- drag-out --------------------------------------------------------------------
    def mimeTypes(self) -> list[str]:  # noqa: N802 - Qt override
        return ["text/uri-list"]

    def supportedDragActions(self) -> Qt.DropAction:  # noqa: N802 - Qt override
        return Qt.DropAction.CopyAction

    def mimeData(self, indexes):  # noqa: N802 - Qt override
        rows = sorted({index.row() for index in indexes})
        records = [self.records[row] for row in rows if 0 <= row < len(self.records)]
        if self.drag_source is None or not records:
            return None
        return self.drag_source(records)


class LibraryTableView(QTableView):
    """The table: whole rows, drag-out, Up/Down to audition, and a header menu that shows or
    hides columns (the prompt always stays)."""

    auditionRequested = Signal(int)  # the row Up/Down moved to

    def __init__(self) -> None:
        super().__init__()
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setDragEnabled(True)
        self.setDragDropMode(QAbstractItemView.DragDropMode.DragOnly)
        self.setDefaultDropAction(Qt.DropAction.CopyAction)
        self.setIconSize(THUMB_SIZE)
        self.setWordWrap(False)
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.verticalHeader().setVisible(False)
        self.verticalHeader().setDefaultSectionSize(
            max(THUMB_SIZE.height() + 6, self.fontMetrics().height() + 8))
        header = self.horizontalHeader()
        header.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        header.customContextMenuRequested.connect(self._column_menu)
        header.sectionResized.connect(self._other_column_resized)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self.fit_prompt()

    def _other_column_resized(self, column: int, _old: int, _new: int) -> None:
        if column != PROMPT:
            self.fit_prompt()

    def fit_prompt(self) -> None:
        """The prompt stretches over the room the other columns leave, but never below
        PROMPT_FLOOR: a narrow panel scrolls sideways rather than hide the prompt."""
        header = self.horizontalHeader()
        if header.count() <= PROMPT:
            return
        others = sum(header.sectionSize(c) for c in range(header.count())
                     if c != PROMPT and not header.isSectionHidden(c))
        roomy = self.viewport().width() - others >= PROMPT_FLOOR
        mode = QHeaderView.ResizeMode.Stretch if roomy else QHeaderView.ResizeMode.Interactive
        if header.sectionResizeMode(PROMPT) != mode:
            header.setSectionResizeMode(PROMPT, mode)
        if not roomy and header.sectionSize(PROMPT) < PROMPT_FLOOR:
            header.resizeSection(PROMPT, PROMPT_FLOOR)

    def keyPressEvent(self, event) -> None:  # noqa: N802 - Qt override
        before = self.currentIndex().row()
        super().keyPressEvent(event)
        row = self.currentIndex().row()
        if plain_arrow(event) and row != before and row >= 0:
            self.auditionRequested.emit(row)

    def _column_menu(self, pos) -> None:
        header = self.horizontalHeader()
        menu = QMenu(self)
        for column, title in enumerate(COLUMNS):
            if column == PROMPT:
                continue
            action = menu.addAction(title)
            action.setCheckable(True)
            action.setChecked(not header.isSectionHidden(column))
            action.toggled.connect(
                lambda shown, c=column: header.setSectionHidden(c, not shown))
        menu.exec(header.mapToGlobal(pos))
