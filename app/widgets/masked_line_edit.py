"""A line edit for a connection line that shows the line with only its password masked
(postgresql://designer:••••@host:5432/db), so a screenshot or a shared screen shows where it
points but not the secret; `set_revealed(True)` shows it whole.

While masked the user still edits the line: the secrets are put back around what was typed
(engines.secret_text.split_secrets). Pasting a new line replaces it; breaking a mask (a
backspace into the dots) drops the password so a new one can be typed in its place. `text()` is
what is on screen; `line()` is the real line.
"""

from __future__ import annotations

from PySide6.QtWidgets import QLineEdit, QWidget

from engines.secret_text import joined_secrets, split_secrets

SHOWN_MASK = "\u2022" * 4


class MaskedLineEdit(QLineEdit):
    def __init__(self, line: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._line = ""
        self._secrets: list[str] = []
        self._revealed = False
        self._showing = False  # our own setText, not the user's
        self.textChanged.connect(self._took)
        self.setText(line)

    def line(self) -> str:
        return self._line

    def revealed(self) -> bool:
        return self._revealed

    def set_revealed(self, revealed: bool) -> None:
        self._revealed = revealed
        self._show(len(self.text()) - self.cursorPosition())

    def _took(self, text: str) -> None:
        """Whatever changed the text (typing, a paste, setText): the real line from it."""
        if self._showing:
            return
        if self._revealed:
            self._line = text
        else:
            pieces = text.split(SHOWN_MASK)
            if len(pieces) == len(self._secrets) + 1:
                self._line = joined_secrets(pieces, self._secrets)
            else:  # a new line, or a mask the user broke to type that password anew
                self._line = text.replace(SHOWN_MASK[0], "")
        self._show(len(text) - self.cursorPosition())

    def _show(self, from_end: int) -> None:
        """Put the line on screen (masked unless revealed), the cursor as far from the end
        as it was, so typing goes on where it was."""
        pieces, self._secrets = split_secrets(self._line)
        shown = self._line if self._revealed else SHOWN_MASK.join(pieces)
        if shown != self.text():
            self._showing = True
            try:
                self.setText(shown)
            finally:
                self._showing = False
            self.setCursorPosition(max(0, len(shown) - from_end))
