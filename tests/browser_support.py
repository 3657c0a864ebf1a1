"""The window as the library-browser tests (issue 22) drive it: a data folder of the test's own
(a returning user's, so the first-run Models page stays shut), shown at a given size. Each test
file makes its fixtures of `fresh_home` and `open_window`."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QSize
from PySide6.QtWidgets import QApplication

from tests.gui_support import child

FULL_HD = (1920, 1080)


def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from app.models.controller import FIRST_RUN_KEY
    from engines.settings import update_settings

    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("SA3_STUDIO_HOME", str(folder))
    update_settings(folder, {FIRST_RUN_KEY: True})
    return folder


def open_window(qtbot):
    """The real window (shut down by the caller: `win.studio.shutdown()`)."""
    from app import build_main_window

    win = build_main_window()
    qtbot.addWidget(win)
    child(win, "autoplayCheck").setChecked(False)
    # The Library page is built after the window's first paint (app.shell.after_paint), or when
    # something asks for it: here, so that tests find its widgets by name from the start.
    win.studio.library_page()
    return win


def show_at(qtbot, win, size) -> None:
    """The window on screen at `size` ("min": the smallest it can be), laid out. The minimum
    is taken again once the window is laid out on screen: showing it can change what it can
    shrink to (text measured in the screen's fonts), and a window never shrinks by itself."""
    win.resize(win.minimumSizeHint() if size == "min" else QSize(*size))
    if not win.isVisible():
        win.show()
        qtbot.waitExposed(win)
    settle()
    if size == "min":
        win.resize(win.minimumSizeHint())
        settle()


def settle() -> None:
    for _ in range(5):  # deferred layout requests
        QApplication.processEvents()
