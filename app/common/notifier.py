"""What the user reads: one sentence at a time in the status bar, never a traceback.

`Notifier.failed(what, err)` is what every controller's error handler calls: a StudioError
already is a sentence; anything else (an OSError, sqlite3, libsndfile) is put into words by
engines.error_sentences. The traceback goes to the log file. Nothing here raises: it runs inside
error handlers, and a handler that raises turns a sentence back into a traceback.

Every sentence enters the window through `Notifier.status` or `Notifier.notices`, and both pass
it through `for_window` (app.common.remedy_words) there: an engine sentence's remedies are
worded as the window's controls. `user_sentence` does too, since what it makes is shown
elsewhere as well (the Models dialog, the message box when the window cannot open). Neither
ever shows or logs a connection line's password (engines.secret_text.masked).
"""

from __future__ import annotations

import logging
import time
from collections import deque

from PySide6.QtCore import QObject, Signal

from app.common.remedy_words import MAIN, for_window
from engines import settings as stored_settings
from engines.error_sentences import printable, reason, sentence
from engines.errors import StudioError
from engines.secret_text import masked

log = logging.getLogger(__name__)

HISTORY = 200


def user_sentence(what: str, err: BaseException, here: str = MAIN) -> str:
    """The one sentence a user reads about `err`, shown `here` (app.common.remedy_words: MAIN or
    MODELS); `what` says what could not be done ("Could not save the tags"), and is used only
    when `err` is not already a sentence."""
    try:
        if isinstance(err, StudioError) and str(err).strip():
            return masked(for_window(err, here))  # also what the startup message box shows
        return masked(for_window(sentence(what, err), here))
    except Exception:  # noqa: BLE001 - never raise from an error path
        return f"{what}: an unexpected {type(err).__name__} occurred; try again."


def unexpected_sentence(err: BaseException, log_hint: str) -> str:
    """For a failure no handler expected (the safety net in app.shell.safety_net)."""
    try:
        if isinstance(err, StudioError) and str(err).strip():
            return str(err)
        happened, _ = reason(err)
        return (f"Something went wrong unexpectedly ({happened}); the window carries on, and "
                f"the details are in {log_hint}.")
    except Exception:  # noqa: BLE001 - the safety net's own sentence: never raise
        return "Something went wrong unexpectedly; the details are in the log file."


def one_line(text: object) -> str:
    """Control characters (a newline in a file name, ESC) never reach the status bar."""
    try:
        return printable(text).strip()
    except Exception:  # noqa: BLE001 - any object's str() may raise; never here
        return repr(text)


def window_line(text: object) -> str:
    """What the status bar shows for `text`: one line, in the window's words, with the
    password of any connection line it quotes masked (engines.secret_text.masked)."""
    return one_line(masked(for_window(text)))


# How long a sentence stays before a standing notice may replace it.
NOTICE_QUIET_S = 5.0


class Notifier(QObject):
    """One sentence at a time for the user; the window shows `shown` in its status bar.

    `history` keeps what was shown (newest last) for tests and for anyone asking later.
    Emitting is safe from any thread: the status bar receives it on the GUI thread.
    """

    shown = Signal(str, int)  # text, timeout in ms (0: until replaced)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.history: deque[str] = deque(maxlen=HISTORY)
        self._last_shown_at = float("-inf")

    def status(self, text: str, timeout_ms: int = 0) -> None:
        line = window_line(text)
        self.history.append(line)
        self._last_shown_at = time.monotonic()
        self.shown.emit(line, timeout_ms)

    def greet(self, text: str) -> None:
        """A line that only fills the empty status bar ("Ready..."): a standing notice (no
        audio device) replaces it at once, as it would replace silence."""
        self.status(text)
        self._last_shown_at = float("-inf")

    def notice(self, text: str) -> None:
        """A standing fact (no audio device) that must not push aside a sentence the user has
        just been shown (an error, a result): shown only when the status bar has been quiet for
        NOTICE_QUIET_S, else kept in `history` (the control it concerns says it too)."""
        if time.monotonic() - self._last_shown_at >= NOTICE_QUIET_S:
            self.status(text)
        else:
            self.history.append(window_line(text))

    def error(self, text: str) -> None:
        try:
            log.info("shown to the user: %s", masked(text))
            self.status(text)
        except Exception:  # noqa: BLE001 - a deleted status bar must not raise here
            log.warning("could not show a message", exc_info=True)

    def failed(self, what: str, err: BaseException) -> str:
        """Show `err` as one sentence (see `user_sentence`), and return it as shown; the
        traceback goes to the log."""
        text = user_sentence(what, err)
        try:
            if isinstance(err, StudioError):
                log.info("%s", text, exc_info=err)
            else:
                log.warning("%s", text, exc_info=err)
        except Exception:  # noqa: BLE001 - logging must not stop the sentence
            pass
        self.error(text)
        return text

    def notices(self, texts: list[str]) -> None:
        """Several sentences at once (startup notices): each is kept in `history`, and the
        status bar shows them together so none hides another."""
        try:
            lines = [window_line(t) for t in texts if t]
            if not lines:
                return
            for line in lines:
                log.info("shown to the user: %s", line)
            self.history.extend(lines)
            self._last_shown_at = time.monotonic()  # a notice must not hide these at once
            self.shown.emit("  ".join(lines), 0)
        except Exception:  # noqa: BLE001 - a deleted status bar must not raise here
            log.warning("could not show the notices", exc_info=True)


def take_settings_notices() -> list[str]:
    """Sentences engines.settings queued (a damaged settings.json set aside); each is handed
    out once, so whoever takes them must show them."""
    try:
        return list(stored_settings.take_notices())
    except Exception:  # noqa: BLE001 - runs in error paths: never raise
        log.warning("could not collect the settings notices", exc_info=True)
        return []


def show_settings_notices(notifier: Notifier) -> list[str]:
    """Show the queued settings notices, if any, in the status bar."""
    found = take_settings_notices()
    notifier.notices(found)
    return found
