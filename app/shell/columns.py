"""The side columns of the main splitter fold away and come back: the settings column (the
generation panel) and the session column, each by its View menu item and key, or by dragging
its handle to the window's edge. The centre (the Take and Library pages) never folds: it is
what the room is for. The splitter's saved state (app.common.window_state) keeps a folded
column folded in the next run; the menu items follow the splitter, however it changed.

On a narrow screen (a 1366x768 laptop) the side columns start at their narrower widths, so the
centre gets the room (`default_sizes`).

Each centre page keeps its own folds (`show_page`): the Library page is a sound browser, so in
a window narrower than NARROW_SCREEN_PX it opens with both side columns folded until the user
unfolds them (its folds are remembered, `page_folds`), and the Take page gets its own layout
back when the user returns to it.
"""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QSplitter

SETTINGS, CENTRE, SESSION = 0, 1, 2  # the splitter's columns
TAKE_PAGE, LIBRARY_PAGE = "take", "library"  # the centre's pages, each with its own folds
FOLDABLE = (SETTINGS, SESSION)
# Default widths: wide screens, and screens narrower than NARROW_SCREEN_PX (the centre first).
WIDE_SIZES = (330, 640, 380)
NARROW_SIZES = (300, 800, 240)
NARROW_SCREEN_PX = 1600


def default_sizes(screen_width: int) -> list[int]:
    """The columns' widths for a window on a screen `screen_width` px wide."""
    return list(NARROW_SIZES if 0 < screen_width < NARROW_SCREEN_PX else WIDE_SIZES)


class ColumnFolds(QObject):
    """Folds and unfolds `splitter`'s side columns; `actions` are the checkable menu items
    (checked: the column shows), by column index."""

    def __init__(self, splitter: QSplitter, actions: dict[int, QAction],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.splitter = splitter
        self.actions = actions
        self._widths = {index: WIDE_SIZES[index] for index in FOLDABLE}  # to unfold back to
        self._page = TAKE_PAGE
        # the folds of the pages not in view (None: the Library page was never arranged)
        self._page_folds: dict[str, frozenset[int] | None] = {LIBRARY_PAGE: None}
        for index in FOLDABLE:
            splitter.setCollapsible(index, True)
        splitter.setCollapsible(CENTRE, False)
        for index, action in actions.items():
            action.setCheckable(True)
            action.setChecked(True)
            action.toggled.connect(lambda shown, i=index: self.set_shown(i, shown))
        splitter.splitterMoved.connect(lambda *_args: self.sync())

    def shown(self, index: int) -> bool:
        return self.splitter.sizes()[index] > 0

    def set_shown(self, index: int, shown: bool) -> None:
        """Fold (False) or unfold (True) column `index`; the centre gives or takes the width."""
        sizes = self.splitter.sizes()
        if shown == (sizes[index] > 0):
            self.sync()
            return
        if shown:
            width = max(self._widths[index],
                        self.splitter.widget(index).minimumSizeHint().width())
            sizes[CENTRE] = max(sizes[CENTRE] - width, 0)
            sizes[index] = width
        else:
            self._widths[index] = sizes[index]
            sizes[CENTRE] += sizes[index]
            sizes[index] = 0
        self.splitter.setSizes(sizes)
        self.sync()

    def toggle(self, index: int) -> None:
        self.set_shown(index, not self.shown(index))

    def sync(self) -> None:
        """The menu items say what the splitter shows (after a drag, or a restored layout)."""
        sizes = self.splitter.sizes()
        for index, action in self.actions.items():
            if sizes[index] > 0:
                self._widths[index] = sizes[index]
            blocked = action.blockSignals(True)
            try:
                action.setChecked(sizes[index] > 0)
            finally:
                action.blockSignals(blocked)

    def folded(self) -> frozenset[int]:
        sizes = self.splitter.sizes()
        return frozenset(index for index in FOLDABLE if sizes[index] == 0)

    def show_page(self, page: str) -> None:
        """The centre shows `page` now: keep the folds of the page left, bring back its own
        (a Library page never arranged: both folded in a narrow window, as they were else)."""
        if page == self._page:
            return
        self._page_folds[self._page] = self.folded()
        self._page = page
        wanted = self._page_folds.get(page)
        if wanted is None:
            narrow = 0 < self.splitter.window().width() < NARROW_SCREEN_PX
            wanted = frozenset(FOLDABLE) if page == LIBRARY_PAGE and narrow else self.folded()
        for index in FOLDABLE:
            self.set_shown(index, index not in wanted)

    def page_folds(self, page: str) -> frozenset[int] | None:
        """`page`'s folds (None: never arranged), whichever page is in view."""
        return self.folded() if page == self._page else self._page_folds.get(page)

    def set_page_folds(self, page: str, folds: frozenset[int] | None) -> None:
        """Folds remembered from the last run, for a page not in view yet."""
        if page != self._page:
            self._page_folds[page] = folds
