"""The library's table model: one row per kept take (engines.store TakeRecord), with its waveform
thumbnail beside the name, rating as stars, quality and loop badges, tags, codec tier, sorting by
any column, rows that drag out as files, and the name editable in place (a rename).

After Find similar the rows are the takes found, closest first, and the Match column says how
alike each sounds ("92%": 1 - the cosine distance of the sound embeddings).

Sound files imported in place (engines.sound_import) are rows too: the Source column says
"Generated" or the folder a sound lives in (its full path in the tooltip). Their thumbnails come
from the peaks the background pass kept (`stored_peaks`), so a sound on a slow drive is not
read again to be drawn; until then from the file itself, off the GUI thread.

A big library is listed a page at a time: `set_records(..., fetch=, total=)` hands the model the
first page and how to get the next, which Qt asks for as the table is scrolled to its end
(canFetchMore/fetchMore). So opening or searching 50,000 rows builds only the rows on the page.

Thumbnails are asked for only when a row's name cell is painted (app.common.thumbnails), so a
library of thousands of takes opens without reading their audio.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QSize, Qt, Signal

from app.common.expected_errors import LIBRARY_ERRORS
from app.common.thumbnails import ThumbnailCache, array_peaks, file_peaks
from app.widgets.badges import quality_badge, quality_tooltip
from app.widgets.take_text import format_seconds, rating_stars

# Appended columns keep the older ones' numbers (a saved header and other code use them).
COLUMNS = ("Fav", "Rating", "Prompt", "Seed", "Length", "Model", "Created", "Status", "Tags",
           "Tier", "Match", "Source")
(FAV, RATING, PROMPT, SEED, LENGTH, MODEL, CREATED, STATUS, TAGS, TIER, MATCH,
 SOURCE) = range(len(COLUMNS))
HEADER_LABELS = {FAV: "♥", PROMPT: "Name / prompt"}  # a narrow column keeps a narrow header
HEADER_TIPS = {FAV: "Favourite", RATING: "Rating (0-5 stars)",
               PROMPT: "The take's name (F2 renames it), else its prompt",
               STATUS: "Quality flags, loop, or a missing file",
               TIER: "The codec tier that decoded the take",
               MATCH: "How alike it sounds to what Find similar searched by",
               SOURCE: "Generated here, or the folder an imported sound file lives in"}
THUMB_SIZE = QSize(56, 22)
_ROOT = QModelIndex()
_CENTRED = (FAV, RATING)
_RIGHT = (SEED, LENGTH, MATCH)
_LEFT = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
_ALIGNMENT = {**dict.fromkeys(_CENTRED, Qt.AlignmentFlag.AlignCenter),
              **dict.fromkeys(_RIGHT, Qt.AlignmentFlag.AlignRight
                              | Qt.AlignmentFlag.AlignVCenter)}
_ANSWERED = frozenset((Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole,
                       Qt.ItemDataRole.ToolTipRole, Qt.ItemDataRole.DecorationRole,
                       Qt.ItemDataRole.TextAlignmentRole))
PEAKS_KEPT = 512  # imported sounds' stored peaks held for their thumbnails
GENERATED = "Generated"


def source_text(record) -> str:
    """The Source cell: "Generated", "Imported audio" (copied in by Open init audio) or the
    name of the folder an imported sound file lives in."""
    root = getattr(record, "source_root", None)
    if root:
        return Path(root).name or str(root)
    return getattr(record, "source", None) or GENERATED


def source_tip(record) -> str:
    root = getattr(record, "source_root", None)
    if root:
        return f"Imported from {root}; the file stays where it is and is never changed."
    return source_text(record)


def fit_peaks(peaks, columns: int):
    """Kept min/max peaks (2, n) as `columns` columns. (engines.sound_import.peaks has the
    same; importing it would load the whole importer with the Library page.)"""
    lows, highs = np.asarray(peaks, dtype=np.float32)
    return array_peaks(np.stack([lows, highs], axis=1), columns)


def looped(record) -> bool:
    """Whether the take's stored finishing chain makes a loop."""
    chain = (getattr(record, "finishing", None) or {}).get("chain")
    return isinstance(chain, dict) and bool(chain.get("loop"))


