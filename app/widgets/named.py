"""Every control a test or an assistive tool drives has an object name (the contract listed in
app.shell.main_window's docstring); panels name them as they build them."""

from __future__ import annotations

from typing import TypeVar

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QWidget

W = TypeVar("W", bound=QWidget)


def named(widget: W, name: str, icon: QIcon | None = None) -> W:
    """`widget` with the object name `name` (and `icon`, for buttons), for building inline."""
    widget.setObjectName(name)
    if icon is not None:
        widget.setIcon(icon)
    return widget
