"""Watching imported folders: rescan them when something in them changes, until told to stop.

With the `watchdog` package (inotify, FSEvents, ReadDirectoryChangesW) a change is heard at
once and the rescan waits until the folder has been quiet for SETTLE_S (a copy of many files
is one rescan, not hundreds). Without it the folders are rescanned every POLL_S seconds: a
rescan that finds nothing changed only lists and stats the files (about a second for 10,000,
see bench/bench_library_import.py), so polling costs little and needs nothing installed.

`on_change` runs on the calling thread (the library's connection belongs to it)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from engines.lazy import is_installed, lazy_import

log = logging.getLogger(__name__)

SETTLE_S = 1.0
POLL_S = 10.0
_TICK_S = 0.2

watchdog_observers = lazy_import("watchdog.observers")
watchdog_events = lazy_import("watchdog.events")


class _Changes:
    """Set from watchdog's thread, read by the waiting one."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.last: float | None = None

    def heard(self, _event: object = None) -> None:
        with self.lock:
            self.last = time.monotonic()

    def settled(self) -> bool:
        with self.lock:
            if self.last is None or time.monotonic() - self.last < SETTLE_S:
                return False
            self.last = None
            return True


def watching_how() -> str:
    """"events" (watchdog is installed) or "polling"."""
    return "events" if is_installed(watchdog_observers) else "polling"


def watch_folders(roots: Sequence[str], on_change: Callable[[], None],
                  stop: threading.Event, *, poll_s: float = POLL_S) -> None:
    """Call `on_change()` after each change under `roots` settles (or every `poll_s` without
    watchdog), until `stop` is set. Ctrl+C (KeyboardInterrupt) ends it too, after cleanup."""
    if watching_how() == "polling":
        while not stop.wait(poll_s):
            on_change()
        return
    changes = _Changes()
    handler = watchdog_events.FileSystemEventHandler()
    handler.on_any_event = changes.heard  # every create, modify, move and delete
    observer = watchdog_observers.Observer()
    for root in roots:
        try:
            observer.schedule(handler, root, recursive=True)
        except OSError as err:  # gone meanwhile: the next rescan reports it
            log.info("Cannot watch %s: %s", root, err)
    observer.start()
    try:
        while not stop.wait(_TICK_S):
            if changes.settled():
                on_change()
    finally:
        observer.stop()
        observer.join(timeout=5)
