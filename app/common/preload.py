"""Loading modules on a thread of their own, ahead of their first use on the GUI thread (the
Library page's, the Models dialog's: app.shell.after_paint runs these after the window's first
paint)."""

from __future__ import annotations

import importlib
import logging
import threading

log = logging.getLogger(__name__)


class Preload:
    """Imports `modules` on a daemon thread. Importing runs Python code that holds the GIL, but
    the interpreter hands it over every few milliseconds, so the window keeps painting; the
    GUI thread then finds the modules loaded. One that fails to import here fails again, and
    is reported, where it is used."""

    def __init__(self, *modules: str) -> None:
        self.modules = modules
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._load, name="preload", daemon=True)
            self._thread.start()

    def done(self) -> bool:
        return self._thread is not None and not self._thread.is_alive()

    def _load(self) -> None:
        for name in self.modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - loaded again, and reported, where it is used
                log.warning("could not preload %s", name, exc_info=True)

    @property
    def started(self) -> bool:
        return self._thread is not None
