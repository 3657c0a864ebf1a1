"""CPU work off the GUI thread: finishing chains, crossfade loops, loudness figures.

A small QThreadPool runs plain functions; each answer comes back on the GUI thread by a queued
signal, tagged with the key it was submitted with, so the controller can drop answers that
are stale (the take or its chain changed meanwhile). GPU work never comes here: it belongs to
the one GPU worker (app.common.worker).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QObject, QRunnable, QThreadPool, QTimer, Signal

log = logging.getLogger(__name__)

THREADS = 2  # a finishing chain already runs its two channels side by side


@dataclass
class JobOutcome:
    """What came back for one submitted function: its value, or the exception it raised."""

    key: object
    value: object = None
    error: BaseException | None = None


class _Carrier(QObject):
    """Lives on the GUI thread; emitting from a pool thread queues the call to it."""

    done = Signal(object)


class _Job(QRunnable):
    def __init__(self, key: object, fn: Callable[[], object], carrier: _Carrier) -> None:
        super().__init__()
        self.key = key
        self.fn = fn
        self.carrier = carrier

    def run(self) -> None:
        try:
            outcome = JobOutcome(self.key, value=self.fn())
        except BaseException as exc:  # noqa: BLE001 - handed to the GUI thread as one sentence
            log.info("background job %r failed", self.key, exc_info=True)
            outcome = JobOutcome(self.key, error=exc)
        try:
            self.carrier.done.emit(outcome)
        except RuntimeError:  # the window closed meanwhile: nobody is waiting
            log.debug("background job %r finished after shutdown", self.key)


class BackgroundJobs(QObject):
    done = Signal(object)  # JobOutcome, on the GUI thread

    def __init__(self, parent: QObject | None = None, threads: int = THREADS) -> None:
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(threads)
        self._carrier = _Carrier(self)
        self._carrier.done.connect(self._deliver)
        self.submitted = 0
        self._closed = False

    def submit(self, key: object, fn: Callable[[], object], *, after_ms: int = 0) -> None:
        """Run `fn` on the pool; `after_ms` holds it back so work that can wait (a readout, a
        thumbnail) does not compete for the GIL while the GUI thread draws a new take. Nothing
        starts once `shutdown` was called."""
        if self._closed:
            return
        self.submitted += 1
        job = _Job(key, fn, self._carrier)
        if after_ms <= 0:
            self.pool.start(job)
            return
        QTimer.singleShot(after_ms, self, lambda: None if self._closed else self.pool.start(job))

    def _deliver(self, outcome: JobOutcome) -> None:
        # an answer queued before shutdown arrives after it, when what it would update (the
        # library, the window) may be closed: nobody is waiting for it any more
        if not self._closed:
            self.done.emit(outcome)

    def idle(self) -> bool:
        return self.pool.activeThreadCount() == 0

    def shutdown(self, timeout_ms: int = 10000) -> None:
        """Drop queued jobs and wait for running ones (each takes milliseconds to seconds);
        no answer is delivered afterwards."""
        self._closed = True
        self.pool.clear()
        if not self.pool.waitForDone(timeout_ms):
            log.error("background jobs did not finish within %d ms", timeout_ms)
