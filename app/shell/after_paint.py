"""What the window loads once it is on screen (issue 32: the window paints first).

The steps run one per turn of the event loop, from the turn after the window's first frame is
painted (MainWindow.firstPainted): the first frame waits for none of them, and between two steps
the window paints, takes clicks and keys. A step marked `on_screen` (offering the "Get models"
page, preparing the demo set) waits for a window on screen; the others also run on the event
loop's first turn in a window that is not shown by then (a test's, driven without a screen).
A step may wait for something (`after`, checked every POLL_MS meanwhile): a Preload
(app.common.preload), which imports modules on a thread of its own so that the GUI thread only
builds the widgets.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QWidget

log = logging.getLogger(__name__)

POLL_MS = 20
# Between two steps: a timer, not a posted call, and one frame long, so that what a step
# started (a dialog's first paint), timers already due and input run in between instead of
# adding up with the next step into one longer stall.
STEP_GAP_MS = 16


@dataclass(frozen=True)
class Step:
    run: Callable[[], object]
    on_screen: bool = False  # only for a window the user sees
    after: Callable[[], bool] | None = None  # runs once this holds (a Preload's `done`)


class StepsAfterPaint(QObject):
    """Runs `steps` in order after `window`'s first paint (`painted` is its firstPainted
    signal); `idle` is True when none is waiting."""

    finished = Signal()  # every step that may run so far has run

    def __init__(self, window: QWidget, painted: Signal, steps: Sequence[Step],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.window = window
        self._steps = list(steps)
        self._queued: set[int] = set()  # indexes of the steps queued or run
        self._queue: list[int] = []
        self._running = False
        self._stopped = False
        self._begun_on_screen = False
        self._first_turn_ran = False
        painted.connect(lambda: self._begin(on_screen=True))
        QTimer.singleShot(0, self, self._first_turn)

    @property
    def idle(self) -> bool:
        return not self._running

    @property
    def settled(self) -> bool:
        """Every step this window runs has run: all of them once it painted; a hidden window's
        once the event loop turned (tests wait for this before they look for what it loads)."""
        if self._running:
            return False
        return self._begun_on_screen or (self._first_turn_ran and not self.window.isVisible())

    def stop(self) -> None:
        """Nothing more runs (the window is closing)."""
        self._stopped = True
        self._queue.clear()

    def _first_turn(self) -> None:
        self._first_turn_ran = True
        if not self.window.isVisible():  # no paint to wait for: what a hidden window needs
            self._begin(on_screen=False)

    def _begin(self, on_screen: bool) -> None:
        self._begun_on_screen = self._begun_on_screen or on_screen
        fresh = [i for i, step in enumerate(self._steps)
                 if i not in self._queued and (on_screen or not step.on_screen)]
        self._queued.update(fresh)
        self._queue.extend(fresh)
        if fresh and not self._running and not self._stopped:
            self._running = True
            QTimer.singleShot(STEP_GAP_MS, self, self._next)

    def _next(self) -> None:
        if self._stopped or not self._queue:
            self._running = False
            return
        step = self._steps[self._queue[0]]
        if step.after is not None and not step.after():
            QTimer.singleShot(POLL_MS, self, self._next)  # the window turns meanwhile
            return
        self._queue.pop(0)
        try:
            step.run()
        except Exception:  # noqa: BLE001 - what the window loads early it loads again on use
            log.exception("a start-up step failed: %s", getattr(step.run, "__qualname__", step))
        if self._queue and not self._stopped:
            QTimer.singleShot(STEP_GAP_MS, self, self._next)
            return
        self._running = False
        self.finished.emit()
