"""Ending a QThread when the window closes.

Qt aborts the whole process ("QThread: Destroyed while thread ... is still running") when a
QThread object is deleted while its thread runs, which is what happens when the window that
owns it goes away first. So a thread is asked to quit and waited for; one still busy after
that (a download blocked in a network read until its timeout) is detached from its owner and
kept until it finishes, so nothing deletes it while it runs.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QThread

log = logging.getLogger(__name__)

STOP_WAIT_MS = 30000

_still_running: set[QThread] = set()  # threads detached by stop_thread, until they finish


def stop_thread(thread: QThread, timeout_ms: int = STOP_WAIT_MS) -> bool:
    """Quit `thread`'s event loop and wait for it; True when it has ended. Whatever it runs
    must have been told to stop first (a cancel flag): quitting only ends the event loop once
    the current slot returns."""
    if thread.isFinished() or not thread.isRunning():
        return True
    thread.quit()
    if thread.wait(timeout_ms):
        return True
    log.error("the thread %r did not stop within %d ms; it is left to finish on its own",
              thread.objectName(), timeout_ms)
    thread.setParent(None)
    _still_running.add(thread)
    thread.finished.connect(lambda: _still_running.discard(thread))
    return False