def _tier(record) -> str:
    return getattr(record, "decoder_tier", "") or ""


def _status(record, missing: bool | None = None) -> str:
    parts = ["missing"] if (record.missing if missing is None else missing) else []
    if looped(record):
        parts.append("⟲")
    return " · ".join(parts)


class LibraryModel(QAbstractTableModel):
    """Rows are TakeRecord objects from engines.store.library, in the library's order (or
    closest first after Find similar) or sorted by a column (`sort`, which a header click
    calls)."""

    renameRequested = Signal(int, str)  # take id, the name typed in place

    def __init__(self) -> None:
        super().__init__()
        self.records: list = []
        self.similarity: dict[int, float] = {}  # take id -> 0..1, after Find similar
        self._library_order: list = []
        self._sorted_by: tuple[int, Qt.SortOrder] | None = None
        self._rows: dict[int, int] = {}  # record id -> row, to repaint arriving thumbnails
        self.thumbnails = ThumbnailCache(self)
        self.thumbnails.ready.connect(self._thumbnail_ready)
        self.drag_source = None  # library controller hook: list of records -> QMimeData
        # library controller hook: an imported sound's kept peaks (float32 (2, n)) or None
        self.stored_peaks: Callable[[int], object] | None = None
        self._peaks: OrderedDict[int, object] = OrderedDict()
        self._missing: dict[int, bool] = {}  # take id -> its file is gone (as last looked)
        self._fetch: Callable[[int], list] | None = None  # the next page, from a row offset
        self.total: int | None = 0  # rows the search matched (listed or not); None: not known

    def set_records(self, records: list, similarity: dict[int, float] | None = None, *,
                    fetch: Callable[[int], list] | None = None,
                    total: int | None = None) -> None:
        """Show `records`; `similarity` (take id -> 0..1) when they are Find similar's. With
        `fetch(offset)` (the next page of the same search) and `total` (how many it matched),
        more rows are listed as the table is scrolled to its end (`total` None: until a page
        comes back empty)."""
        self.beginResetModel()
        self._fetch = fetch
        self.total = None if total is None else max(total, len(records))
        self.similarity = dict(similarity or {})
        self._library_order = list(records)
        self.records = self._ordered()
        self._rows = {record.id: row for row, record in enumerate(self.records)}
        self.endResetModel()

    def _sort_key(self, record, column: int):
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
        if column == TAGS:
            return ", ".join(record.tags).casefold()
        if column == TIER:
            return _tier(record)
        if column == MATCH:
            return self.similarity.get(record.id, -1.0)
        if column == SOURCE:
            return (getattr(record, "source_root", None) or source_text(record)).casefold()
        return _status(record, self._is_missing(record))

    def _ordered(self) -> list:
        if self._sorted_by is None:
            return list(self._library_order)
        column, order = self._sorted_by
        return sorted(self._library_order, key=lambda r: self._sort_key(r, column),
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

    # ---- the next page, as the table is scrolled to its end -----------------------------
    def canFetchMore(self, parent=_ROOT) -> bool:  # noqa: N802 - Qt override
        # A clicked column sort orders the rows listed (as before paging): the next page would
        # land among them, so it waits until the library's own order is back.
        return (not parent.isValid() and self._fetch is not None and self._sorted_by is None
                and (self.total is None or len(self.records) < self.total))

    def fetchMore(self, parent=_ROOT) -> None:  # noqa: N802 - Qt override
        """List the next page (the fetch hook words its own failures and gives [])."""
        if not self.canFetchMore(parent):
            return
        more = [record for record in self._fetch(len(self._library_order))
                if record.id not in self._rows]  # a row added meanwhile shifts pages by one
        if not more:
            self._fetch = None
            return
        first = len(self.records)
        self.beginInsertRows(_ROOT, first, first + len(more) - 1)
        self._library_order.extend(more)
        self.records.extend(more)
        for row, record in enumerate(more, start=first):
            self._rows[record.id] = row
        self.endInsertRows()

    def fetch_all(self) -> None:
        """List every row the search matched (select all, a column sort of the whole list)."""
        while self.canFetchMore():
            before = len(self.records)
            self.fetchMore()
            if len(self.records) == before:
                break

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
        flags = super().flags(index) | Qt.ItemFlag.ItemIsDragEnabled
        if index.column() == PROMPT:
            flags |= Qt.ItemFlag.ItemIsEditable
        return flags

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        # Asked for every role of every cell painted or measured: the roles without an answer
        # go first and cheaply (it is most of the time a keystroke in the search box costs).
        if role not in _ANSWERED or not index.isValid():
            return None
        record = self.records[index.row()]
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self._text(record, column)
        if role == Qt.ItemDataRole.EditRole:
            return record.name or record.prompt
        if role == Qt.ItemDataRole.ToolTipRole:
            if column == CREATED:  # the cell shows the day; when exactly, here
                return record.created.replace("T", " ")[:19] + " UTC"
            if column == SOURCE:
                return source_tip(record)
            tags = ", ".join(record.tags)
            text = f"{record.name or record.prompt}\n{record.prompt}\ntags: {tags}\n{record.notes}"
            return quality_tooltip(text.strip(), record.quality)
        if role == Qt.ItemDataRole.DecorationRole:
            if column == PROMPT:
                return self._thumbnail(record)
            if column == STATUS and record.quality:
                return quality_badge(len(record.quality))
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return _ALIGNMENT.get(column, _LEFT)
        return None

    def setData(self, index, value, role=Qt.ItemDataRole.EditRole) -> bool:  # noqa: N802
        """A name typed in place: the controller keeps it (and refreshes the rows)."""
        if role != Qt.ItemDataRole.EditRole or not index.isValid() or index.column() != PROMPT:
            return False
        record = self.records[index.row()]
        name = " ".join(str(value).split())
        if name != (record.name or record.prompt):
            self.renameRequested.emit(record.id, name)
        return True

    def _text(self, record, column: int) -> str:
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
            return record.created[:10]
        if column == TAGS:
            return ", ".join(record.tags)
        if column == TIER:
            return _tier(record)
        if column == MATCH:
            found = self.similarity.get(record.id)
            return "" if found is None else f"{round(100 * found)}%"
        if column == SOURCE:
            return source_text(record)
        return _status(record, self._is_missing(record))

    def _is_missing(self, record) -> bool:
        """record.missing (a look at the disk), once per row until `forget_file_state`."""
        missing = self._missing.get(record.id)
        if missing is None:
            missing = self._missing[record.id] = record.missing
        return missing

    def forget_file_state(self) -> None:
        """The library changed: look at the files (missing, kept peaks) again when painted."""
        self._missing.clear()
        self._peaks.clear()

    def _thumbnail(self, record):
        if self._is_missing(record):
            return None
        path = record.audio_path
        # an imported file has no hash of its samples: its time of change tells a new version
        key = ("library", record.id, record.content_sha256 or record.created)
        kept = self._kept_peaks(record)
        if kept is not None:
            return self.thumbnails.pixmap(key, THUMB_SIZE, lambda columns: fit_peaks(kept, columns))
        return self.thumbnails.pixmap(key, THUMB_SIZE, lambda columns: file_peaks(path, columns))

    def _kept_peaks(self, record):
        """An imported sound's peaks as the background pass kept them (asked once per listing:
        one small read of the library), None for a generated take or until they are made."""
        if self.stored_peaks is None or getattr(record, "source_root", None) is None:
            return None
        if record.id not in self._peaks:
            try:
                self._peaks[record.id] = self.stored_peaks(record.id)
            except LIBRARY_ERRORS:  # painting goes on: the file is read instead
                self._peaks[record.id] = None
            while len(self._peaks) > PEAKS_KEPT:
                self._peaks.popitem(last=False)
        return self._peaks[record.id]

    def _thumbnail_ready(self, key) -> None:
        row = self._rows.get(key[1])
        if row is not None:
            index = self.index(row, PROMPT)
            self.dataChanged.emit(index, index, [Qt.ItemDataRole.DecorationRole])

    def record(self, row: int):
        return self.records[row] if 0 <= row < len(self.records) else None

    def row_of(self, take_id: int) -> int:
        """The row showing take `take_id`; -1 when it is not listed."""
        return self._rows.get(take_id, -1)

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
