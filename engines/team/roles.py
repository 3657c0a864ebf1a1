"""Who may do what in a team library, as PostgreSQL roles:

    sa3_team_reader     browse, search, fetch and watch (SELECT; LISTEN needs no grant)
    sa3_team_publisher  the reader's rights, and publish, rate, tag and write notes

and one login for each (sa3_reader, sa3_publisher) with a password, whose connection lines
`team init` prints. More logins are plain PostgreSQL roles granted one of the two groups.
A publisher holds no table write at all: it publishes, rates, tags and writes notes only through
the server's SECURITY DEFINER functions (engines/team/writes.py), which write under the caller's
own designer name, so it can never change or remove another's take (the server enforces it).
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from engines.lazy import lazy_import

if TYPE_CHECKING:
    import psycopg

sql = lazy_import("psycopg.sql")

READER_ROLE = "sa3_team_reader"
PUBLISHER_ROLE = "sa3_team_publisher"
READER_LOGIN = "sa3_reader"
PUBLISHER_LOGIN = "sa3_publisher"
LOGIN_GROUPS = {PUBLISHER_LOGIN: PUBLISHER_ROLE, READER_LOGIN: READER_ROLE}
PASSWORD_BYTES = 18

_GRANTS = """
REVOKE ALL ON DATABASE {db} FROM PUBLIC;
GRANT CONNECT ON DATABASE {db} TO {reader};
GRANT USAGE ON SCHEMA public TO {reader};
GRANT SELECT ON ALL TABLES IN SCHEMA public TO {reader};
REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON ALL TABLES IN SCHEMA public FROM {publisher};
REVOKE UPDATE (rating_avg, rating_count, tag_list, tag_text) ON takes FROM {publisher};
REVOKE USAGE ON ALL SEQUENCES IN SCHEMA public FROM {publisher};
"""


def _role_exists(conn: psycopg.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone() \
        is not None


def ensure_roles(conn: psycopg.Connection, database: str) -> None:
    """The two group roles with their rights on the (migrated) schema; run as its owner."""
    with conn.transaction():
        for role in (READER_ROLE, PUBLISHER_ROLE):
            if not _role_exists(conn, role):
                conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(role)))
        conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(READER_ROLE),
                                                      sql.Identifier(PUBLISHER_ROLE)))
        names = {"db": sql.Identifier(database), "reader": sql.Identifier(READER_ROLE),
                 "publisher": sql.Identifier(PUBLISHER_ROLE)}
        for statement in _GRANTS.strip().splitlines():
            conn.execute(sql.SQL(statement).format(**names))


def ensure_login(conn: psycopg.Connection, login: str, password: str | None) -> str:
    """The login role `login` in its group, with `password` (a new random one when None);
    returns the password it now has."""
    password = password or secrets.token_urlsafe(PASSWORD_BYTES)
    with conn.transaction():
        verb = "ALTER" if _role_exists(conn, login) else "CREATE"
        conn.execute(sql.SQL(verb + " ROLE {} LOGIN PASSWORD {}").format(
            sql.Identifier(login), sql.Literal(password)))
        conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(LOGIN_GROUPS[login]),
                                                      sql.Identifier(login)))
    return password
