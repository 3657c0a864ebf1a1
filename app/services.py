"""The shared services the window hands to its feature controllers.

- `Notifier` (app.notifier): status and error sentences for the status bar.
- `TakeModel`: the session's takes (with the takes list that shows them), the init take and
  its inpaint spans.
- `GpuService`: the one GPU worker, its thread, and whether a batch is running.
- factories for the generator (worker thread), the sound library and the audio player.

Controllers never import each other or the window: they talk through these and Qt signals.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QListWidget, QListWidgetItem

from app.notifier import Notifier, user_sentence
from app.takes import Take
from app.worker import Batch, GpuWorker, Job, ListJob, LoopJob, Task, WorkerHost
from engines import paths
from engines.request import GenerationRequest

__all__ = ["TAKE_ROLE", "Audible", "GpuService", "Notifier", "TakeModel", "UnavailableLibrary",
           "make_generator", "make_player", "open_library"]

log = logging.getLogger(__name__)

TAKE_ROLE = Qt.ItemDataRole.UserRole + 1


def make_generator():
    """Runs on the GPU worker thread (the Generator owns every engine object)."""
    from engines.generator import Generator
    from engines.models.inventory import default_catalog

    return Generator(default_catalog())


def open_library():
    """The sound library, or a stand-in that says why it cannot be opened: a library that
    will not open (a newer schema, a folder that cannot be created) must not stop the window."""
    from engines.store.library import ClipLibrary

    try:
        return ClipLibrary(paths.library_dir())
    except Exception as exc:  # noqa: BLE001 - one sentence; the traceback to the log
        text = user_sentence("Could not open the sound library", exc)
        log.warning("%s", text, exc_info=exc)
        return UnavailableLibrary(text)


class UnavailableLibrary:
    """Stands in for a library that cannot be opened: `notice` says why, and every library
    action raises a LibraryError with that same sentence (which the controllers show)."""

    read_only = True  # nothing can be kept; a real attribute, so the check is not a method

    def __init__(self, reason: str) -> None:
        self.notice = reason

    def close(self) -> None:
        pass

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)

        def refuse(*_args, **_kwargs):
            from engines.store.records import LibraryError

            raise LibraryError(self.notice)

        return refuse


def make_player():
    from app.playback import Player

    return Player()


@dataclass
class Audible:
    """What the player plays and the views show for a take: raw, or finished (A/B)."""

    audio: object  # int16 or float32 (N, 2) at 44.1 kHz
    display: dict = field(default_factory=dict)  # app.displaydata.prepare_display of it
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
        from app.thumbnails import ThumbnailCache

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
        from app.widgets.take_row_delegate import fill_take_row

        blocked = self.list.blockSignals(True)  # not a rename
        try:
            fill_take_row(item, take)
        finally:
            self.list.blockSignals(blocked)

    def _thumbnail(self, take: Take):
        from app.thumbnails import array_peaks

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


class GpuService(QObject):
    """The one GPU worker (on its own thread) and the batch, model loop or sound list it is
    running."""

    batchStarted = Signal(int)  # number of takes
    batchFinished = Signal()

    def __init__(self, make_generator: Callable[[], object], make_library: Callable[[], object],
                 *, start: bool = True, parent: QObject | None = None) -> None:
        super().__init__(parent)
        from app.displaydata import for_result

        self.worker = GpuWorker(make_generator, for_result, make_library)
        self.host = WorkerHost(self.worker, self) if start else None
        self.batch_id = 0
        self.running = False
        self.task_counter = 0
        self.loop_id = 0
        self.loop_running = False
        self.list_id = 0
        self.list_running = False
        self.worker.batchDone.connect(self._batch_done)
        self.worker.loopDone.connect(self._loop_done)
        self.worker.loopFailed.connect(self._loop_done)
        self.worker.listDone.connect(self._list_done)
        self.worker.listFailed.connect(self._list_done)

    @property
    def busy(self) -> bool:
        """Whether the worker is generating or making a loop (new work would wait for it)."""
        return self.running or self.loop_running or self.list_running

    def submit(self, requests: list[GenerationRequest], *, replace_id: int | None = None,
               parent_id: int | None = None, init_source: str | None = None,
               reroll_flagged: int = 0) -> None:
        self.batch_id += 1
        jobs = [Job(request=r, index=i, total=len(requests), label=r.prompt,
                    replace_id=replace_id, parent_id=parent_id, init_source=init_source,
                    reroll_flagged=reroll_flagged)
                for i, r in enumerate(requests)]
        self.running = True
        self.batchStarted.emit(len(requests))
        if self.host is None:
            raise RuntimeError("the GPU worker is not running")
        self.host.submit(Batch(self.batch_id, jobs))

    def cancel(self) -> bool:
        """Ask the running batch to stop: after the current step on ONNX Runtime, after the take
        under way on TensorRT (engines.backends.base); False if none is running."""
        if self.running and self.host is not None:
            self.host.cancel()
            return True
        return False

    def submit_loop(self, audio, request, seam_s: float, seed: int | None = None) -> int:
        """Queue a model loop of a take; its answer comes back as worker.loopDone/loopFailed
        with the returned id."""
        if self.host is None:
            raise RuntimeError("the GPU worker is not running")
        self.loop_id += 1
        self.loop_running = True
        self.host.submit_loop(LoopJob(self.loop_id, audio, request, seam_s, seed))
        return self.loop_id

    def _loop_done(self, job_id: int, _answer: object) -> None:
        if job_id == self.loop_id:
            self.loop_running = False

    def submit_list(self, fn: Callable) -> int:
        """Queue a sound list: fn(generator, cancel_event) runs on the worker thread; its answer
        comes back as worker.listDone/listFailed with the returned id."""
        if self.host is None:
            raise RuntimeError("the GPU worker is not running")
        self.list_id += 1
        self.list_running = True
        self.host.submit_list(ListJob(self.list_id, fn))
        return self.list_id

    def cancel_list(self) -> bool:
        """Ask the running sound list to stop after its current take; False if none runs."""
        if self.list_running and self.host is not None:
            self.host.cancel()
            return True
        return False

    def _list_done(self, job_id: int, _answer: object) -> None:
        if job_id == self.list_id:
            self.list_running = False

    def new_task(self, fn: Callable, label: str) -> Task:
        self.task_counter += 1
        return Task(self.task_counter, fn, label)

    def _batch_done(self, batch: int) -> None:
        if batch == self.batch_id:
            self.running = False
            self.batchFinished.emit()

    def stop(self) -> None:
        if self.host is not None:
            self.host.stop()
            self.host = None
