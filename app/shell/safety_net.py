"""The last line of defence: an exception no handler caught.

PySide6 hands an exception raised in a slot (or a Qt virtual override) to `sys.excepthook`,
whose default prints a traceback on stderr and lets the event loop carry on. Here the traceback
goes to the log file instead and the user reads one sentence in the status bar. The hook must
never raise itself: a failing hook prints two tracebacks instead of none.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable

from PySide6.QtWidgets import QApplication

from app.common.notifier import Notifier, unexpected_sentence
from engines import paths

log = logging.getLogger(__name__)


def log_hint() -> str:
    """Where the details are, for the sentence; never raises."""
    try:
        where = paths.log_file() if hasattr(paths, "log_file") else None
        return f"the log file {where}" if where is not None else "the log file"
    except Exception:  # noqa: BLE001 - inside the safety net: never raise
        return "the log file"


class SafetyNet:
    """Installs itself as sys.excepthook (and threading.excepthook) until `uninstall()`."""

    def __init__(self, notifier: Notifier) -> None:
        self.notifier = notifier
        self.hint = log_hint()
        self._previous: tuple[Callable, Callable] | None = None

    def install(self) -> SafetyNet:
        if self._previous is None:
            self._previous = (sys.excepthook, threading.excepthook)
            sys.excepthook = self.excepthook
            threading.excepthook = self.thread_excepthook
        return self

    def uninstall(self) -> None:
        if self._previous is not None:
            sys.excepthook, threading.excepthook = self._previous
            self._previous = None

    def excepthook(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
                _quit()  # Ctrl+C in the terminal that started the window
                return
            log.error("An unexpected error reached the event loop; the window carries on",
                      exc_info=(exc_type, exc, tb))
            self.notifier.error(unexpected_sentence(exc, self.hint))
        except BaseException:  # noqa: BLE001, S110 - the hook must never raise
            pass

    def thread_excepthook(self, args) -> None:
        if args.exc_type is SystemExit:
            return
        self.excepthook(args.exc_type, args.exc_value, args.exc_traceback)


def _quit() -> None:
    app = QApplication.instance()
    if app is not None:
        app.quit()
