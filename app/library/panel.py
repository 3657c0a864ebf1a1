"""The Library page: every take ever made, searchable by words or by sound, restorable. Laid out
as a sound browser in the main area: search and filters over the table, which gets the width,
and the selected take's details and actions beside it. Layout and the query the widgets
describe; the behaviour lives in app.library.controller.

Object names: libraryPanel, libraryPreview and libraryFacts (the selected row's waveform to
click and scrub, and its facts: app.library.inspector), librarySearchEdit (drop a sound on it
to search by sound),
libraryModelFilter, libraryAdapterFilter (takes made with one adapter), libraryFavouriteFilter,
libraryRatingFilter, libraryPeriodFilter,
libraryTierCombo, librarySortCombo, libraryView, libraryCountLabel, libraryShowAllButton,
librarySoundProgress, libraryFavouriteCheck, libraryRatingSpin, libraryTagsEdit,
libraryNotesEdit, labelCategoryEdit, labelFxNameEdit, labelCreatorEdit, labelSourceEdit (the
take's UCS labels), librarySaveMetaButton, librarySimilarButton, restoreSettingsButton,
regenerateButton, libraryDeleteButton, libraryUndoButton, libraryExportButton,
libraryZipButton. Imported sound folders (app.library.import_*): librarySourceFilter,
libraryUseAsInitButton and libraryUseAsInitAction (the row as init audio), libraryImportRow with
libraryImportProgress and libraryImportCancelButton.
"""

from __future__ import annotations

import datetime as dt

from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from app.common.theme import icon
from app.common.window_state import settings_path
from app.library.import_progress import ImportProgressRow
from app.library.import_sources import SourceFilter
from app.library.inspector_frame import INSPECTOR_WIDTH, inspector_frame
from app.library.search_box import SoundSearchEdit
from app.library.table import COLUMNS, LibraryModel
from app.library.table_view import LibraryTableView
from app.widgets.facts_view import FactsView
from app.widgets.named import named
from app.widgets.preview_wave import PreviewWave

__all__ = ["COLUMNS", "LibraryModel", "LibraryPanel"]

SORTS = {"Newest first": ("created", True), "Oldest first": ("created", False),
         "Best rated": ("rating", True), "Prompt A-Z": ("prompt", False),
         "Longest": ("seconds", True)}
PERIODS = {"Any time": None, "Today": 1, "Last 7 days": 7, "Last 30 days": 30}
ANY_TIER = "Any tier"
HEADER_KEY = "library/columns"  # the table's column widths, order, hidden columns and sort
SAVE_DELAY_MS = 500
FIND_SIMILAR_TIP = "Find the takes that sound most like the selected one (Ctrl+Shift+F)"
MAX_LABEL_CHARS = 256  # engines.delivery.labels.MAX_LABEL_CHARS
# The inspector's UCS label edits: (label key, object name, what it holds).
LABEL_EDITS = (("catid", "labelCategoryEdit", "UCS category ID, e.g. FOOTGrvl"),
               ("fx_name", "labelFxNameEdit", "UCS FX name, e.g. Gravel Step"),
               ("creator", "labelCreatorEdit", "UCS creator ID"),
               ("source", "labelSourceEdit", "UCS source ID"))
# What each edit is called beside it: a placeholder goes once the edit holds text.
LABEL_CAPTIONS = {"catid": "CatID", "fx_name": "FX name", "creator": "Creator",
                  "source": "Source"}


def studio_settings() -> QSettings:
    """The window's settings file (app.common.window_state): in the data folder, so a test run or a
    portable install keeps its own."""
    return QSettings(str(settings_path()), QSettings.Format.IniFormat)


