"""The window closes its library last; Library page code that would still run afterwards (the
filters' lists queued for after the first paint, a loudness reading that finished during
shutdown, the importer's late word) stops instead of reading a closed library."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

from PySide6.QtWidgets import QApplication

from app.common.background_jobs import BackgroundJobs


def test_an_answer_queued_before_shutdown_is_not_delivered_after(qtbot):
    jobs = BackgroundJobs(threads=1)
    got = []
    jobs.done.connect(got.append)
    finished = threading.Event()
    jobs.submit("reading", finished.set)
    assert finished.wait(10)
    jobs.pool.waitForDone(10_000)  # its answer is queued to the GUI thread, not yet delivered
    jobs.shutdown()
    QApplication.processEvents()
    assert got == []


def test_an_answer_before_shutdown_is_delivered(qtbot):
    jobs = BackgroundJobs(threads=1)
    got = []
    jobs.done.connect(got.append)
    jobs.submit("reading", lambda: 42)
    qtbot.waitUntil(lambda: bool(got), timeout=10_000)
    assert got[0].value == 42
    jobs.shutdown()


def test_the_library_page_does_nothing_once_the_window_closed(qtbot, home: Path,
                                                              models: Path) -> None:
    from app import build_main_window

    shutil.copytree(models, home / "models", dirs_exist_ok=True)
    win = build_main_window()
    qtbot.addWidget(win)
    win.show_library()  # built now; its filters' lists wait for the event loop to turn
    controller = win.studio.library_controller
    win.studio.shutdown()  # closes the library last
    controller.refresh_library()  # the importer's or the team's late word
    win.studio.session.list.clear()  # the session tab's facts hear the list change
    QApplication.processEvents()  # (qtbot fails the test on any exception raised here)
    assert win.studio.library._db.conn is None  # it really was closed
