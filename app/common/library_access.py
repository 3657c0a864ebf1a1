"""The sound library as the window opens it: the library, or a stand-in that says why it
cannot be opened (a newer schema, a folder that cannot be created must not stop the window)."""

from __future__ import annotations

import logging

from app.common.expected_errors import LIBRARY_ERRORS
from app.common.notifier import user_sentence
from engines import paths
from engines.store.library import ClipLibrary
from engines.store.records import LibraryError

log = logging.getLogger(__name__)


def open_library() -> ClipLibrary | UnavailableLibrary:
    """The sound library, or a stand-in that says why it cannot be opened: a library that
    will not open (a newer schema, a folder that cannot be created) must not stop the window."""
    try:
        return ClipLibrary(paths.library_dir())
    except LIBRARY_ERRORS as exc:  # one sentence; the traceback to the log
        text = user_sentence("Could not open the sound library", exc)
        log.warning("%s", text, exc_info=exc)
        return UnavailableLibrary(text)


class UnavailableLibrary:
    """Stands in for a library that cannot be opened: `notice` says why, and every library
    action raises a LibraryError with that same sentence (which the controllers show)."""

    read_only = True  # nothing can be kept; a real attribute, so the check is not a method

    def __init__(self, reason: str) -> None:
        self.notice = reason

    def close(self) -> None:
        pass

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)

        def refuse(*_args, **_kwargs):
            raise LibraryError(self.notice)

        return refuse
