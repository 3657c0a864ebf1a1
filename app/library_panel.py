"""The library panel: every take ever made, searchable, restorable. Layout and a table model;
the behaviour (what a click does to the session) lives in app.library_controller."""

from __future__ import annotations

import datetime as dt

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QTableView,
    QVBoxLayout,
    QWidget,
)

COLUMNS = ("Fav", "Rating", "Prompt", "Seed", "Length", "Model", "Created", "Status")
SORTS = {"Newest first": ("created", True), "Oldest first": ("created", False),
         "Best rated": ("rating", True), "Prompt A-Z": ("prompt", False),
         "Longest": ("seconds", True)}
PERIODS = {"Any time": None, "Today": 1, "Last 7 days": 7, "Last 30 days": 30}
PAGE = 500
_ROOT = QModelIndex()


class LibraryModel(QAbstractTableModel):
    """Rows are TakeRecord objects from engines.store.library."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list = []

    def set_records(self, records: list) -> None:
        self.beginResetModel()
        self.records = list(records)
        self.endResetModel()

    def rowCount(self, parent=_ROOT) -> int:  # noqa: N802 - Qt override
        return 0 if parent.isValid() else len(self.records)

    def columnCount(self, parent=_ROOT) -> int:  # noqa: N802 - Qt override
        return len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return COLUMNS[section]
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        record = self.records[index.row()]
        if role == Qt.ItemDataRole.ToolTipRole:
            tags = ", ".join(record.tags)
            return f"{record.prompt}\ntags: {tags}\n{record.notes}".strip()
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        column = COLUMNS[index.column()]
        if column == "Fav":
            return "*" if record.favourite else ""
        if column == "Rating":
            return str(record.rating) if record.rating else ""
        if column == "Prompt":
            return record.name or record.prompt
        if column == "Seed":
            return str(record.seed) if record.model != "imported" else "-"
        if column == "Length":
            return f"{record.seconds:.2f} s"
        if column == "Model":
            return record.model
        if column == "Created":
            return record.created.replace("T", " ")[:19]
        if column == "Status":
            return "missing" if record.missing else ""
        return None

    def record(self, row: int):
        return self.records[row] if 0 <= row < len(self.records) else None


def _named(widget, name: str):
    widget.setObjectName(name)
    return widget


class LibraryPanel(QWidget):
    searchChanged = Signal()
    loadRequested = Signal(int)

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("libraryPanel")
        layout = QVBoxLayout(self)
        self.search_edit = _named(QLineEdit(), "librarySearchEdit")
        self.search_edit.setPlaceholderText("Search prompts, tags and notes")
        self.search_edit.setClearButtonEnabled(True)
        layout.addWidget(self.search_edit)
        filters = QGridLayout()
        self.model_filter = _named(QComboBox(), "libraryModelFilter")
        self.model_filter.addItem("Any model", None)
        self.favourite_filter = _named(QCheckBox("Favourites"), "libraryFavouriteFilter")
        self.rating_filter = _named(QSpinBox(), "libraryRatingFilter")
        self.rating_filter.setRange(0, 5)
        self.rating_filter.setPrefix("Rating >= ")
        self.period_filter = _named(QComboBox(), "libraryPeriodFilter")
        for label, days in PERIODS.items():
            self.period_filter.addItem(label, days)
        self.sort_combo = _named(QComboBox(), "librarySortCombo")
        for label in SORTS:
            self.sort_combo.addItem(label)
        filters.addWidget(self.model_filter, 0, 0)
        filters.addWidget(self.favourite_filter, 0, 1)
        filters.addWidget(self.rating_filter, 1, 0)
        filters.addWidget(self.period_filter, 1, 1)
        filters.addWidget(self.sort_combo, 2, 0, 1, 2)
        layout.addLayout(filters)

        self.model = LibraryModel()
        self.view = _named(QTableView(), "libraryView")
        self.view.setModel(self.model)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.view.verticalHeader().setVisible(False)
        self.view.horizontalHeader().setSectionResizeMode(
            2, QHeaderView.ResizeMode.Stretch)
        layout.addWidget(self.view, stretch=1)
        self.count_label = _named(QLabel(""), "libraryCountLabel")
        layout.addWidget(self.count_label)

        edit = QGridLayout()
        self.favourite_check = _named(QCheckBox("Favourite"), "libraryFavouriteCheck")
        self.rating_spin = _named(QSpinBox(), "libraryRatingSpin")
        self.rating_spin.setRange(0, 5)
        self.rating_spin.setPrefix("Rating ")
        self.tags_edit = _named(QLineEdit(), "libraryTagsEdit")
        self.tags_edit.setPlaceholderText("tags, comma separated")
        self.notes_edit = _named(QPlainTextEdit(), "libraryNotesEdit")
        self.notes_edit.setPlaceholderText("notes")
        self.notes_edit.setMaximumHeight(60)
        self.save_meta_button = _named(QPushButton("Save tags/notes"), "librarySaveMetaButton")
        edit.addWidget(self.favourite_check, 0, 0)
        edit.addWidget(self.rating_spin, 0, 1)
        edit.addWidget(self.tags_edit, 1, 0, 1, 2)
        edit.addWidget(self.notes_edit, 2, 0, 1, 2)
        edit.addWidget(self.save_meta_button, 3, 0, 1, 2)
        layout.addLayout(edit)

        buttons = QGridLayout()
        self.restore_button = _named(QPushButton("Restore settings"), "restoreSettingsButton")
        self.regenerate_button = _named(QPushButton("Regenerate"), "regenerateButton")
        self.delete_button = _named(QPushButton("Delete"), "libraryDeleteButton")
        self.undo_button = _named(QPushButton("Undo delete"), "libraryUndoButton")
        self.undo_button.setEnabled(False)
        self.export_button = _named(QPushButton("Export to folder..."), "libraryExportButton")
        self.zip_button = _named(QPushButton("Export zip..."), "libraryZipButton")
        buttons.addWidget(self.restore_button, 0, 0)
        buttons.addWidget(self.regenerate_button, 0, 1)
        buttons.addWidget(self.delete_button, 1, 0)
        buttons.addWidget(self.undo_button, 1, 1)
        buttons.addWidget(self.export_button, 2, 0)
        buttons.addWidget(self.zip_button, 2, 1)
        layout.addLayout(buttons)
        row = QHBoxLayout()
        layout.addLayout(row)

        self.search_edit.textChanged.connect(self.searchChanged)
        for combo in (self.model_filter, self.period_filter, self.sort_combo):
            combo.currentIndexChanged.connect(self.searchChanged)
        self.favourite_filter.toggled.connect(self.searchChanged)
        self.rating_filter.valueChanged.connect(self.searchChanged)
        self.view.doubleClicked.connect(
            lambda index: self.loadRequested.emit(self.model.record(index.row()).id))

    def query(self) -> dict:
        """The search arguments the widgets describe (for ClipLibrary.search/count)."""
        sort, descending = SORTS[self.sort_combo.currentText()]
        days = self.period_filter.currentData()
        since = None
        if days is not None:
            start = dt.datetime.now(dt.UTC) - dt.timedelta(days=days)
            since = start.isoformat(timespec="seconds")
        return {"text": self.search_edit.text().strip(),
                "model": self.model_filter.currentData(),
                "favourite": True if self.favourite_filter.isChecked() else None,
                "min_rating": self.rating_filter.value(), "since": since, "sort": sort,
                "descending": descending}

    def selected_records(self) -> list:
        rows = sorted({index.row() for index in self.view.selectionModel().selectedRows()})
        return [self.model.record(r) for r in rows if self.model.record(r) is not None]

    def current_record(self):
        records = self.selected_records()
        return records[0] if records else None
