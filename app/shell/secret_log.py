"""The window's log never holds a team connection line's password: whatever quotes one - a
message, its arguments, an exception's text in a traceback - is masked on its way into every
handler (engines.team.connection.masked). The sentences the window shows are masked already
(app.common.notifier); this covers what only the log file sees."""

from __future__ import annotations

import logging

from engines.team.connection import masked


class MaskSecrets(logging.Filter):
    """Masks passwords in a record's message and traceback; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
            clean = masked(message)
            if clean != message:
                record.msg, record.args = clean, None
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            if record.exc_text:
                record.exc_text = masked(record.exc_text)
        except (TypeError, ValueError, KeyError, IndexError, AttributeError):
            pass  # a record whose message cannot be formatted is logged as it is
        return True


def mask_secrets_in_log(root: logging.Logger | None = None) -> None:
    """Put the filter on every handler of `root` (the root logger) that lacks it."""
    for handler in (root or logging.getLogger()).handlers:
        if not any(isinstance(f, MaskSecrets) for f in handler.filters):
            handler.addFilter(MaskSecrets())
