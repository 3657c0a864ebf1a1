"""Enter keeps the live take while live, wherever the focus is in the window (the prompt box
included, where it would otherwise start a new line nobody wants in a prompt)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QApplication, QWidget

ENTER_KEYS = (Qt.Key.Key_Return, Qt.Key.Key_Enter)
PLAIN = (Qt.KeyboardModifier.NoModifier, Qt.KeyboardModifier.KeypadModifier)


class EnterKeeps(QObject):
    """An application event filter: plain Enter in `window` calls `keep` while `active()`."""

    def __init__(self, window: Callable[[], QWidget], active: Callable[[], bool],
                 keep: Callable[[], None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._window, self._active, self._keep = window, active, keep
        QApplication.instance().installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt override
        # Every event of the application passes here: the isinstance test first, it is far
        # cheaper than reading the type (building a window sends thousands of events).
        if not isinstance(event, QKeyEvent):
            return False
        if (event.type() == QEvent.Type.KeyPress and event.key() in ENTER_KEYS
                and event.modifiers() in PLAIN and self._active()
                # the widget it is for (a key first reaches the window's QWindow, then it)
                and isinstance(obj, QWidget) and obj.window() is self._window()):
            self._keep()
            return True
        return False

    def shutdown(self) -> None:
        app = QApplication.instance()
        if app is not None:
            app.removeEventFilter(self)
