"""Where the team library is: the connection line designers paste (Settings in the window,
$SA3_STUDIO_TEAM for the command line), and who is publishing.

A connection line is a PostgreSQL URI, as `team init` prints it:

    postgresql://sa3_publisher:PASSWORD@studio-server:5432/sa3_team

with an optional `store` parameter for where this machine sees the shared audio store (a
folder on the team's drive, percent-encoded): `...?store=%2Fmnt%2Fsounds%2Fsa3`. Without it the
store recorded on the server by `team init` is used, which is right wherever the drive is
mounted at the same path.
"""

from __future__ import annotations

import getpass
import ipaddress
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from engines.delivery.labels import DESIGNER_SETTING, studio_names
from engines.errors import Advice, Remedy
from engines.lazy import lazy_import
from engines.paths import data_dir
from engines.secret_text import masked
from engines.settings import read_settings
from engines.team.errors import TeamError
from engines.text_display import is_hidden, terminal_text

conninfo = lazy_import("psycopg.conninfo")

TEAM_ENV = "SA3_STUDIO_TEAM"
TEAM_SETTING = "team_connection"  # the key in settings.json (the window's Settings)
STORE_PARAMETER = "store"
URI_SCHEMES = ("postgresql", "postgres")
MAX_DESIGNER_CHARS = 80
MAX_SHOWN_CHARS = 100
# Values libpq accepts for its enumerated parameters (libpq's connectOptions2)
_CHOICES = {
    "sslmode": ("disable", "allow", "prefer", "require", "verify-ca", "verify-full"),
    "gssencmode": ("disable", "prefer", "require"),
    "channel_binding": ("disable", "prefer", "require"),
    "target_session_attrs": ("any", "read-write", "read-only", "primary", "standby",
                             "prefer-standby"),
    "load_balance_hosts": ("disable", "random"),
    "sslnegotiation": ("postgres", "direct"),
    "sslcertmode": ("disable", "allow", "require"),
}
_INTEGERS = ("connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval",
             "keepalives_count", "tcp_user_timeout", "sslcompression", "sslsni")


def shown_line(line: str) -> str:
    """A line for a sentence: masked, then cut short."""
    text = masked(line.strip())
    return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS - 3] + "..."


@dataclass(frozen=True)
class TeamConnection:
    """A team library to connect to: libpq's connection string, and the shared store as this
    machine sees it (None: the one recorded on the server)."""

    conninfo: str = field(repr=False)  # it holds the password
    store: Path | None = None

    def line(self) -> str:
        """The connection line, store included."""
        if self.store is None:
            return self.conninfo
        parts = urlsplit(self.conninfo)
        query = parse_qsl(parts.query, keep_blank_values=True)
        query.append((STORE_PARAMETER, str(self.store)))
        return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))

    @property
    def where(self) -> str:
        """host:port/database, without the password: for sentences and the log."""
        try:
            fields = conninfo.conninfo_to_dict(self.conninfo)
        except Exception:  # a line that does not parse is refused elsewhere; never raise here
            return "the team server"
        host = str(fields.get("host") or "localhost")
        if host.startswith("/"):
            host = "localhost"  # a Unix socket folder
        return f"{host}:{fields.get('port') or 5432}/{fields.get('dbname') or ''}".rstrip("/")

    @property
    def user(self) -> str:
        try:
            return str(conninfo.conninfo_to_dict(self.conninfo).get("user") or "")
        except Exception:
            return ""


def _not_a_line(line: str) -> TeamError:
    return TeamError(Advice(f"'{shown_line(line)}' is not a team connection line (it should "
                            "start with postgresql://); set {0} to the line that {1} printed.",
                            Remedy.setting(TEAM_SETTING), Remedy.command("team init")))


def _bad_line(line: str, problem: str) -> TeamError:
    return TeamError(Advice(f"The team connection line '{shown_line(line)}' {problem}; set {{0}} "
                            "to the line that {1} printed.", Remedy.setting(TEAM_SETTING),
                            Remedy.command("team init")))


