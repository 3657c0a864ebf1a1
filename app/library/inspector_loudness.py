"""Loudness and true peak of the selected take, measured off the GUI thread (as finishing
measures them: app.finish.render.figures) and kept, so going back to a take shows its figures
at once. Only the take the user settles on is measured: Up/Down through fifty rows measures the
last one, not fifty."""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path

import numpy as np
import soundfile as sf
from PySide6.QtCore import QObject, QTimer, Signal

from app.common.background_jobs import BackgroundJobs, JobOutcome
from app.finish.render import Figures, figures
from engines.store.wavmeta import sf_name

log = logging.getLogger(__name__)

SETTLE_MS = 150  # the selection must rest this long before its audio is read and measured
KEPT = 256  # figures kept (a few bytes each)

Read = Callable[[], tuple[np.ndarray, int]]  # () -> (float audio (N, channels), its rate)


def file_reader(path: Path) -> Read:
    """Reads an audio file as float (on the pool thread that measures it)."""
    def read() -> tuple[np.ndarray, int]:
        audio, rate = sf.read(sf_name(path), dtype="float32", always_2d=True)
        return audio, int(rate)
    return read


def _measure(read: Read) -> Figures:
    audio, rate = read()
    return figures(audio, rate)


class LoudnessReadings(QObject):
    measured = Signal(object)  # the key whose figures just arrived
    stopped = Signal()  # shut down: the window is going away, the library closes next

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._jobs = BackgroundJobs(self, threads=1)
        self._jobs.done.connect(self._done)
        self._kept: OrderedDict[Hashable, Figures] = OrderedDict()
        self._failed: set[Hashable] = set()
        self._next: tuple[Hashable, Read] | None = None
        self._settle = QTimer(self, singleShot=True, interval=SETTLE_MS)
        self._settle.timeout.connect(self._start)

    def figures(self, key: Hashable) -> Figures | None:
        """The figures of `key` if measured (None: not yet, or they could not be)."""
        return self._kept.get(key)

    def unreadable(self, key: Hashable) -> bool:
        return key in self._failed

    def request(self, key: Hashable, read: Read) -> None:
        """Measure `key` once the selection rests (a newer request replaces this one)."""
        if key in self._kept or key in self._failed:
            return
        self._next = (key, read)
        self._settle.start()

    def _start(self) -> None:
        if self._next is not None:
            key, read = self._next
            self._next = None
            self._jobs.submit(key, lambda: _measure(read))

    def _done(self, outcome: JobOutcome) -> None:
        if outcome.error is not None:  # a file gone or unreadable: the facts say so
            log.info("could not measure %r: %s", outcome.key, outcome.error)
            self._failed.add(outcome.key)
        else:
            self._kept[outcome.key] = outcome.value
            while len(self._kept) > KEPT:
                self._kept.popitem(last=False)
        self.measured.emit(outcome.key)

    def shutdown(self) -> None:
        self._settle.stop()
        self._next = None
        self._jobs.shutdown()
        self.stopped.emit()
