"""Waveform thumbnails for the takes list and the library table, drawn off the GUI thread.

A view asks for a thumbnail while it paints a row: `ThumbnailCache.pixmap(key, size, peaks)`
answers at once with the pixmap it has, or None after queueing the work. A pool thread reads
the peaks (min/max per pixel column, as mne-qt-browser's peak mode) and paints them into a
QImage (images may be made on any thread, pixmaps only on the GUI thread); the GUI thread turns
it into a pixmap, keeps it and emits `ready(key)` so the view repaints that row.

So only rows that are painted cost anything, and a library of thousands of takes never reads
more than the few files on screen. Waiting requests are served newest first (what the user is
looking at now) and at most QUEUE_LIMIT of them are kept: rows scrolled past long ago are
dropped, and asked for again if they are painted again.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

import numpy as np
from PySide6.QtCore import QObject, QSize, Signal
from PySide6.QtGui import QImage, QPixmap

from app.common.background_jobs import BackgroundJobs, JobOutcome
from engines.sound_import.peaks import array_peaks
from engines.sound_import.peaks import file_peaks as engine_file_peaks

__all__ = ["ThumbnailCache", "array_peaks", "draw_peaks", "file_peaks"]

log = logging.getLogger(__name__)

THREADS = 1  # reading a few files at a time is plenty; the GUI and finishing need the rest
QUEUE_LIMIT = 64  # waiting requests kept (about two screens of rows)
# A new take's thumbnail waits until the take is drawn and starts playing: computed at once,
# its peaks compete with the GUI thread for the GIL (bench/bench_gui_stall.py).
START_DELAY_MS = 200
CACHE_LIMIT = 2000  # pixmaps kept, least recently shown dropped first
READ_PER_COLUMN = 2048  # frames read per pixel column of a long file (not every frame)
COLOUR = (90, 170, 235, 255)  # RGBA of the trace

Peaks = Callable[[int], np.ndarray]
"""peaks(columns) -> float32 (2, columns): per column the lowest and highest sample in -1..1."""


def file_peaks(path: str | os.PathLike[str], columns: int,
               per_column: int = READ_PER_COLUMN) -> np.ndarray:
    """Min/max per column of an audio file, `per_column` frames read per column of a long one
    (engines.sound_import.peaks, which the library import keeps peaks with)."""
    return engine_file_peaks(path, columns, per_column)


def draw_peaks(peaks: np.ndarray, width: int, height: int) -> QImage:
    """The peaks as a filled trace on a transparent image (at least one pixel per column, so
    silence still shows as a line)."""
    half = (height - 1) / 2.0
    lows = np.clip(peaks[0, :width], -1.0, 1.0)
    highs = np.clip(peaks[1, :width], -1.0, 1.0)
    top = np.floor(half - highs * half).astype(np.int32)
    bottom = np.ceil(half - lows * half).astype(np.int32)
    rows = np.arange(height, dtype=np.int32)[:, None]
    pixels = np.zeros((height, width, 4), dtype=np.uint8)
    pixels[(rows >= top) & (rows <= bottom)] = COLOUR
    image = QImage(pixels.tobytes(), width, height, width * 4, QImage.Format.Format_RGBA8888)
    return image.copy()  # owns its pixels once the bytes above are gone


def _thumbnail(peaks: Peaks, width: int, height: int) -> tuple[QImage, int]:
    """Runs on a pool thread: the image, and the thread that made it (for the tests)."""
    return draw_peaks(peaks(width), width, height), threading.get_ident()


class ThumbnailCache(QObject):
    """Thumbnails by (what they show, size); see the module text."""

    ready = Signal(object)  # the key (as the caller gave it) whose pixmap just arrived

    def __init__(self, parent: QObject | None = None, *, threads: int = THREADS,
                 limit: int = CACHE_LIMIT) -> None:
        super().__init__(parent)
        self._threads = threads
        self._limit = limit
        self._jobs = BackgroundJobs(self, threads)
        self._jobs.done.connect(self._done)
        self._pixmaps: OrderedDict[tuple, QPixmap] = OrderedDict()
        self._waiting: OrderedDict[tuple, Callable[[], object]] = OrderedDict()
        self._running: set[tuple] = set()
        self._failed: set[tuple] = set()
        self.requested = 0  # thumbnails queued so far (each key once)
        self.worker_threads: set[int] = set()  # threads that drew them

    def pixmap(self, key: Hashable, size: QSize, peaks: Peaks) -> QPixmap | None:
        """The thumbnail of `key` at `size`, or None while it is being made (then `ready`
        follows) or when it cannot be made (a missing file: asked once, not again)."""
        width, height = size.width(), size.height()
        full = (key, width, height)
        found = self._pixmaps.get(full)
        if found is not None:
            self._pixmaps.move_to_end(full)
            return found
        if full in self._failed or full in self._running:
            return None
        if full in self._waiting:
            self._waiting.move_to_end(full)  # painted again: wanted sooner
            return None
        if width <= 0 or height <= 0:
            return None
        self.requested += 1
        self._waiting[full] = lambda: _thumbnail(peaks, width, height)
        while len(self._waiting) > QUEUE_LIMIT:
            self._waiting.popitem(last=False)
        self._start_waiting()
        return None

    def _start_waiting(self) -> None:
        while self._waiting and len(self._running) < self._threads:
            full, work = self._waiting.popitem(last=True)
            self._running.add(full)
            self._jobs.submit(full, work, after_ms=START_DELAY_MS)

    def _done(self, outcome: JobOutcome) -> None:
        full = outcome.key
        if full not in self._running:
            return  # forgotten meanwhile (clear)
        self._running.discard(full)
        if outcome.error is not None:
            log.info("no thumbnail for %r: %s", full[0], outcome.error)
            self._failed.add(full)
        else:
            image, thread = outcome.value
            self.worker_threads.add(thread)
            self._pixmaps[full] = QPixmap.fromImage(image)
            while len(self._pixmaps) > self._limit:
                self._pixmaps.popitem(last=False)
        self._start_waiting()
        if outcome.error is None:
            self.ready.emit(full[0])

    def idle(self) -> bool:
        """Nothing waiting or being drawn."""
        return not self._waiting and not self._running

    def clear(self) -> None:
        """Forget every thumbnail and waiting request (the views ask again as they paint)."""
        self._pixmaps.clear()
        self._waiting.clear()
        self._running.clear()
        self._failed.clear()

    def shutdown(self) -> None:
        self._waiting.clear()
        self._jobs.shutdown()
