"""The demo model set, made ready in the background when the window first starts where it is not
built yet (a new data folder, or after an update changed its recipe), so the first take does not
wait for it.

engines.demo builds the set in a process of its own; the pool thread here only waits for that
process, which leaves the GIL free: the window keeps painting. A take asked for meanwhile waits
for the same build (engines.demo holds one lock per process for it), never starts a second one.
The state shows at the right of the status bar (demoSetState): "Preparing the demo model set...",
then that it is ready.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QLabel, QStatusBar

from app.common.background_jobs import BackgroundJobs, JobOutcome
from app.common.expected_errors import CATALOG_ERRORS
from app.common.notifier import Notifier
from app.widgets.named import named
from engines import demo
from engines.catalog import Catalog

log = logging.getLogger(__name__)

PREPARING = "Preparing the demo model set\N{HORIZONTAL ELLIPSIS}"
READY = "The demo model set is ready."
READY_SHOWN_MS = 5000
# Waiting for the build at close: it writes whole files (temp then rename), so one cut short is
# only redone next time; this only spares the process an orphaned child.
CLOSE_WAIT_MS = 10000


class DemoSetState:
    """The label (demoSetState), added to `status_bar` hidden. Layout only."""

    def __init__(self, status_bar: QStatusBar) -> None:
        self.label = named(QLabel(), "demoSetState")
        status_bar.addPermanentWidget(self.label)
        self.label.hide()

    def show_text(self, text: str) -> None:
        self.label.setText(text)
        self.label.setVisible(bool(text))


class DemoPreparation(QObject):
    """`catalog()` is the window's catalog of what can run here (app.models.controller's)."""

    ready = Signal()  # the demo set was built: what lists the installed sets may look again

    def __init__(self, state: DemoSetState, notifier: Notifier, catalog: Callable[[], Catalog],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.notifier = notifier
        self.catalog = catalog
        self.jobs = BackgroundJobs(self, threads=1)
        self.jobs.done.connect(self._done)
        self.running = False
        self._closed = False

    def start(self) -> bool:
        """Build the demo set in the background when it is not built (or is out of date);
        True when a build started."""
        if self.running or self._closed:
            return False
        try:
            catalog = self.catalog()
            answer = catalog.resolve("demo")
            if not answer.runnable or answer.files is None:
                return False  # no ONNX Runtime here: the generation panel says why
            # <models root>/onnx/demo/<file>, as Catalog.prepare reads it
            if demo.is_current(answer.files.dit.parent.parent.parent):
                return False
        except CATALOG_ERRORS:  # a courtesy: the first take builds it otherwise
            log.warning("could not check the demo model set", exc_info=True)
            return False
        self.running = True
        self.state.show_text(PREPARING)
        self.jobs.submit("demo", lambda: catalog.prepare(answer))
        return True

    def _done(self, outcome: JobOutcome) -> None:
        self.running = False
        if self._closed:
            return
        if outcome.error is not None:
            self.state.show_text("")
            self.notifier.failed("The demo model set could not be prepared", outcome.error)
            return
        self.state.show_text(READY)
        QTimer.singleShot(READY_SHOWN_MS, self, self._hide_ready)
        self.ready.emit()

    def _hide_ready(self) -> None:
        if self.state.label.text() == READY:
            self.state.show_text("")

    def shutdown(self) -> None:
        self._closed = True
        self.jobs.shutdown(CLOSE_WAIT_MS)
