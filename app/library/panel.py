"""The library panel: every take ever made, searchable, restorable. Layout and a table model;
the behaviour (what a click does to the session) lives in app.library.controller."""

from __future__ import annotations

import datetime as dt

from PySide6.QtCore import QByteArray, QSettings, Qt, QTimer, Signal
from PySide6.QtWidgets import (
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
    QVBoxLayout,
    QWidget,
)

from app.common.window_state import settings_path
from app.library.table import (
    COLUMNS,
    CREATED,
    FAV,
    LENGTH,
    MODEL,
    PROMPT,
    RATING,
    SEED,
    STATUS,
    LibraryModel,
    LibraryTableView,
)

__all__ = ["COLUMNS", "LibraryModel", "LibraryPanel"]

SORTS = {"Newest first": ("created", True), "Oldest first": ("created", False),
         "Best rated": ("rating", True), "Prompt A-Z": ("prompt", False),
         "Longest": ("seconds", True)}
PERIODS = {"Any time": None, "Today": 1, "Last 7 days": 7, "Last 30 days": 30}
PAGE = 500
ANY_TIER = "Any tier"
HEADER_KEY = "library/header"  # the table's column widths, order, hidden columns and sort
HIDDEN_AT_FIRST = (MODEL, CREATED)  # the side panel is narrow; the header menu shows them
SAVE_DELAY_MS = 500


def studio_settings() -> QSettings:
    """The window's settings file (app.common.window_state): in the data folder, so a test run or a
    portable install keeps its own."""
    return QSettings(str(settings_path()), QSettings.Format.IniFormat)


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
        # the codec tier a take was decoded with (issue 14); filled by the controller from
        # the tiers the library holds
        self.tier_filter = _named(QComboBox(), "libraryTierCombo")
        self.tier_filter.addItem(ANY_TIER, None)
        self.tier_filter.setToolTip("Show only takes decoded with this codec tier")
        filters.addWidget(self.tier_filter, 2, 0)
        filters.addWidget(self.sort_combo, 2, 1)
        layout.addLayout(filters)

        self.model = LibraryModel()
        self.view = _named(LibraryTableView(), "libraryView")
        self.view.setModel(self.model)
        self._save_timer = QTimer(self, singleShot=True, interval=SAVE_DELAY_MS)
        self._save_timer.timeout.connect(self.save_header)
        self._set_up_columns()
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
        for combo in (self.model_filter, self.period_filter, self.sort_combo, self.tier_filter):
            combo.currentIndexChanged.connect(self.searchChanged)
        self.sort_combo.currentIndexChanged.connect(self._sort_menu_chosen)
        self.favourite_filter.toggled.connect(self.searchChanged)
        self.rating_filter.valueChanged.connect(self.searchChanged)
        self.view.doubleClicked.connect(
            lambda index: self.loadRequested.emit(self.model.record(index.row()).id))

    # ------------------------------------------------------------------ columns
    def _set_up_columns(self) -> None:
        """Room where people read: the prompt stretches, the stars and the heart stay
        narrow, seed and length fit their contents; widths, order, hidden columns and the
        clicked sort come back from the last run."""
        header = self.view.horizontalHeader()
        header.setStretchLastSection(False)
        header.setSectionsMovable(True)  # people put their columns where they read them
        header.setMinimumSectionSize(24)
        metrics = self.view.fontMetrics()
        widths = {FAV: metrics.horizontalAdvance("♥") + 16,
                  RATING: metrics.horizontalAdvance("★★★★★") + 12,
                  MODEL: metrics.horizontalAdvance("sm-music-xl") + 16,
                  CREATED: metrics.horizontalAdvance("2099-12-31 23:59") + 16}
        for column, width in widths.items():
            header.resizeSection(column, width)
        for column in HIDDEN_AT_FIRST:
            header.setSectionHidden(column, True)
        state = studio_settings().value(HEADER_KEY)
        restored = (isinstance(state, QByteArray | bytes)
                    and header.restoreState(QByteArray(state)))
        if not restored:  # the library's own order until a column is clicked
            header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        header.setSectionHidden(PROMPT, False)
        modes = {FAV: QHeaderView.ResizeMode.Fixed, RATING: QHeaderView.ResizeMode.Fixed,
                 PROMPT: QHeaderView.ResizeMode.Stretch,
                 SEED: QHeaderView.ResizeMode.ResizeToContents,
                 LENGTH: QHeaderView.ResizeMode.ResizeToContents,
                 STATUS: QHeaderView.ResizeMode.ResizeToContents}
        for column in range(len(COLUMNS)):
            header.setSectionResizeMode(column, modes.get(column,
                                                          QHeaderView.ResizeMode.Interactive))
        header.setSortIndicatorClearable(True)
        self.view.setSortingEnabled(True)  # sorts by the restored indicator, if any
        for changed in (header.sectionResized, header.sectionMoved,
                        header.sortIndicatorChanged):
            changed.connect(lambda *_args: self._save_timer.start())

    def save_header(self) -> None:
        """Keep the table's column state for the next run."""
        self._save_timer.stop()
        studio_settings().setValue(HEADER_KEY, self.view.horizontalHeader().saveState())

    def hideEvent(self, event) -> None:  # noqa: N802 - Qt override: closing flushes
        if self._save_timer.isActive():
            self.save_header()
        super().hideEvent(event)

    def _sort_menu_chosen(self) -> None:
        """The sort menu orders the whole library: a clicked column sort gives way to it."""
        self.view.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)

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
                "min_rating": self.rating_filter.value(), "since": since,
                "tier": self.tier_filter.currentData(), "sort": sort,
                "descending": descending}

    def set_tiers(self, tiers: list[str]) -> None:
        """The tiers to filter by: "Any tier" and those the library holds; the chosen one
        stays chosen (it is listed even while no take has it, so the choice is visible)."""
        combo = self.tier_filter
        current = combo.currentData()
        names = list(tiers) + ([current] if current and current not in tiers else [])
        if [combo.itemData(i) for i in range(1, combo.count())] == names:
            return
        blocked = combo.blockSignals(True)
        try:
            combo.clear()
            combo.addItem(ANY_TIER, None)
            for name in names:
                combo.addItem(f"{name} tier", name)
            combo.setCurrentIndex(max(combo.findData(current), 0))
        finally:
            combo.blockSignals(blocked)

    def selected_records(self) -> list:
        rows = sorted({index.row() for index in self.view.selectionModel().selectedRows()})
        return [self.model.record(r) for r in rows if self.model.record(r) is not None]

    def current_record(self):
        records = self.selected_records()
        return records[0] if records else None