def checked_fields(line: str, given: str | None = None) -> dict[str, str]:
    """libpq's parameters of `line` (a postgresql:// line or key=value words), every value
    checked as libpq would check it when connecting; TeamError (one sentence quoting `given`,
    the line as the user gave it, with the password masked) for the first that is wrong: bad
    input, never an unreachable server."""
    given = line if given is None else given
    try:
        fields = conninfo.conninfo_to_dict(line)
    except Exception as err:  # psycopg.ProgrammingError: libpq refused the string
        why = str(err).strip().splitlines()[0] if str(err).strip() else "it does not parse"
        why = masked(why.replace(line, masked(line)))
        # libpq quotes pieces of the line ("unexpected spaces found in ..."): say its words
        # only when no piece it quotes is part of a password
        if any(piece not in masked(line) for piece in re.findall(r'"([^"]*)"', why)):
            why = "it is not a valid PostgreSQL connection string"
        if len(why) > MAX_SHOWN_CHARS:
            why = why[:MAX_SHOWN_CHARS - 3] + "..."
        # from None: libpq's own words quote the line, password and all, and a chained
        # exception would carry them into the log file's traceback
        raise _bad_line(given, f"cannot be read ({why})") from None
    for key, value in fields.items():
        problem = _value_problem(key, str(value))
        if problem:
            raise _bad_line(given, problem)
    return {key: str(value) for key, value in fields.items()}


def _value_problem(key: str, value: str) -> str:
    """What is wrong with parameter `key` = `value` ("" when nothing is)."""
    if key == "port":
        for port in value.split(","):
            port = port.strip()
            if port and not (port.isdecimal() and 1 <= int(port) <= 65535):
                # a port of letters may be a password a missing @ put there: never quoted
                named = f"port {port[:20]}" if port.isdecimal() else "a port"
                return f"has {named}, which is not a network port (1 to 65535)"
    elif key == "host":
        for host in value.split(","):
            address = host.strip().split("%")[0]  # fe80::1%eth0: an address and its interface
            if ":" in address and not address.startswith("/"):
                try:
                    ipaddress.IPv6Address(address)
                except ValueError:
                    return f"has host '{address[:60]}', which is not an IPv6 address"
    elif key in _CHOICES and value.strip() not in _CHOICES[key]:
        return (f"has {key}={value[:20]!r}, which is not one of "
                f"{', '.join(_CHOICES[key])}")
    elif key in _INTEGERS and not re.fullmatch(r"\s*-?\d{1,9}\s*", value):
        return f"has {key}={value[:20]!r}, which is not a whole number"
    return ""


def parse_line(line: str) -> TeamConnection:
    """A TeamConnection from a connection line; TeamError (one sentence, the password masked)
    when it is not one or a value in it is wrong."""
    line = line.strip()
    try:
        parts = urlsplit(line)
    except ValueError:  # "Invalid IPv6 URL": [::1/db, [zz::1]
        raise _bad_line(line, "has a host in brackets that is not an IPv6 address") from None
    if parts.scheme not in URI_SCHEMES:
        raise _not_a_line(line)
    query = parse_qsl(parts.query, keep_blank_values=True)
    store = [value for key, value in query if key == STORE_PARAMETER]
    rest = [(key, value) for key, value in query if key != STORE_PARAMETER]
    uri = urlunsplit(parts._replace(query=urlencode(rest, quote_via=quote)))
    checked_fields(uri, line)
    return TeamConnection(uri, Path(store[-1]).expanduser() if store and store[-1] else None)


def configured_line() -> str:
    """The connection line from $SA3_STUDIO_TEAM, else from Settings; "" when neither."""
    line = os.environ.get(TEAM_ENV, "").strip()
    if line:
        return line
    value = read_settings(data_dir()).get(TEAM_SETTING)
    return value.strip() if isinstance(value, str) else ""


def configured() -> TeamConnection:
    """The team library this machine is set up for; TeamError when it is set up for none."""
    line = configured_line()
    if not line:
        raise TeamError(Advice("No team library is set up on this machine; set {0} to the "
                               "connection line that {1} printed on the team's server.",
                               Remedy.setting(TEAM_SETTING), Remedy.command("team init")))
    return parse_line(line)


def designer_name(given: str | None = None) -> str:
    """Who is publishing and rating: `given`, else the designer name in Settings, else the
    login name of this computer's user."""
    name = (given or "").strip() or studio_names().get(DESIGNER_SETTING, "")
    if not name:
        try:
            name = getpass.getuser()
        except Exception:  # no login name (a container without a passwd entry)
            name = "designer"
    name = " ".join(name.split())
    if len(name) > MAX_DESIGNER_CHARS:
        raise TeamError(f"The designer name is {len(name)} characters long; give at most "
                        f"{MAX_DESIGNER_CHARS}.")
    if any(is_hidden(char) for char in name):
        # 'ann' and 'ann' + U+200B look the same in a list: one designer could pass for
        # another (the server refuses such names too, engines.team.write_limits)
        raise TeamError(f"The designer name '{terminal_text(name)}' holds invisible or control "
                        "characters (zero-width, direction or control characters); give the "
                        "name as the team reads it.")
    return name
