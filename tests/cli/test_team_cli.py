"""`python main.py team ...` as a user runs it: the real CLI in subprocesses, against the server
its own `team init` starts - init, publish, list, search, similar, show, fetch, rate, stop -
with --json parsed, and every refusal one line with the exit code the module promises."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import soundfile as sf

from engines.store.library import ClipLibrary
from tests.cli_runner import run_cli
from tests.team_support import add_take, engine_files, require_postgres, server_folder, with_port

require_postgres()
REPO = Path(__file__).resolve().parents[2]


def _cli(*args: str, home: Path, team: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "SA3_STUDIO_HOME": str(home)}
    env.pop("SA3_STUDIO_TEAM", None)
    if team is not None:
        env["SA3_STUDIO_TEAM"] = team
    return run_cli(["team", *args], env=env, timeout=180, cwd=REPO)


def _one_line_error(done: subprocess.CompletedProcess, code: int) -> str:
    assert done.returncode == code, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


@pytest.fixture(scope="module")
def initialised(tmp_path_factory: pytest.TempPathFactory):
    """`team init` run by the CLI: a server of its own, stopped by `team stop` at the end."""
    root = server_folder()
    home = tmp_path_factory.mktemp("team-cli-home")
    done = _cli("init", "--data", str(root / "server"), "--store", str(root / "store"),
                "--port", "0", "--json", home=home)
    assert done.returncode == 0, done.stderr
    setup = json.loads(done.stdout)
    yield setup, root, home
    stopped = _cli("stop", "--data", str(root / "server"), home=home)
    shutil.rmtree(root, ignore_errors=True)
    assert stopped.returncode == 0, stopped.stderr


def test_init_prints_the_lines_and_runs_again_without_changing_them(initialised) -> None:
    setup, root, home = initialised
    assert setup["publisher"].startswith("postgresql://sa3_publisher:")
    assert setup["reader"].startswith("postgresql://sa3_reader:")
    assert setup["applied"] == list(range(1, setup["schema"] + 1)) and setup["started"]
    again = _cli("init", "--data", str(root / "server"), "--store", str(root / "store"),
                 home=home)
    assert again.returncode == 0, again.stderr
    assert setup["publisher"] in again.stdout and setup["reader"] in again.stdout
    assert "schema up to date" in again.stdout
    logins = root / "server" / "logins.json"
    assert logins.stat().st_mode & 0o077 == 0  # the passwords: the admin's eyes only


def test_publish_list_search_show_fetch_and_rate(initialised, tmp_path: Path) -> None:
    setup, root, home = initialised
    line = setup["publisher"]
    with ClipLibrary(home / "library") as library:
        files = engine_files(tmp_path / "engines")
        ids = [add_take(library, files, prompt, n, kind).id for n, (prompt, kind) in
               enumerate([("metal door slam", "noise"), ("low engine hum", "tone:90"),
                          ("engine idle", "tone:95")])]
        pcm = library.load_audio(ids[1])
    published = _cli("publish", *map(str, ids), "--json", "--as", "ann", home=home, team=line)
    assert published.returncode == 0, published.stderr
    report = json.loads(published.stdout)
    assert [p["local_id"] for p in report["published"]] == ids and report["waiting"] == 0
    team_ids = {p["local_id"]: p["team_id"] for p in report["published"]}

    listed = json.loads(_cli("list", "--json", home=home, team=line).stdout)
    assert [e["prompt"] for e in listed] == ["engine idle", "low engine hum", "metal door slam"]
    assert {e["designer"] for e in listed} == {"ann"}
    found = json.loads(_cli("search", "engine", "--json", home=home, team=line).stdout)
    assert [e["prompt"] for e in found] == ["engine idle", "low engine hum"]
    near = json.loads(_cli("similar", str(team_ids[ids[1]]), "--json", home=home,
                           team=line).stdout)
    assert [e["prompt"] for e in near][0] == "engine idle" and near[0]["distance"] >= 0

    rated = _cli("rate", str(team_ids[ids[0]]), "4", "--as", "bo", home=home, team=line)
    assert rated.returncode == 0, rated.stderr
    shown = json.loads(_cli("show", str(team_ids[ids[0]]), "--json", home=home,
                            team=line).stdout)
    assert shown["rating"] == {"average": 4.0, "count": 1, "mine": 0}
    assert {f["role"] for f in shown["files"]} == {"take", "take-sidecar"}

    target = tmp_path / "fetched"
    fetched = _cli("fetch", str(team_ids[ids[1]]), "--to", str(target), home=home,
                   team=setup["reader"])
    assert fetched.returncode == 0, fetched.stderr
    paths = [Path(p) for p in fetched.stdout.split()]
    assert sorted(p.suffix for p in paths) == [".json", ".wav"]
    entry = json.loads(_cli("show", str(team_ids[ids[1]]), "--json", home=home,
                            team=line).stdout)
    assert {hashlib.sha256(p.read_bytes()).hexdigest() for p in paths} == \
        {f["sha256"] for f in entry["files"]}
    samples, _ = sf.read(next(p for p in paths if p.suffix == ".wav"), dtype="int16")
    assert (samples == pcm).all()  # the very samples ann kept


def test_refusals_are_one_line_with_the_exit_code_promised(initialised, tmp_path) -> None:
    setup, root, home = initialised
    nothing = _one_line_error(_cli("list", home=home), 2)
    assert "SA3_STUDIO_TEAM" in nothing and "team init" in nothing
    unknown = _one_line_error(_cli("show", "999999", home=home, team=setup["reader"]), 2)
    assert "no take #999999" in unknown and "team list" in unknown
    read_only = _one_line_error(_cli("rate", "1", "3", home=home, team=setup["reader"]), 2)
    assert "may only read" in read_only
    gone = with_port(setup["publisher"], 1)
    away = _one_line_error(_cli("list", home=home, team=gone), 1)
    assert "cannot be reached" in away
    with ClipLibrary(tmp_path / "h" / "library") as library:
        take = add_take(library, engine_files(tmp_path / "engines"), "queued", 1)
    queued = _cli("publish", str(take.id), home=tmp_path / "h", team=gone)
    assert queued.returncode == 0 and "1 take waiting in the outbox" in queued.stdout
    assert queued.stderr.startswith("warning: ") and "cannot be reached" in queued.stderr
    assert _one_line_error(_cli("list", home=home, team="mysql://x"), 2).count("postgresql")


def test_the_command_is_listed_in_the_main_help(tmp_path: Path) -> None:
    done = run_cli(["--help"], timeout=60, cwd=REPO)
    assert "team COMMAND" in done.stdout
    help_text = _cli("--help", home=tmp_path).stdout
    for command in ("init", "publish", "list", "search", "similar", "fetch", "rate", "tag"):
        assert command in help_text
