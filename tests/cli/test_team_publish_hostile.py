"""`team publish` against what a hostile folder or a busy machine brings: a batch manifest
whose items point outside the batch folder, through links, at files that are not audio or at
another take's file (only the batch's own files go; the rest are refused by name, nothing of
theirs published), several publishes of one take at once from one data folder (all of
them succeed, the outbox left empty), and a designer's own login (`team add-designer`), which
the shared publisher login can no longer write as."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

from engines.paths import library_dir
from engines.store.library import ClipLibrary
from engines.team.bundle import bundle_take
from engines.team.connection import parse_line
from main import main
from tests.hostile_support import sha256_of
from tests.team_support import (
    SharedServer,
    add_take,
    engine_files,
    require_postgres,
    rows,
    team_library,
)

require_postgres()
REPO = Path(__file__).resolve().parents[2]


def _stored(team_server: SharedServer) -> set[str]:
    return {p.name for p in (team_server.root / "store").glob("??/*")}


def test_a_batch_manifest_publishes_only_its_own_files(team_server, home, tmp_path, capsys,
                                                       monkeypatch):
    setup = team_server.database()
    monkeypatch.setenv("SA3_STUDIO_TEAM", setup.publisher_line)
    secret = tmp_path / "id_ed25519"
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nnot for the team\n")
    out = tmp_path / "batch"
    out.mkdir()
    with ClipLibrary(library_dir()) as library:
        files = engine_files(tmp_path / "engines")
        takes = [add_take(library, files, f"coin {n}", n) for n in range(3)]
        paths = library.export([t.id for t in takes], out)
    (out / "notes.wav").write_text("not audio")
    (out / "notes.json").write_text(json.dumps({"library_id": takes[1].id}))
    (out / "link.wav").symlink_to(paths[1])  # the batch's own audio, but through a link
    (out / "key.wav").symlink_to(secret)

    def item(take, file, **more):
        return {"status": "ok", "library_id": take.id, "file": file, **more}

    hostile = {"../id_ed25519": item(takes[1], "../id_ed25519"),
               str(secret): item(takes[1], str(secret)),
               "key.wav": item(takes[1], "key.wav"),
               "link.wav": item(takes[1], "link.wav"),
               "notes.wav": item(takes[1], "notes.wav"),
               paths[2].name: item(takes[1], paths[2].name)}  # take 2's file named as take 1's
    manifest = {"items": [item(takes[0], paths[0].name), *hostile.values()]}
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert main(["team", "publish", "--batch", str(out), "--as", "ann"]) == 2
    said = capsys.readouterr()
    assert f"take #{takes[0].id} published as team take #" in said.out
    errors = [line for line in said.err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in said.err, said.err
    for name in hostile:
        assert name in errors[0], name
    admin = team_server.admin(setup)
    assert rows(admin, "SELECT prompt FROM takes") == [("coin 0",)]  # nothing of take 1
    names = {row[0] for row in rows(admin, "SELECT file_name FROM take_files")}
    assert not names & {"id_ed25519", "key.wav", "link.wav", "notes.wav"}
    assert sha256_of(secret) not in _stored(team_server)

    # Every item refused: nothing published, one sentence, exit 2.
    manifest["items"] = list(hostile.values())
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert main(["team", "publish", "--batch", str(out), "--as", "ann"]) == 2
    said = capsys.readouterr()
    assert said.out == "" and said.err.count("\n") == 1 and "Nothing was published" in said.err
    assert rows(admin, "SELECT count(*) FROM takes") == [(1,)]


def _publish_process(home: Path, line: str, take_id: int) -> subprocess.Popen:
    env = {**os.environ, "SA3_STUDIO_HOME": str(home), "SA3_STUDIO_TEAM": line}
    return subprocess.Popen([sys.executable, str(REPO / "main.py"), "team", "publish",
                             str(take_id), "--as", "ann"], env=env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_three_publishes_of_one_take_at_once_from_one_data_folder_all_succeed(
        team_server, home, tmp_path):
    setup = team_server.database()
    with ClipLibrary(library_dir()) as library:
        files = engine_files(tmp_path / "engines")
        take = [add_take(library, files, f"step {n}", n) for n in range(4)][-1]
    processes = [_publish_process(home, setup.publisher_line, take.id) for _ in range(3)]
    results = [(p.wait(180), *p.communicate()) for p in processes]
    team_ids = set()
    for code, out, err in results:
        assert code == 0 and "Traceback" not in err, (out, err)
        words = out.strip().splitlines()[0]
        assert words.startswith(f"take #{take.id} ") and "team take #" in words, out
        team_ids.add(words.rsplit("#", 1)[1])
        assert "waiting" not in out and "warning" not in err, (out, err)
    assert len(team_ids) == 1  # one entry, which every publish names
    assert rows(team_server.admin(setup), "SELECT count(*) FROM takes") == [(1,)]
    assert not list((home / "team" / "outbox").iterdir())  # every folder sent and removed


def test_publishers_on_threads_sharing_one_outbox_lose_nothing(team_server, tmp_path):
    setup = team_server.database()
    library = ClipLibrary(tmp_path / "library")
    files = engine_files(tmp_path / "engines")
    ids = [add_take(library, files, f"click {n}", n).id for n in range(3)]
    library.close()
    errors: list[BaseException] = []
    reports = []
    start = threading.Barrier(4)

    def publish(n: int) -> None:
        try:
            with team_library(setup, f"d{n}", tmp_path / "shared") as team, \
                    ClipLibrary(tmp_path / "library") as mine:
                start.wait()
                reports.append(team.publish(mine, [ids[n % 3], ids[0]]))
        except BaseException as err:  # noqa: BLE001 - handed to the main thread
            errors.append(err)

    threads = [threading.Thread(target=publish, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    for report in reports:
        assert not report.problems and report.unreachable is None, report
        assert {local for local, _, _ in report.published} >= {ids[0]}
    admin = team_server.admin(setup)
    assert rows(admin, "SELECT count(*) FROM takes") == [(3,)]
    assert rows(admin, "SELECT count(*) FROM ratings") == [(0,)]
    with team_library(setup, "check", tmp_path / "shared") as team:
        assert team.outbox.count() == 0
    assert not list((tmp_path / "shared" / "outbox").iterdir())


def test_add_designer_prints_a_line_only_that_designer_writes_with(team_server, home, tmp_path,
                                                                   capsys, monkeypatch):
    setup = team_server.database()
    database = setup.publisher_line.rsplit("/", 1)[-1]
    admin = team_server.server.admin_conninfo(database)
    assert main(["team", "add-designer", "Dee Lane", "--admin", admin, "--database", database,
                 "--json"]) == 0
    made = json.loads(capsys.readouterr().out)
    assert made["designer"] == "Dee Lane" and made["line"].startswith(
        f"postgresql://{made['login']}:")
    with ClipLibrary(library_dir()) as library:
        take = add_take(library, engine_files(tmp_path / "engines"), "chime", 3)
    monkeypatch.setenv("SA3_STUDIO_TEAM", made["line"])
    assert main(["team", "publish", str(take.id), "--as", "someone else"]) == 0
    assert main(["team", "rate", "1", "4"]) == 0
    capsys.readouterr()
    assert rows(team_server.admin(setup), "SELECT designer FROM takes") == [("Dee Lane",)]
    monkeypatch.setenv("SA3_STUDIO_TEAM", setup.publisher_line)
    assert main(["team", "rate", "1", "1", "--as", "dee lane"]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and "own connection line" in said and "reached" not in said
    assert rows(team_server.admin(setup), "SELECT designer, stars FROM ratings") == \
        [("Dee Lane", 4)]
    assert main(["team", "add-designer", " ", "--admin", admin, "--database", database]) == 2
    assert "cannot be empty" in capsys.readouterr().err


def test_an_outbox_the_previous_release_left_is_sent(team_server, tmp_path):
    """Its table has no folder or claim columns and its files lie in outbox/KEY[:24]/."""
    setup = team_server.database()
    root = tmp_path / "team"
    with ClipLibrary(tmp_path / "library") as library:
        take = add_take(library, engine_files(tmp_path / "engines"), "old queue", 2)
        bundle = bundle_take(library, take.id, "ann",
                             lambda key: root / "outbox" / key[:24])
    old = json.loads(bundle.to_json())
    del old["staged"]
    with sqlite3.connect(root / "outbox.sqlite3") as db:
        db.execute("CREATE TABLE queued (key TEXT PRIMARY KEY, team TEXT NOT NULL, bundle TEXT "
                   "NOT NULL, queued TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, "
                   "last_error TEXT)")
        db.execute("INSERT INTO queued VALUES (?, ?, ?, '2026-01-01T00:00:00+00:00', 0, NULL)",
                   (bundle.key, parse_line(setup.publisher_line).where, json.dumps(old)))
    with team_library(setup, "ann", root) as team:
        sent = team.send_queued()
        assert [(r[0], r[2]) for r in sent.published] == [(take.id, True)] and sent.waiting == 0
        files = team.entry(sent.published[0][1]).files
    assert {f.role for f in files} == {"take", "take-sidecar"}
    assert not list((root / "outbox").iterdir())
