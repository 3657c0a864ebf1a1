"""A take's facts as a small two-column text: captions, then words a designer can select and
copy; the "Files" row is a link that opens the folder holding the file (the system's file
browser). Layout only: what the rows say comes from app.library.inspector_facts."""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QLabel, QSizePolicy

LINKED_CAPTION = "Files"
MISSING = " (missing)"
FOLDER_PARTS = 3  # the folder's last parts shown (the whole path is the tooltip)


def short_folder(folder: Path) -> str:
    """"…/home/library/audio" for a deep folder, the folder itself for a short one."""
    parts = folder.parts
    if len(parts) <= FOLDER_PARTS + 1:
        return str(folder)
    return str(Path("…", *parts[-FOLDER_PARTS:]))
EMPTY_TEXT = "Select a take to see its facts."


class FactsView(QLabel):
    """Rows of (caption, words); `show_rows([])` says nothing is selected."""

    def __init__(self) -> None:
        super().__init__()
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.RichText)
        # selectable like text, and the link clickable (it opens the folder)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        self.setOpenExternalLinks(True)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        self.rows: list[tuple[str, str]] = []
        self.show_rows([])

    def show_rows(self, rows: list[tuple[str, str]]) -> None:
        self.rows = list(rows)
        if not rows:
            self.setText(f"<i>{html.escape(EMPTY_TEXT)}</i>")
            self.setToolTip("")
            return
        dim = self.palette().color(QPalette.ColorRole.PlaceholderText).name()
        lines = [f"<tr><td style='padding-right:8px; color:{dim}'>"
                 f"{html.escape(caption)}</td><td>{self._cell(caption, words)}</td></tr>"
                 for caption, words in rows]
        self.setText("<table cellspacing='0' cellpadding='1'>" + "".join(lines) + "</table>")
        where = dict(rows).get(LINKED_CAPTION)
        self.setToolTip(f"{where}\nClick the file's name to open its folder." if where else "")

    @staticmethod
    def _cell(caption: str, words: str) -> str:
        if caption != LINKED_CAPTION:
            return html.escape(words)
        missing = words.endswith(MISSING)
        path = Path(words.removesuffix(MISSING))
        url = QUrl.fromLocalFile(str(path.parent)).toString()
        # the file's name opens its folder; the folder's last parts say where that is
        return (f"<a href='{html.escape(url, quote=True)}'>{html.escape(path.name)}</a>"
                f"{html.escape(MISSING if missing else '')}<br>in "
                f"{html.escape(short_folder(path.parent))}")

    def plain_text(self) -> str:
        """The rows as lines of text ("Caption: words"), as a screen reader would read them."""
        return "\n".join(f"{caption}: {words}" for caption, words in self.rows)
