"""A sound list's progress and its Cancel, at the right of the status bar while it renders.
Layout only: app.batch.controller shows, fills and hides them."""

from __future__ import annotations

from PySide6.QtWidgets import QProgressBar, QPushButton, QStatusBar, QWidget

from app.widgets.named import named


class ListProgress:
    """The two widgets, added to `status_bar` hidden."""

    def __init__(self, status_bar: QStatusBar) -> None:
        self.bar = named(QProgressBar(), "renderListProgress")
        self.bar.setMaximumWidth(220)
        self.bar.setFormat("%v/%m takes")
        self.cancel_button = named(QPushButton("Cancel list"), "renderListCancelButton")
        self.cancel_button.setToolTip("Stop after the current take; render the list again to "
                                      "continue")
        for widget in (self.bar, self.cancel_button):
            status_bar.addPermanentWidget(widget)
            widget.hide()

    def window(self) -> QWidget:
        """The window the status bar is in (the parent of the list's dialog)."""
        return self.bar.window()
