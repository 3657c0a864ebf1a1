"""The Qt desktop application. `import app` stays cheap: Qt loads only when a window is built.

The window is grouped by feature: app.generate, app.takes, app.finish, app.library, app.models,
app.batch and app.export each hold their panel (a view class, layout only) and their
controller; app.common holds what they share (notifier, session, GPU worker, player, theme,
words) and app.shell the window that composes them (main window, menus, Studio, launch).
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMainWindow


def build_main_window() -> QMainWindow:
    """The main window, built but not shown (see app.shell.studio)."""
    return _shell().build_main_window()


def run_gui(argv: list[str] | None = None) -> int:
    """Open the window and run the Qt event loop; returns the exit status (2 when the
    window cannot open: one sentence in a message box, never a traceback)."""
    return _shell().run_gui(argv)


def _shell() -> ModuleType:
    """app.shell.launch (which holds both entry points), imported on first use."""
    # Imported here, not at the top: `import app` (main.py, the command line) must not load Qt.
    from app.shell import launch

    return launch
