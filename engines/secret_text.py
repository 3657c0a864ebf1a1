"""Passwords out of text: a team connection line (a PostgreSQL URI or libpq key=value words),
or a sentence or traceback quoting one, with every secret in it replaced by ****.

It sits low (standard library only) because the log setup in engines.paths masks every record
with it, for the command line and the window alike, and the log must not need psycopg or the
team package to start.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote

MASK = "****"
# libpq's parameters that hold a secret (psycopg.pq.Conninfo.get_defaults() lists them all)
SECRET_PARAMETERS = frozenset({"password", "sslpassword", "scram_client_key",
                               "scram_server_key", "oauth_client_secret"})
# scheme://user:SECRET@host: the secret runs to the last @ of the line (as urlsplit reads it)
_URI_SECRET = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^:@/?#\s]*):(.*)@", re.DOTALL)
# scheme://user:SECRET/db with no @ at all: a password libpq would take for a port
_URI_NO_AT = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^:@/?#\s]*):([^@/?#\s]*[^\d,@/?#\s][^@/?#\s]*)"
                        r"(?=[/?#\s]|$)")
_KEYWORD_SECRET = re.compile(r"(?i)\b(" + "|".join(sorted(SECRET_PARAMETERS)) +
                             r")(\s*=\s*)('(?:[^'\\]|\\.)*'?|\S*)")


def masked(text: str, mask: str = MASK) -> str:
    """`text` - a connection line, a libpq key=value string, or a sentence quoting one - with
    every password in it replaced by `mask`: the only form in which a line is ever shown or
    logged."""
    text = str(text)
    if "://" in text:
        text = _URI_SECRET.sub(lambda m: f"{m.group(1)}:{mask}@", text)
        text = _URI_NO_AT.sub(lambda m: _masked_port(m, mask), text)
        text = re.sub(r"([?&])([^=&#\s]*)=([^&#\s\"']*)",
                      lambda m: _masked_parameter(m, mask), text)
    return _KEYWORD_SECRET.sub(lambda m: f"{m.group(1)}{m.group(2)}{mask}", text)


def _masked_port(match: re.Match, mask: str) -> str:
    # host:port,host:port is a list of servers; anything else there may be a password
    if re.fullmatch(r"\d*(,[^,:]+(:\d*)?)*", match.group(2)):
        return match.group(0)
    return f"{match.group(1)}:{mask}"


def _masked_parameter(match: re.Match, mask: str) -> str:
    # libpq percent-decodes a URI's parameter names too: ?p%61ssword=... is a password
    if unquote(match.group(2)).strip().lower() in SECRET_PARAMETERS:
        return f"{match.group(1)}{match.group(2)}={mask}"
    return match.group(0)


class MaskSecrets(logging.Filter):
    """Masks passwords in a record's message and traceback on its way into a handler; never
    drops a record. Exception text is masked too: libpq's errors quote the line they were
    given, password and all."""

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
            if record.stack_info:
                record.stack_info = masked(record.stack_info)
        except Exception:  # noqa: BLE001 - a filter that raises would lose the record
            pass  # a record whose message cannot be formatted is logged as it is
        return True


def mask_secrets_in_handlers(root: logging.Logger | None = None) -> None:
    """Put the filter on every handler of `root` (the root logger) that lacks it."""
    for handler in (root or logging.getLogger()).handlers:
        if not any(isinstance(f, MaskSecrets) for f in handler.filters):
            handler.addFilter(MaskSecrets())
