"""The Library page's rows for a search, a page at a time, so a library of 50,000 takes and
imported sounds opens, and answers each keystroke in the search box, as fast as a small one.

The first PAGE_LIMIT rows are listed at once; the next MORE_ROWS come as the table is scrolled to
its end (the model asks: canFetchMore/fetchMore). Counting every match of a broad search ("r")
reads the whole library, so it is not done on a keystroke: the count line says "100+ of 50,000
takes" and the exact figure follows once typing pauses (COUNT_DELAY_MS). A page that is not full
holds every match: nothing more to count then.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, QTimer

from app.common.expected_errors import LIBRARY_ERRORS
from app.common.notifier import Notifier
from app.library.table import LibraryModel

log = logging.getLogger(__name__)

PAGE_LIMIT = 100  # a few screens of rows
MORE_ROWS = 300
COUNT_DELAY_MS = 300  # typing paused this long: count the matches


def _takes(count: int) -> str:
    return f"{count:,} take{'s' if count != 1 else ''}"


def count_text(listed: int, matching: int | None, total: int, filtered: bool) -> str:
    """"6 takes", or under a search or filter "1 of 6 takes"; "(500 listed)" when the table
    holds fewer than match; "100+ of 6,000 takes" while the matches are being counted."""
    if matching is None:
        return f"{listed:,}+ of {_takes(total)}"
    text = f"{matching:,} of {_takes(total)}" if filtered else _takes(total)
    return text + (f" ({listed:,} listed)" if listed < matching else "")


def filtered(query: dict) -> bool:
    return bool(query["text"] or query["model"] or query["favourite"] or query["min_rating"]
                or query["since"] or query["tier"] or query.get("source")
                or query.get("adapter"))


def _count_args(query: dict) -> dict:
    return {key: value for key, value in query.items() if key not in ("sort", "descending")}


class PagedListing(QObject):
    """Lists `query`'s rows in `model` and says how many in `count_label`."""

    def __init__(self, model: LibraryModel, count_label, notifier: Notifier, library,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.count_label = count_label
        self.notifier = notifier
        self.library = library
        self.counts: tuple[int | None, int, bool] = (0, 0, False)
        self._query: dict = {}
        self._count_timer = QTimer(self, singleShot=True, interval=COUNT_DELAY_MS)
        self._count_timer.timeout.connect(self.count_now)
        model.rowsInserted.connect(self.show_count)  # a page more, scrolled to

    def show(self, query: dict) -> bool:
        """List the first page of `query`; False (and one sentence) when the library cannot be
        searched (the rows listed before stay)."""
        self._count_timer.stop()
        try:
            records = self.library.search(**query, limit=PAGE_LIMIT)
            total = self.library.count()  # (an index read: quick at any size)
        except LIBRARY_ERRORS as exc:  # one sentence, the traceback to the log
            self.notifier.failed("Could not search the library", exc)
            return False
        is_filtered = filtered(query)
        matching: int | None = total if not is_filtered else None
        if len(records) < PAGE_LIMIT:
            matching = len(records)  # a page not full is every match
        self._query = query
        self.model.set_records(records, fetch=lambda offset: self._page(query, offset),
                               total=matching)
        self.counts = (matching, total, is_filtered)
        self.show_count()
        if matching is None:
            self._count_timer.start()
        return True

    def count_now(self) -> None:
        """Count the matches of the search listed (typing paused, or a test asks)."""
        self._count_timer.stop()
        matching, total, is_filtered = self.counts
        if matching is not None:
            return
        try:
            matching = self.library.count(**_count_args(self._query))
        except LIBRARY_ERRORS:  # the line keeps "100+ of ..."; the rows are listed anyway
            log.info("could not count the library's matches", exc_info=True)
            return
        self.model.total = max(matching, self.model.rowCount())
        self.counts = (matching, total, is_filtered)
        self.show_count()

    def shutdown(self) -> None:
        """The window is closing: no count after the library is closed."""
        self._count_timer.stop()

    def _page(self, query: dict, offset: int) -> list:
        """The next page (the table scrolled to its end); [] and one sentence when the library
        cannot be read."""
        try:
            return self.library.search(**query, limit=MORE_ROWS, offset=offset)
        except LIBRARY_ERRORS as exc:
            self.notifier.failed("Could not list more of the library", exc)
            return []

    def show_count(self, *_args) -> None:
        matching, total, is_filtered = self.counts
        self.count_label.setText(count_text(self.model.rowCount(), matching, total,
                                            is_filtered))
