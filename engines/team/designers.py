"""Designers with logins of their own (`team add-designer NAME`): a PostgreSQL login in the
publisher group, bound to NAME in the team library's designer_logins, so that the server lets
this login write only as NAME and no other login write as NAME (engines.team.writes). Its
connection line is printed once; running it again for the same designer gives the login a new
password (the old line stops working), which is how a line that leaked is replaced.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from urllib.parse import quote

from engines.lazy import lazy_import
from engines.team.connection import TeamConnection
from engines.team.errors import TeamError
from engines.team.migrations import check_schema
from engines.team.session import reworded
from engines.team.writes import WRITER_ROLE
from engines.text_display import is_hidden, looks_blank

psycopg = lazy_import("psycopg")
sql = lazy_import("psycopg.sql")

MAX_NAME_CHARS = 80  # engines.team.connection.MAX_DESIGNER_CHARS
PASSWORD_BYTES = 18
_LOCK_KEY = "sa3_team_designers"


@dataclass(frozen=True)
class DesignerLogin:
    designer: str
    login: str
    line: str = field(repr=False)  # holds the password


def designer_text(name: str) -> str:
    """A designer's name as the team library keeps it; TeamError (one sentence) for one that
    cannot be a name."""
    clean = " ".join(name.split())
    if not clean or looks_blank(clean):
        raise TeamError("A designer's name cannot be empty or look empty; give the name the "
                        "team knows them by.")
    if len(clean) > MAX_NAME_CHARS or any(is_hidden(c) for c in clean):
        raise TeamError(f"A designer's name is plain text of at most {MAX_NAME_CHARS} "
                        "characters, without control, zero-width or direction characters; "
                        "give a shorter, plain name.")
    return clean


def add_designer(admin: str, name: str, host: str, port: int) -> DesignerLogin:
    """Designer `name`'s own login in the team library that `admin` (its owner or a
    superuser, connected to its database) reaches, with a new password; the line to hand
    that designer names `host` and `port`."""
    name = designer_text(name)
    where = TeamConnection(admin)
    try:
        with psycopg.connect(admin, autocommit=True) as conn:
            check_schema(conn, where.where)
            password = secrets.token_urlsafe(PASSWORD_BYTES)
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (_LOCK_KEY,))
                row = conn.execute("SELECT login FROM designer_logins WHERE lower(designer) "
                                   "= lower(%s)", (name,)).fetchone()
                login = row[0] if row else _new_login(name)
                exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s",
                                      (login,)).fetchone() is not None
                conn.execute(sql.SQL(("ALTER" if exists else "CREATE") +
                                     " ROLE {} LOGIN PASSWORD {}").format(
                    sql.Identifier(login), sql.Literal(password)))
                conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(WRITER_ROLE),
                                                              sql.Identifier(login)))
                if row is None:
                    conn.execute("INSERT INTO designer_logins (login, designer) VALUES (%s, %s)",
                                 (login, name))
            database = conn.info.dbname
    except psycopg.Error as err:
        raise reworded(err, where) from err
    shown_host = f"[{host}]" if ":" in host else host
    line = (f"postgresql://{quote(login, safe='')}:{quote(password, safe='')}@{shown_host}:"
            f"{port}/{quote(database, safe='')}")
    return DesignerLogin(name, login, line)


def _new_login(name: str) -> str:
    """A login name for the designer: readable, unique in the server (logins are shared by
    every database on it), a valid identifier without quoting."""
    stem = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")[:30] or "designer"
    return f"sa3_{stem}_{secrets.token_hex(3)}"
