"""The Qt desktop application. `import app` stays cheap: Qt loads only when a window is built."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMainWindow


def build_main_window() -> QMainWindow:
    """The main window, built but not shown (see app.main_window)."""
    from app.main_window import build_main_window as build

    return build()


def run_gui(argv: list[str] | None = None) -> int:
    """Open the window and run the Qt event loop; returns the exit status (2 when the
    window cannot open: one sentence in a message box, never a traceback)."""
    from app.launch import run_gui as run

    return run(argv)
