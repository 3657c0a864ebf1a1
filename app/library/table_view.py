"""The library's table view: whole rows, drag-out, Up/Down to audition, F2 to rename in place, a
header menu that shows or hides columns, and column widths made for reading.

The name column gets the room the others leave (never less than PROMPT_FLOOR: a narrow page
scrolls sideways rather than hide it); the stars and the heart stay narrow; seed, length and
status fit their contents. Widths, order, hidden columns and the clicked sort are kept between
runs (`restore_columns`, `column_state`).
"""

from __future__ import annotations

from PySide6.QtCore import QByteArray, Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QMenu, QTableView

from app.library.table import (
    COLUMNS,
    CREATED,
    FAV,
    LENGTH,
    MATCH,
    MODEL,
    PROMPT,
    RATING,
    SEED,
    STATUS,
    TAGS,
    THUMB_SIZE,
    TIER,
)
from app.widgets.takes_list import plain_arrow

PROMPT_FLOOR = 160  # the name never gets narrower: the table scrolls sideways instead
# The order a first run shows: what a sound is called and how it rates, then its facts.
FIRST_ORDER = (FAV, RATING, PROMPT, MATCH, LENGTH, TAGS, SEED, MODEL, TIER, CREATED, STATUS)
FITTED = (SEED, LENGTH, STATUS, MATCH)  # as wide as their contents
ALWAYS_SHOWN = (PROMPT,)
OWN_VISIBILITY = (MATCH,)  # shown while Find similar's results are listed, by the panel


class LibraryTableView(QTableView):
    auditionRequested = Signal(int)  # the row Up/Down moved to

    def __init__(self) -> None:
        super().__init__()
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        # F2 reaches the window's Rename action, which edits the name here (app.shell.studio)
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

    # ------------------------------------------------------------------ columns
    def set_up_columns(self, state: object) -> None:
        """Default widths and order, then the state a last run kept (`column_state`)."""
        header = self.horizontalHeader()
        header.setStretchLastSection(False)
        header.setSectionsMovable(True)  # people put their columns where they read them
        header.setMinimumSectionSize(24)
        metrics = self.fontMetrics()
        widths = {FAV: metrics.horizontalAdvance("♥") + 16,
                  RATING: metrics.horizontalAdvance("★★★★★") + 12,
                  MODEL: metrics.horizontalAdvance("sm-music") + 24,
                  TIER: metrics.horizontalAdvance("fp8_fast") + 24,
                  TAGS: metrics.horizontalAdvance("impact, metal") + 16,
                  CREATED: metrics.horizontalAdvance("2099-12-31") + 16}
        for column, width in widths.items():
            header.resizeSection(column, width)
        for visual, column in enumerate(FIRST_ORDER):
            header.moveSection(header.visualIndex(column), visual)
        header.setSectionHidden(MATCH, True)
        restored = (isinstance(state, QByteArray | bytes)
                    and header.restoreState(QByteArray(state)))
        if not restored:  # the library's own order until a column is clicked
            header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        header.setSectionHidden(PROMPT, False)
        modes = {FAV: QHeaderView.ResizeMode.Fixed, RATING: QHeaderView.ResizeMode.Fixed,
                 PROMPT: QHeaderView.ResizeMode.Stretch}
        modes.update(dict.fromkeys(FITTED, QHeaderView.ResizeMode.ResizeToContents))
        for column in range(len(COLUMNS)):
            header.setSectionResizeMode(column, modes.get(column,
                                                          QHeaderView.ResizeMode.Interactive))
        header.setSortIndicatorClearable(True)
        self.setSortingEnabled(True)  # sorts by the restored indicator, if any

    def column_state(self) -> QByteArray:
        """What `set_up_columns` restores next run (Match's visibility is not the user's)."""
        header = self.horizontalHeader()
        shown = not header.isSectionHidden(MATCH)
        header.setSectionHidden(MATCH, True)
        state = header.saveState()
        header.setSectionHidden(MATCH, not shown)
        return state

    def show_matches(self, on: bool) -> None:
        self.horizontalHeader().setSectionHidden(MATCH, not on)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self.fit_prompt()

    def _other_column_resized(self, column: int, _old: int, _new: int) -> None:
        if column != PROMPT:
            self.fit_prompt()

    def fit_prompt(self) -> None:
        """The name stretches over the room the other columns leave, but never below
        PROMPT_FLOOR: a narrow page scrolls sideways rather than hide the name."""
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

    def _column_menu(self, pos) -> None:
        header = self.horizontalHeader()
        menu = QMenu(self)
        for column, title in enumerate(COLUMNS):
            if column in ALWAYS_SHOWN or column in OWN_VISIBILITY:
                continue
            action = menu.addAction(title)
            action.setCheckable(True)
            action.setChecked(not header.isSectionHidden(column))
            action.toggled.connect(
                lambda shown, c=column: header.setSectionHidden(c, not shown))
        menu.exec(header.mapToGlobal(pos))

    # ------------------------------------------------------------------ keys
    def keyPressEvent(self, event) -> None:  # noqa: N802 - Qt override
        before = self.currentIndex().row()
        super().keyPressEvent(event)
        row = self.currentIndex().row()
        if plain_arrow(event) and row != before and row >= 0:
            self.auditionRequested.emit(row)

    def rename_row(self, row: int) -> bool:
        """Edit the name of `row` in place (F2); False when there is no such row."""
        index = self.model().index(row, PROMPT)
        if not index.isValid():
            return False
        self.setCurrentIndex(index)
        self.scrollTo(index)
        self.edit(index)
        return True
