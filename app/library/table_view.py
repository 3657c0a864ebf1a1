"""The library's table view: whole rows, drag-out, Up/Down to audition, F2 to rename in place, a
header menu that shows or hides columns, and column widths made for reading.

The name column gets the room the others leave (never less than PROMPT_FLOOR); the stars and
the heart stay narrow; seed, length, model, tier and status fit their contents; tags are cut
short (the inspector lists them whole). A page too narrow for them all folds the columns the
inspector's facts repeat (app.library.table_room) rather than scroll sideways. Widths, order,
hidden columns and the clicked sort are kept between runs (`set_up_columns`, `column_state`).
"""

from __future__ import annotations

from PySide6.QtCore import QByteArray, Qt, QTimer, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QMenu, QStyle, QTableView

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
    SOURCE,
    STATUS,
    TAGS,
    THUMB_SIZE,
    TIER,
)
from app.library.table_room import (
    NAME_FLOOR,
    TAGS_MAX,
    TAGS_MIN,
    columns_to_fold,
    tags_width,
)
from app.widgets.takes_list import plain_arrow

PROMPT_FLOOR = NAME_FLOOR  # the name never gets narrower: other columns fold away instead
# The order a first run shows: what a sound is called and how it rates, then its facts.
FIRST_ORDER = (FAV, RATING, PROMPT, MATCH, LENGTH, TAGS, SOURCE, SEED, MODEL, TIER, CREATED,
               STATUS)
