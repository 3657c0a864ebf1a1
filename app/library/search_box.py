"""The library's search box: words search the prompts, tags and notes; an audio file dropped on
it searches by sound (`fileDropped`, which the library controller answers with the takes that
sound most like the file). A drop that is not a local file is text, as in any line edit."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent
from PySide6.QtWidgets import QLineEdit

from app.widgets.drops import dropped_file


class SoundSearchEdit(QLineEdit):
    fileDropped = Signal(str)  # a local file was dropped: search by its sound

    def __init__(self) -> None:
        super().__init__()
        self.setAcceptDrops(True)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 - Qt override
        if dropped_file(event):
            event.acceptProposedAction()
        else:
            super().dragEnterEvent(event)

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:  # noqa: N802 - Qt override
        if dropped_file(event):
            event.acceptProposedAction()
        else:
            super().dragMoveEvent(event)

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt override
        path = dropped_file(event)
        if path is None:
            super().dropEvent(event)
            return
        event.acceptProposedAction()
        # Whether it is audio that can be read is the controller's to find out and say.
        self.fileDropped.emit(path)