class LibraryPanel(QWidget):
    searchChanged = Signal()
    loadRequested = Signal(int)

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("libraryPanel")
        layout = QVBoxLayout(self)
        layout.addLayout(self._build_search())
        self.model = LibraryModel()
        self.view = named(LibraryTableView(), "libraryView")
        self.view.setModel(self.model)
        self._save_timer = QTimer(self, singleShot=True, interval=SAVE_DELAY_MS)
        self._save_timer.timeout.connect(self.save_header)
        self.view.set_up_columns(studio_settings().value(HEADER_KEY))
        header = self.view.horizontalHeader()
        for changed in (header.sectionResized, header.sectionMoved,
                        header.sortIndicatorChanged):
            changed.connect(lambda *_args: self._save_timer.start())
        body = named(QSplitter(Qt.Orientation.Horizontal), "librarySplitter")
        body.setChildrenCollapsible(False)
        body.addWidget(self.view)
        body.addWidget(self._build_inspector())
        body.setStretchFactor(0, 1)
        body.setSizes([1000, INSPECTOR_WIDTH])
        layout.addWidget(body, stretch=1)
        layout.addLayout(self._build_status())
        self._build_context_menu()

        self.search_edit.textChanged.connect(self.searchChanged)
        self.adapter_filter.textChanged.connect(self.searchChanged)
        for combo in (self.model_filter, self.period_filter, self.sort_combo, self.tier_filter,
                      self.source_filter):
            combo.currentIndexChanged.connect(self.searchChanged)
        self.sort_combo.currentIndexChanged.connect(self._sort_menu_chosen)
        self.favourite_filter.toggled.connect(self.searchChanged)
        self.rating_filter.valueChanged.connect(self.searchChanged)
        self.view.doubleClicked.connect(
            lambda index: self.loadRequested.emit(self.model.record(index.row()).id))

    # ------------------------------------------------------------------ layout
    def _build_search(self) -> QVBoxLayout:
        self.search_edit = named(SoundSearchEdit(), "librarySearchEdit")
        self.search_edit.setPlaceholderText("Search prompts, tags and notes - or drop a sound "
                                            "here to find takes like it")
        self.search_edit.setClearButtonEnabled(True)
        self.sort_combo = named(QComboBox(), "librarySortCombo")
        self.sort_combo.addItems(list(SORTS))
        self.model_filter = named(QComboBox(), "libraryModelFilter")
        self.model_filter.addItem("Any model", None)
        # the codec tier a take was decoded with (issue 14); filled by the controller from
        # the tiers the library holds
        self.tier_filter = named(QComboBox(), "libraryTierCombo")
        self.tier_filter.addItem(ANY_TIER, None)
        self.tier_filter.setToolTip("Show only takes decoded with this codec tier")
        self.period_filter = named(QComboBox(), "libraryPeriodFilter")
        for label, days in PERIODS.items():
            self.period_filter.addItem(label, days)
        self.rating_filter = named(QSpinBox(), "libraryRatingFilter")
        self.rating_filter.setRange(0, 5)
        self.rating_filter.setPrefix("Rating >= ")
        self.favourite_filter = named(QCheckBox("Favourites"), "libraryFavouriteFilter")
        self.source_filter = SourceFilter()  # generated, imported, one imported folder
        # takes made with one adapter: its file name or the start of its SHA-256 (a field,
        # not a list: it costs the filter row no more room than a combo)
        self.adapter_filter = named(QLineEdit(), "libraryAdapterFilter")
        self.adapter_filter.setPlaceholderText("Adapter")
        self.adapter_filter.setToolTip("Show only takes made with this adapter: its file name "
                                       "or the start of its SHA-256")
        self.adapter_filter.setClearButtonEnabled(True)
        self.adapter_filter.setMaximumWidth(140)
        top = QHBoxLayout()
        top.addWidget(self.search_edit, stretch=1)
        top.addWidget(self.sort_combo)
        filters = QHBoxLayout()
        for widget in (self.source_filter, self.model_filter, self.tier_filter,
                       self.adapter_filter, self.period_filter, self.rating_filter,
                       self.favourite_filter):
            filters.addWidget(widget)
        filters.addStretch(1)
        rows = QVBoxLayout()
        rows.addLayout(top)
        rows.addLayout(filters)
        return rows

    def _build_inspector(self) -> QWidget:
        self.preview = named(PreviewWave(), "libraryPreview")
        self.facts = named(FactsView(), "libraryFacts")
        grid = QGridLayout()
        grid.setContentsMargins(0, 0, 0, 0)
        self.favourite_check = named(QCheckBox("Favourite"), "libraryFavouriteCheck")
        self.rating_spin = named(QSpinBox(), "libraryRatingSpin")
        self.rating_spin.setRange(0, 5)
        self.rating_spin.setPrefix("Rating ")
        self.tags_edit = named(QLineEdit(), "libraryTagsEdit")
        self.tags_edit.setPlaceholderText("tags, comma separated")
        self.notes_edit = named(QPlainTextEdit(), "libraryNotesEdit")
        self.notes_edit.setPlaceholderText("notes")
        self.notes_edit.setMinimumHeight(48)
        self.label_edits = self._build_label_edits()
        self.save_meta_button = named(QPushButton("Save tags/notes/labels"),
                                      "librarySaveMetaButton")
        self.similar_button = named(QPushButton("Find similar"), "librarySimilarButton",
                                    icon("list"))
        self.similar_button.setToolTip(FIND_SIMILAR_TIP)
        # (app.library.import_rows: the selected sound, imported or generated, as init audio)
        self.use_init_button = named(QPushButton("Use as init audio"), "libraryUseAsInitButton",
                                     icon("init"))
        self.use_init_button.setToolTip("Start audio-to-audio or inpainting from the selected "
                                        "sound: it becomes the Generate panel's init audio")
        self.restore_button = named(QPushButton("Restore settings"), "restoreSettingsButton")
        self.restore_button.setToolTip("Put the take's settings into the generation panel")
        self.regenerate_button = named(QPushButton("Regenerate"), "regenerateButton")
        self.regenerate_button.setToolTip("Make the take again: the same seed, the same sound")
        self.delete_button = named(QPushButton("Delete"), "libraryDeleteButton", icon("delete"))
        self.undo_button = named(QPushButton("Undo delete"), "libraryUndoButton")
        self.undo_button.setEnabled(False)
        self.export_button = named(QPushButton("Export to folder..."), "libraryExportButton")
        self.zip_button = named(QPushButton("Export zip..."), "libraryZipButton")
        grid.addWidget(self.favourite_check, 0, 0)
        grid.addWidget(self.rating_spin, 0, 1)
        grid.addWidget(self.tags_edit, 1, 0, 1, 2)
        grid.addWidget(self.notes_edit, 2, 0, 1, 2)
        labels = QFormLayout()
        labels.setContentsMargins(0, 0, 0, 0)
        for key, edit in self.label_edits.items():
            labels.addRow(LABEL_CAPTIONS[key], edit)  # the caption is the edit's buddy
        grid.addLayout(labels, 3, 0, 1, 2)
        grid.addWidget(self.save_meta_button, 4, 0, 1, 2)
        grid.setRowStretch(2, 1)
        actions = QGridLayout()  # always in view, under the scrolling details
        actions.addWidget(self.similar_button, 0, 0)
        actions.addWidget(self.use_init_button, 0, 1)
        buttons = ((self.restore_button, self.regenerate_button),
                   (self.delete_button, self.undo_button),
                   (self.export_button, self.zip_button))
        for row, pair in enumerate(buttons, start=1):
            for column, button in enumerate(pair):
                actions.addWidget(button, row, column)
        self.detail_widgets = (self.favourite_check, self.rating_spin, self.tags_edit,
                               self.notes_edit, *self.label_edits.values(),
                               self.save_meta_button)
        return inspector_frame(self.preview, self.facts, grid, actions)

    def _build_label_edits(self) -> dict[str, QLineEdit]:
        """The take's UCS labels (engines.store.records.LABEL_COLUMNS keys): every file
        dragged, saved, exported or published from it carries them."""
        edits = {}
        for key, name, hint in LABEL_EDITS:
            edit = named(QLineEdit(), name)
            edit.setPlaceholderText(hint)
            edit.setToolTip(f"{hint}: the files of this take are named and labelled by it")
            edit.setMaxLength(MAX_LABEL_CHARS)
            edits[key] = edit
        return edits

    def label_values(self) -> dict[str, str]:
        """The labels as the inspector shows them (trimmed)."""
        return {key: edit.text().strip() for key, edit in self.label_edits.items()}

    def _build_status(self) -> QHBoxLayout:
        self.count_label = named(QLabel(""), "libraryCountLabel")
        self.count_label.setWordWrap(True)
        self.show_all_button = named(QPushButton("Show all"), "libraryShowAllButton")
        self.show_all_button.setToolTip("Leave the sound search: the library as the search box "
                                        "and filters describe it")
        self.show_all_button.hide()
        self.sound_progress = named(QProgressBar(), "librarySoundProgress")
        self.sound_progress.setFormat("Preparing sound search: %v of %m takes")
        self.sound_progress.hide()
        row = QHBoxLayout()
        row.addWidget(self.count_label, stretch=1)
        row.addWidget(self.sound_progress, stretch=1)
        self.import_progress = ImportProgressRow()  # File > Import sound folder...'s progress
        row.addWidget(self.import_progress, stretch=1)
        row.addWidget(self.show_all_button)
        return row

    def _build_context_menu(self) -> None:
        """The table's right-click menu: the actions of the selected rows."""
        def action(text: str, name: str, icon_name: str = "") -> QAction:
            made = QAction(icon(icon_name) if icon_name else icon("list"), text, self.view)
            made.setObjectName(name)
            self.view.addAction(made)
            return made

        self.load_action = action("Open in the session", "libraryLoadAction", "open")
        self.similar_action = action("Find similar", "libraryFindSimilarAction")
        self.use_init_action = action("Use as init audio", "libraryUseAsInitAction", "init")
        self.rename_action = action("Rename", "libraryRenameAction", "rename")
        self.restore_action = action("Restore settings", "libraryRestoreAction")
        self.regenerate_action = action("Regenerate", "libraryRegenerateAction", "generate")
        self.delete_action = action("Delete", "libraryDeleteAction", "delete")
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)

    # ------------------------------------------------------------------ columns
    def save_header(self) -> None:
        """Keep the table's column state for the next run."""
        self._save_timer.stop()
        studio_settings().setValue(HEADER_KEY, self.view.column_state())

    def hideEvent(self, event) -> None:  # noqa: N802 - Qt override: closing flushes
        if self._save_timer.isActive():
            self.save_header()
        super().hideEvent(event)

    def _sort_menu_chosen(self) -> None:
        """The sort menu orders the whole library: a clicked column sort gives way to it."""
        self.view.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)

    # ------------------------------------------------------------------ what it shows
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
                "tier": self.tier_filter.currentData(),
                "source": self.source_filter.currentData(),
                "adapter": self.adapter_filter.text().strip() or None, "sort": sort,
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

    def show_sound_search(self, on: bool) -> None:
        """Find similar's results are listed (Match column, Show all) or the search's."""
        self.view.show_matches(on)
        self.show_all_button.setVisible(on)

    def show_details(self, record) -> None:
        """The selected take's favourite, rating, tags and notes; empty and disabled when no
        take is selected (never the previous take's)."""
        for widget in self.detail_widgets:
            widget.blockSignals(True)
        try:
            self.favourite_check.setChecked(bool(record and record.favourite))
            self.rating_spin.setValue(record.rating if record else 0)
            self.tags_edit.setText(", ".join(record.tags) if record else "")
            self.notes_edit.setPlainText(record.notes if record else "")
            for key, edit in self.label_edits.items():
                edit.setText(record.labels.get(key, "") if record else "")
            for widget in self.detail_widgets:
                widget.setEnabled(record is not None)
        finally:
            for widget in self.detail_widgets:
                widget.blockSignals(False)

    def selected_records(self) -> list:
        rows = sorted({index.row() for index in self.view.selectionModel().selectedRows()})
        return [self.model.record(r) for r in rows if self.model.record(r) is not None]

    def current_record(self):
        records = self.selected_records()
        return records[0] if records else None
