"""The team server killed (SIGKILL to every server process, as a power cut) in the middle of a
publish: no partial entry on the server, the take waits in the outbox, and once the server is
back the queue is sent - by another process (`team sync`) - with every file, rating and tag."""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
import time
from pathlib import Path

import psycopg
import pytest

from engines.store.library import ClipLibrary
from engines.team.binaries import embedded_bindir
from engines.team.provisioning import init_local
from engines.team.server import LocalServer
from engines.team.service import PublishReport
from tests.cli_runner import run_cli
from tests.team_support import (
    add_take,
    engine_files,
    kill_server,
    require_postgres,
    server_folder,
    team_library,
)

pytestmark = pytest.mark.posix  # SIGKILL to the server processes

require_postgres()
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def own_server():
    """A server of this module's own: these tests kill it."""
    root = server_folder()
    setup = init_local(root / "server", root / "store", port=0)
    server = LocalServer((root / "server").absolute(), embedded_bindir())
    yield server, setup, root
    server.stop("immediate")
    shutil.rmtree(root, ignore_errors=True)


def _admin(server: LocalServer) -> str:
    return server.admin_conninfo("sa3_team")


def _complete_entries(server: LocalServer, store: Path) -> dict[str, int]:
    """prompt -> team id of every take on the server, after checking it is whole: its take
    file and sidecar recorded, each in the store with the bytes its SHA-256 names."""
    with psycopg.connect(_admin(server)) as conn:
        takes = conn.execute("SELECT id, prompt FROM takes").fetchall()
        for take_id, prompt in takes:
            files = conn.execute("SELECT role, sha256, size FROM take_files WHERE take_id = %s",
                                 (take_id,)).fetchall()
            assert sorted(role for role, _, _ in files) == ["take", "take-sidecar"], prompt
            for _, sha, size in files:
                data = (store / sha[:2] / sha).read_bytes()
                assert len(data) == size and hashlib.sha256(data).hexdigest() == sha
    prompts = [prompt for _, prompt in takes]
    assert len(prompts) == len(set(prompts)), "a take was published twice"
    return {prompt: take_id for take_id, prompt in takes}


def _wait_for(condition, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _blocked_publishers(server: LocalServer) -> int:
    with psycopg.connect(_admin(server)) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                            "'SA3 Studio' AND wait_event_type = 'Lock'").fetchone()[0]


def test_killed_in_the_middle_of_a_publish_leaves_no_partial_entry_and_the_queue_resumes(
        own_server, tmp_path: Path) -> None:
    server, setup, root = own_server
    home = tmp_path / "home"
    library = ClipLibrary(home / "library")
    take = add_take(library, engine_files(tmp_path / "engines"), "glass breaking", 11)
    library.update(take.id, rating=5, tags=["glass", "impact"])
    library.close()
    # Hold the tags table, so the publish stops inside its transaction: the take's row and
    # its files' rows are written, its tags are not, when the server is killed.
    holder = psycopg.connect(_admin(server))
    holder.execute("LOCK TABLE tags IN ACCESS EXCLUSIVE MODE")
    reports: list[PublishReport] = []

    def publish() -> None:
        with team_library(setup, "ann", home / "team") as team, \
                ClipLibrary(home / "library") as local:
            reports.append(team.publish(local, [take.id]))

    thread = threading.Thread(target=publish)
    thread.start()
    _wait_for(lambda: _blocked_publishers(server) == 1)
    kill_server(server)
    thread.join(30)
    holder.close()
    assert reports and reports[0].published == [] and reports[0].waiting == 1
    assert "cannot be reached" in reports[0].unreachable

    server.start()
    with psycopg.connect(_admin(server)) as conn:  # crash recovery rolled the publish back
        assert conn.execute("SELECT count(*) FROM takes").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM take_files").fetchone() == (0,)

    env = {**os.environ, "SA3_STUDIO_HOME": str(home), "SA3_STUDIO_TEAM": setup.publisher_line}
    done = run_cli(["team", "sync", "--as", "ann"], env=env, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert f"take #{take.id} published as team take #" in done.stdout
    entries = _complete_entries(server, root / "store")
    assert list(entries) == ["glass breaking"]
    with psycopg.connect(_admin(server)) as conn:
        assert conn.execute("SELECT designer, stars FROM ratings").fetchall() == [("ann", 5)]
        assert conn.execute("SELECT tag_list FROM takes").fetchone() == (["glass", "impact"],)
        conn.execute("TRUNCATE takes CASCADE")


def test_killed_while_many_takes_are_published_loses_and_doubles_none(
        own_server, tmp_path: Path) -> None:
    server, setup, root = own_server
    home = tmp_path / "home"
    count = 12
    with ClipLibrary(home / "library") as library:
        files = engine_files(tmp_path / "engines")
        ids = [add_take(library, files, f"impact {n}", 100 + n).id for n in range(count)]
    reports: list[PublishReport] = []

    def publish() -> None:
        with team_library(setup, "ben", home / "team") as team, \
                ClipLibrary(home / "library") as local:
            for take_id in ids:  # one at a time, as designers do
                reports.append(team.publish(local, [take_id]))

    def published() -> int:
        with psycopg.connect(_admin(server)) as conn:
            return conn.execute("SELECT count(*) FROM takes WHERE prompt LIKE 'impact %'"
                                ).fetchone()[0]

    thread = threading.Thread(target=publish)
    thread.start()
    _wait_for(lambda: published() >= 4)
    kill_server(server)
    thread.join(120)
    assert len(reports) == count
    waiting = reports[-1].waiting
    assert 0 < waiting <= count - 4

    server.start()
    with team_library(setup, "ben", home / "team") as team:
        sent = team.send_queued()
    assert sent.waiting == 0 and len(sent.published) == waiting
    entries = _complete_entries(server, root / "store")
    assert sorted(p for p in entries if p.startswith("impact")) == \
        sorted(f"impact {n}" for n in range(count))
