"""Finding the window's widgets by object name (the `window` fixture is in conftest)."""

from __future__ import annotations


def child(win, name: str):
    widget = win.findChild(object, name)
    assert widget is not None, name
    return widget