# As wide as their contents and their titles (fitted by `fit_prompt`: Qt's own fitting keeps
# room for a sort arrow beside every title, 20 px a column the name needs more).
FITTED = (SEED, LENGTH, STATUS, MATCH, MODEL, TIER)
TITLE_PADDING = 14  # px around a column's title
ALWAYS_SHOWN = (PROMPT,)
NAME_PADDING = 16  # px around the name's thumbnail and text
NAME_ROWS_MEASURED = 100  # at most the rows on screen are measured
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
        # A column fitted to its contents measures the rows on screen, not every row listed
        # (Qt's default: up to 1,000, each cell a dozen calls into the model - 10 ms of the
        # GUI thread for a first page, ten times that after a few pages, on every refit).
        header.setResizeContentsPrecision(0)
        header.sortIndicatorChanged.connect(lambda *_args: self.fit_prompt())  # its arrow
        self._folded: set[int] = set()  # folded for want of room (not by the user)
        self._fold_widths: dict[int, int] = {}  # a folded column's width when it was shown
        self._fitting = False
        self._set_up = False  # nothing folds before the columns have their widths
        self._tags_width = 0  # the tags' narrowest width when they have room
        self._tags_by_user = False  # the user set it: it is not grown to their contents
        self._tags_min = TAGS_MIN

    # ------------------------------------------------------------------ columns
    def set_up_columns(self, state: object) -> None:
        """Default widths and order, then the state a last run kept (`column_state`)."""
        header = self.horizontalHeader()
        self._fitting = True
        for column in self._folded:  # widths are given to shown columns
            header.setSectionHidden(column, False)
        self._folded = set()
        self._fitting = False
        header.setStretchLastSection(False)
        header.setSectionsMovable(True)  # people put their columns where they read them
        header.setMinimumSectionSize(24)
        metrics = self.fontMetrics()
        widths = {FAV: metrics.horizontalAdvance("♥") + 16,
                  RATING: metrics.horizontalAdvance("★★★★★") + 12,
                  TAGS: metrics.horizontalAdvance("impact, metal") + 16,
                  SOURCE: metrics.horizontalAdvance("Generated") + 16,
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
        for column in range(len(COLUMNS)):
            header.setSectionResizeMode(column, modes.get(column,
                                                          QHeaderView.ResizeMode.Interactive))
        header.setSortIndicatorClearable(True)
        self.setSortingEnabled(True)  # sorts by the restored indicator, if any
        # the tags follow their contents (a width kept from the last run may be one they
        # gave way to); a width the user drags them to holds for this run
        self._tags_width, self._tags_by_user = widths[TAGS], False
        self._tags_min = max(widths[TAGS], TAGS_MIN)  # "impact, metal" reads whole
        self._set_up = True
        # new rows: the tags and the name may want other widths (after the view's own layout)
        self.model().modelReset.connect(lambda: QTimer.singleShot(0, self, self.fit_prompt))
        self.fit_prompt()

    def column_state(self) -> QByteArray:
        """What `set_up_columns` restores next run (Match's visibility is not the user's, nor
        a column folded for want of room)."""
        header = self.horizontalHeader()
        shown = not header.isSectionHidden(MATCH)
        self._fitting = True  # showing and hiding again must not refit meanwhile
        try:
            header.setSectionHidden(MATCH, True)
            for column in self._folded:
                header.setSectionHidden(column, False)
            state = header.saveState()
            for column in self._folded:
                header.setSectionHidden(column, True)
            header.setSectionHidden(MATCH, not shown)
        finally:
            self._fitting = False
        return state

    def folded_columns(self) -> set[int]:
        """The columns folded away for want of room (they come back when there is room)."""
        return set(self._folded)

    def show_matches(self, on: bool) -> None:
        self.horizontalHeader().setSectionHidden(MATCH, not on)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self.fit_prompt()

    def _other_column_resized(self, column: int, _old: int, new: int) -> None:
        if column != PROMPT and not self._fitting:
            if column == TAGS and new > 0:
                self._tags_width, self._tags_by_user = new, True
            self.fit_prompt()

    def _wanted(self, column: int) -> int:
        """How wide a column is shown: now, or when it was folded away."""
        if column == TAGS:
            return self._tags_min  # they give way before anything folds
        if column in self._folded:
            return self._fold_widths.get(column, 0)
        return self.horizontalHeader().sectionSize(column)

    def fit_prompt(self) -> None:
        """Fold (or bring back) the columns the room allows, then the name stretches over the
        room the others leave, but never below PROMPT_FLOOR."""
        header = self.horizontalHeader()
        if header.count() <= PROMPT or self._fitting or not self._set_up \
                or not self.isVisible():  # a hidden view's width means nothing yet
            return
        self._fitting = True
        try:
            shown = {c: self._wanted(c) for c in range(header.count())
                     if c != PROMPT and (not header.isSectionHidden(c) or c in self._folded)}
            fold = set(columns_to_fold(self.viewport().width(), shown, PROMPT_FLOOR))
            for column in self._folded - fold:
                header.setSectionHidden(column, False)
            for column in fold - self._folded:
                self._fold_widths[column] = header.sectionSize(column)
                header.setSectionHidden(column, True)
            self._folded = fold
            self._fit_contents()
            self._give_way_to_the_name()
        finally:
            self._fitting = False
        others = sum(header.sectionSize(c) for c in range(header.count())
                     if c != PROMPT and not header.isSectionHidden(c))
        roomy = self.viewport().width() - others >= PROMPT_FLOOR
        mode = QHeaderView.ResizeMode.Stretch if roomy else QHeaderView.ResizeMode.Interactive
        if header.sectionResizeMode(PROMPT) != mode:
            header.setSectionResizeMode(PROMPT, mode)
        if not roomy and header.sectionSize(PROMPT) < PROMPT_FLOOR:
            header.resizeSection(PROMPT, PROMPT_FLOOR)

    def _fit_contents(self) -> None:
        """The fitted columns as wide as their contents and titles (the sorted one with room
        for its arrow)."""
        header, model = self.horizontalHeader(), self.model()
        metrics = header.fontMetrics()
        arrow = self.style().pixelMetric(QStyle.PixelMetric.PM_HeaderMarkSize)
        for column in FITTED:
            if header.isSectionHidden(column):
                continue
            title = str(model.headerData(column, Qt.Orientation.Horizontal) or "")
            width = metrics.horizontalAdvance(title) + TITLE_PADDING
            if header.sortIndicatorSection() == column:
                width += arrow
            width = max(width, self.sizeHintForColumn(column))
            if header.sectionSize(column) != width:
                header.resizeSection(column, width)

    def _give_way_to_the_name(self) -> None:
        """The tags narrow (to a short list's width) while the name is cut, and widen back
        after."""
        header = self.horizontalHeader()
        if header.isSectionHidden(TAGS):
            return
        others = sum(header.sectionSize(c) for c in range(header.count())
                     if c not in (PROMPT, TAGS) and not header.isSectionHidden(c))
        name_wants = max(PROMPT_FLOOR, self._name_wants())
        preferred = self._tags_width if self._tags_by_user else min(
            max(self._tags_width, self.sizeHintForColumn(TAGS)), TAGS_MAX)
        width = tags_width(self.viewport().width() - others, name_wants, preferred,
                           min(self._tags_min, preferred))
        if header.sectionSize(TAGS) != width:
            header.resizeSection(TAGS, width)

    def _name_wants(self) -> int:
        """The width the names on screen read whole in, thumbnail included (whether it is
        drawn yet or not: it arrives later and must not cut the name then)."""
        model = self.model()
        first = max(self.rowAt(0), 0)
        last = self.rowAt(self.viewport().height() - 1)
        last = min(model.rowCount() - 1 if last < 0 else last, first + NAME_ROWS_MEASURED)
        metrics = self.fontMetrics()
        widest = max((metrics.horizontalAdvance(str(model.index(row, PROMPT).data() or ""))
                      for row in range(first, last + 1)), default=0)
        return widest + THUMB_SIZE.width() + NAME_PADDING

    def _column_menu(self, pos) -> None:
        header = self.horizontalHeader()
        menu = QMenu(self)
        for column, title in enumerate(COLUMNS):
            if column in ALWAYS_SHOWN or column in OWN_VISIBILITY:
                continue
            action = menu.addAction(title)
            action.setCheckable(True)
            action.setChecked(not header.isSectionHidden(column) or column in self._folded)
            action.toggled.connect(lambda shown, c=column: self._show_column(c, shown))
        menu.exec(header.mapToGlobal(pos))

    def _show_column(self, column: int, shown: bool) -> None:
        """The header menu: the user's choice (a folded column stays folded while room lacks)."""
        self._folded.discard(column)
        self.horizontalHeader().setSectionHidden(column, not shown)
        self.fit_prompt()

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
