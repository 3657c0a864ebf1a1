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


def split_secrets(text: str) -> tuple[list[str], list[str]]:
    """`text` cut where masked() would mask it: the pieces around the secrets, and the secrets
    in order (one fewer than the pieces), so that a front end can show the pieces joined by a
    mask and put the secrets back after the user edited around them: joined_secrets(pieces,
    secrets) == text."""
    marker = "\x00"  # never in a line a user can paste (libpq refuses NUL)
    if marker in text:
        return [text], []
    pieces = masked(text, marker).split(marker)
    secrets, start = [], len(pieces[0])
    for i, piece in enumerate(pieces[1:], 1):
        # the last piece ends the text; a middle one is the next place the text holds it
        end = len(text) - len(piece) if i == len(pieces) - 1 else text.find(piece, start)
        if end < start:  # cannot happen (masked keeps the rest verbatim); never guess
            return [masked(text)], []
        secrets.append(text[start:end])
        start = end + len(piece)
    return pieces, secrets


def joined_secrets(pieces: list[str], secrets: list[str]) -> str:
    """The text split_secrets cut: the pieces with the secrets back between them."""
    after = zip(secrets, pieces[1:], strict=True)
    return pieces[0] + "".join(secret + piece for secret, piece in after)


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
