"""A publish's progress at the right of the status bar while takes go to the team library.
Layout only: app.team.publishing shows, fills and hides it."""

from __future__ import annotations

from PySide6.QtWidgets import QProgressBar, QStatusBar

from app.widgets.named import named


class PublishProgress:
    """The bar (teamPublishProgress), added to `status_bar` hidden."""

    def __init__(self, status_bar: QStatusBar) -> None:
        self.bar = named(QProgressBar(), "teamPublishProgress")
        self.bar.setMaximumWidth(220)
        self.bar.setFormat("%v/%m published")
        self.bar.setToolTip("Takes going to the team library")
        status_bar.addPermanentWidget(self.bar)
        self.bar.hide()

    def start(self, total: int) -> None:
        self.bar.setRange(0, max(total, 1))
        self.bar.setValue(0)
        self.bar.show()

    def step(self, done: int, total: int) -> None:
        self.bar.setRange(0, max(total, 1))
        self.bar.setValue(done)

    def finish(self) -> None:
        self.bar.hide()
