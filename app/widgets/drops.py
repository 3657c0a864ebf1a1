"""What a drag from a file manager carries: the one reading of dropped files, shared by every
widget that takes a dropped sound (the waveform's init audio, the library's search by sound)."""

from __future__ import annotations

from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent


def dropped_file(event: QDragEnterEvent | QDragMoveEvent | QDropEvent) -> str | None:
    """The first local file a drag carries, or None."""
    mime = event.mimeData()
    if mime is None or not mime.hasUrls():
        return None
    for url in mime.urls():
        if url.isLocalFile() and url.toLocalFile():
            return url.toLocalFile()
    return None
