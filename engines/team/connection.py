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
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from engines.delivery.labels import DESIGNER_SETTING, studio_names
from engines.errors import Advice, Remedy
from engines.lazy import lazy_import
from engines.paths import data_dir
from engines.settings import read_settings
from engines.team.errors import TeamError

conninfo = lazy_import("psycopg.conninfo")

TEAM_ENV = "SA3_STUDIO_TEAM"
TEAM_SETTING = "team_connection"  # the key in settings.json (the window's Settings)
STORE_PARAMETER = "store"
URI_SCHEMES = ("postgresql", "postgres")
MAX_DESIGNER_CHARS = 80


@dataclass(frozen=True)
class TeamConnection:
    """A team library to connect to: libpq's connection string, and the shared store as this
    machine sees it (None: the one recorded on the server)."""

    conninfo: str
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
    shown = line if len(line) <= 40 else line[:37] + "..."
    return TeamError(Advice(f"'{shown}' is not a team connection line (it should start with "
                            "postgresql://); set {0} to the line that {1} printed.",
                            Remedy.setting(TEAM_SETTING), Remedy.command("team init")))


def parse_line(line: str) -> TeamConnection:
    """A TeamConnection from a connection line; TeamError (one sentence) when it is not one."""
    line = line.strip()
    parts = urlsplit(line)
    if parts.scheme not in URI_SCHEMES:
        raise _not_a_line(line)
    query = parse_qsl(parts.query, keep_blank_values=True)
    store = [value for key, value in query if key == STORE_PARAMETER]
    rest = [(key, value) for key, value in query if key != STORE_PARAMETER]
    uri = urlunsplit(parts._replace(query=urlencode(rest, quote_via=quote)))
    try:
        conninfo.conninfo_to_dict(uri)
    except Exception as err:  # psycopg.ProgrammingError: libpq refused the string
        raise _not_a_line(line) from err
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
    return name
