"""The session's takes, a shared service of the window: the takes (with the takes list that
shows them), the init take and its inpaint spans, and whether A/B plays finished audio.
Controllers never import each other or the window: they talk through this and Qt signals."""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QListWidget, QListWidgetItem

from app.common.session_take import Take
from app.common.thumbnails import ThumbnailCache, array_peaks
from app.widgets.take_row_delegate import fill_take_row

TAKE_ROLE = Qt.ItemDataRole.UserRole + 1


@dataclass
class Audible:
    """What the player plays and the views show for a take: raw, or finished (A/B)."""

    audio: object  # int16 or float32 (N, 2) at 44.1 kHz
    display: dict = field(default_factory=dict)  # app.common.displaydata.prepare_display of it
    finished: bool = False


class TakeModel(QObject):
    """The session's takes, in the order and with the selection of the takes list.

    The list widget is the session's order and current take; `takes` maps take ids to takes.
    The init take and its spans (seconds) are session state too: `set_init`, `clear_init` and
    `restore_spans` change them and say so (`initChanged`, `spansRestored`); whoever edits the
    spans on the waveform writes `spans` directly. So is A/B: `hear_finished` chooses whether
    the player and views present a take's finished or raw audio (`audible`), and
    `auditionChanged` says when that changed for a take (the toggle, new finished audio).
    """

    initChanged = Signal(object)  # the new init take, or None
    spansRestored = Signal()  # `spans` was replaced from elsewhere (a library record)
    auditionChanged = Signal(object)  # the take whose audible audio changed

    def __init__(self, takes_list: QListWidget, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.list = takes_list
        self.takes: dict[int, Take] = {}
        self.init_take: Take | None = None
        self.spans: list[tuple[float, float]] = []
        self.hear_finished = False
        self.thumbnails = ThumbnailCache(self)  # rows' waveforms, drawn off the GUI thread
        self.thumbnails.ready.connect(self._thumbnail_ready)

    # ------------------------------------------------------------------ A/B
    def audible(self, take: Take) -> Audible:
        finished = take.finished
        if self.hear_finished and take.finishing is not None and finished is not None:
            return Audible(finished.preview, finished.display, finished=True)
        return Audible(take.pcm, take.display)

    def set_hear_finished(self, on: bool) -> None:
        self.hear_finished = bool(on)
        current = self.current_take()
        if current is not None:
            self.auditionChanged.emit(current)

    def audition_changed(self, take: Take) -> None:
        """The take's finished audio changed: whoever presents it shows it again (and its row
        its loop badge)."""
        self.show_row(take)
        if take is self.current_take():
            self.auditionChanged.emit(take)

    def show_row(self, take: Take) -> None:
        """The take's row again: name, details, rating, quality and loop badges."""
        item = self.item_for(take)
        if item is not None:
            self._fill_row(item, take)

    def _fill_row(self, item: QListWidgetItem, take: Take) -> None:
        blocked = self.list.blockSignals(True)  # not a rename
        try:
            fill_take_row(item, take)
        finally:
            self.list.blockSignals(blocked)

    def _thumbnail(self, take: Take):
        pcm = take.pcm
        return self.thumbnails.pixmap(("take", take.take_id), self.list.iconSize(),
                                      lambda columns: array_peaks(pcm, columns))

    def _thumbnail_ready(self, key) -> None:
        take = self.takes.get(key[1])
        item = self.item_for(take) if take is not None else None
        pixmap = self._thumbnail(take) if item is not None else None
        if pixmap is not None:
            blocked = self.list.blockSignals(True)
            try:
                item.setIcon(QIcon(pixmap))
            finally:
                self.list.blockSignals(blocked)

    # ------------------------------------------------------------------ takes
    def add_take(self, take: Take, select: bool = True,
                 after: Take | None = None) -> QListWidgetItem:
        """Append the take (or put it right after `after`, as tier comparisons are)."""
        self.takes[take.take_id] = take
        item = QListWidgetItem(take.title())
        item.setData(TAKE_ROLE, take.take_id)
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsEditable | Qt.ItemFlag.ItemIsDragEnabled)
        self._fill_row(item, take)
        self._thumbnail(take)  # the session holds few takes: each row's waveform is asked now
        lst = self.list
        anchor = self.item_for(after) if after is not None else None
        lst.blockSignals(True)
        if anchor is not None:
            lst.insertItem(lst.row(anchor) + 1, item)
        else:
            lst.addItem(item)
        lst.blockSignals(False)
        if select:
            lst.setCurrentItem(item)
        return item

    def take_for(self, item: QListWidgetItem | None) -> Take | None:
        if item is None:
            return None
        return self.takes.get(item.data(TAKE_ROLE))

    def current_take(self) -> Take | None:
        return self.take_for(self.list.currentItem())

    def item_for(self, take: Take) -> QListWidgetItem | None:
        lst = self.list
        for row in range(lst.count()):
            if lst.item(row).data(TAKE_ROLE) == take.take_id:
                return lst.item(row)
        return None

    def select(self, take: Take) -> None:
        item = self.item_for(take)
        if item is not None:
            self.list.setCurrentItem(item)

    def remove_row(self, row: int) -> Take | None:
        """Drop the take shown in `row` from the session (clearing the init if it was that)."""
        take = self.take_for(self.list.item(row))
        self.list.takeItem(row)
        if take is not None:
            self.takes.pop(take.take_id, None)
            if take is self.init_take:
                self.clear_init()
        return take

    def for_library_id(self, take_id: int) -> Take | None:
        return next((t for t in self.takes.values() if t.library_id == take_id), None)

    # ------------------------------------------------------------------ init audio
    def set_init(self, take: Take) -> None:
        self.init_take = take
        self.spans = []
        self.initChanged.emit(take)

    def clear_init(self) -> None:
        self.init_take = None
        self.spans = []
        self.initChanged.emit(None)

    def restore_spans(self, spans) -> None:
        self.spans = [tuple(s) for s in spans]
        self.spansRestored.emit()

    def init_lineage(self) -> tuple[int | None, str | None]:
        """(library id, original file) of the init take, for the worker's library record."""
        if self.init_take is None:
            return None, None
        source = str(self.init_take.init_path) if self.init_take.init_path is not None else None
        return self.init_take.library_id, source

    def shutdown(self) -> None:
        """The window is closing: the thumbnail threads stop (queued ones are dropped)."""
        self.thumbnails.shutdown()
