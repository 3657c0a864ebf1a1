"""A take relabelled after it was published reaches the team library (engines.team.republish,
schema step 7 in engines.team.relabel) on a real PostgreSQL: its first publisher publishes it
again and `team fetch` returns files with the new labels (read back by wavinfo from the WAV's
iXML and by mutagen from the finished FLAC's Vorbis comments), the old store files untouched;
another designer's publish keeps the entry and says whose labels it keeps, and no other login
can change it with SQL of its own; a take published before step 7 is relabelled after every
older schema is upgraded."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import mutagen
import psycopg
import pytest
import wavinfo

from engines.finish.finished_take import finish_take
from engines.finish.settings import FinishSettings
from engines.store.library import ClipLibrary
from engines.team import migrations
from engines.team.connection import parse_line
from engines.team.designers import add_designer
from engines.team.migrations import LATEST, migrate
from engines.team.service import TeamLibrary
from tests.hostile_support import sha256_of
from tests.team_support import (
    add_take,
    engine_files,
    require_postgres,
    team_library,
)

require_postgres()
GRAVEL = {"catid": "FOOTGrvl", "fx_name": "Gravel Step", "creator": "JD", "source": "SA3"}


def _labelled_take(root: Path, labels: dict[str, str]) -> tuple[ClipLibrary, int]:
    """A library with one footstep take labelled `labels` and finished into FLAC by its stored
    chain, so a publish delivers the take as a WAV and its finished file as a FLAC (the same
    samples and settings in every library: one team entry)."""
    library = ClipLibrary(root / "library")
    take = add_take(library, engine_files(root / "engines"), "footstep on gravel", 7,
                    "tone:220", seconds=1.0)
    finished = finish_take(library.load_float_audio(take.id),
                           FinishSettings(fade_out_ms=100.0, format="flac"))
    library.set_finishing(take.id, finished.record())
    library.set_labels(take.id, labels)
    return library, take.id


def _fetched_labels(team: TeamLibrary, team_id: int, folder: Path) -> dict[str, str]:
    """The FX name and CatID in each fetched audio file, by suffix, as other programs read
    them: wavinfo (iXML USER and ASWG) for the WAV, mutagen (Vorbis comments) for the FLAC."""
    found: dict[str, str] = {}
    for path in team.fetch(team_id, folder):
        if path.suffix == ".wav":
            root = wavinfo.WavInfoReader(str(path)).ixml.raw_xml.getroot()
            found["wav"] = root.findtext("USER/FXNAME")
            found["wav catid"] = root.findtext("USER/CATID")
            assert root.findtext("ASWG/fxName") == found["wav"]
        elif path.suffix == ".flac":
            tags = mutagen.File(path).tags
            found["flac"] = tags["FXNAME"][0]
            found["flac catid"] = tags["CATID"][0]
    return found


def _files(admin: str) -> list[tuple]:
    with psycopg.connect(admin) as conn:
        return conn.execute("SELECT role, file_name, sha256 FROM take_files ORDER BY role, "
                            "file_name").fetchall()


def _labels(admin: str) -> dict | None:
    with psycopg.connect(admin) as conn:
        return conn.execute("SELECT provenance->'library'->'labels' FROM takes").fetchone()[0]


def test_a_take_relabelled_and_published_again_is_fetched_with_its_new_labels(
        team_server, team_db, tmp_path):
    library, take_id = _labelled_take(tmp_path, GRAVEL)
    admin = team_server.admin(team_db)
    store = team_server.root / "store"
    try:
        with team_library(team_db, "alice", tmp_path / "outbox") as team:
            team_id = team.publish(library, [take_id]).published[0][1]
            assert _fetched_labels(team, team_id, tmp_path / "first") == {
                "wav": "Gravel Step", "wav catid": "FOOTGrvl",
                "flac": "Gravel Step", "flac catid": "FOOTGrvl"}
            before = _files(admin)
            assert sorted(f[0] for f in before) == ["finished", "finished-sidecar", "take",
                                                    "take-sidecar"]
            # Published again unchanged: the same entry, its files as they were.
            again = team.publish(library, [take_id])
            assert again.published == [(take_id, team_id, False)] and not again.relabelled
            assert _files(admin) == before

            library.set_labels(take_id, {"fx_name": "New Name"})  # `library label --fx-name`
            report = team.publish(library, [take_id])
            assert report.published == [(take_id, team_id, False)]
            assert report.relabelled == [team_id] and not report.problems
            assert _fetched_labels(team, team_id, tmp_path / "second") == {
                "wav": "New Name", "wav catid": "FOOTGrvl",
                "flac": "New Name", "flac catid": "FOOTGrvl"}
            after = _files(admin)
            assert team.find() and len(team.find()) == 1  # still one entry
    finally:
        library.close()
    assert {f[2] for f in after}.isdisjoint({f[2] for f in before})
    # Every file either entry pointed to is in the store, whole and read-only: the old ones
    # were never touched (a copy fetched before still matches its hash).
    for _role, _name, sha in before + after:
        stored = store / sha[:2] / sha
        assert sha256_of(stored) == sha and not stored.stat().st_mode & 0o222
    assert _labels(admin) == {**GRAVEL, "fx_name": "New Name"}


def test_another_designer_cannot_relabel_the_take_by_publishing_or_with_sql(
        team_server, team_db, tmp_path):
    admin = team_server.admin(team_db)
    port = urlsplit(team_db.publisher_line).port
    bob_line = add_designer(admin, "bob", "localhost", port).line
    alices, take_id = _labelled_take(tmp_path / "alice", GRAVEL)
    bobs, bob_take = _labelled_take(tmp_path / "bob", {**GRAVEL, "fx_name": "Bob's Name"})
    try:
        with team_library(team_db, "alice", tmp_path / "a") as alice:
            team_id = alice.publish(alices, [take_id]).published[0][1]
        before = _files(admin)
        bobs.update(bob_take, rating=5)
        with TeamLibrary(parse_line(bob_line), "bob", tmp_path / "b") as bob:
            report = bob.publish(bobs, [bob_take])
            # The entry is kept as alice published it; bob's stars are added, and one
            # sentence says whose labels the entry keeps.
            assert report.published == [(bob_take, team_id, False)] and not report.relabelled
            assert len(report.notices) == 1 and "alice" in report.notices[0]
            assert "Gravel Step" in report.notices[0] and "Bob's Name" in report.notices[0]
            assert bob.entry(team_id).rating_count == 1
            assert _fetched_labels(bob, team_id, tmp_path / "fetched")["wav"] == "Gravel Step"
    finally:
        alices.close()
        bobs.close()
    with psycopg.connect(admin) as conn:
        key = conn.execute("SELECT take_key FROM takes").fetchone()[0]
    call = "SELECT sa3_relabel(%s, %s, %s::jsonb, %s::jsonb)"
    evil = (json.dumps({"fx_name": "Evil"}), json.dumps([
        {"role": "take", "name": "evil.wav", "sha256": "e" * 64, "size": 1, "format": "wav"}]))
    for line, as_who in ((bob_line, "bob"), (bob_line, "alice"),  # his own login: as bob
                         (team_db.publisher_line, "mallory"), (team_db.reader_line, "alice")):
        with psycopg.connect(line, autocommit=True) as conn, \
                pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(call, (key, as_who, *evil))
    with psycopg.connect(bob_line, autocommit=True) as conn:
        for attack in ("UPDATE takes SET provenance = '{}'", "DELETE FROM take_files",
                       "UPDATE take_files SET file_name = 'evil.wav'"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(attack)
    assert _files(admin) == before and _labels(admin) == GRAVEL


def test_a_relabel_keeps_the_files_of_roles_it_does_not_name_and_tells_watchers(
        team_server, team_db, tmp_path):
    library, take_id = _labelled_take(tmp_path, GRAVEL)
    admin = team_server.admin(team_db)
    alice_line = add_designer(admin, "alice", "localhost",
                              urlsplit(team_db.publisher_line).port).line
    try:
        with TeamLibrary(parse_line(alice_line), "alice", tmp_path / "o") as team:
            team_id = team.publish(library, [take_id]).published[0][1]
            watcher = team.watch()
            assert watcher.poll(0.1) == []  # listening from now
            before = _files(admin)
            finished = [{"role": "finished", "name": "step.flac", "sha256": "f" * 64,
                         "size": 3, "format": "flac"}]
            with psycopg.connect(alice_line, autocommit=True) as conn:
                key = conn.execute("SELECT take_key FROM takes").fetchone()[0]
                relabel = "SELECT sa3_relabel(%s, 'alice', %s::jsonb, %s::jsonb)"
                labels = json.dumps({"fx_name": "Only Finished"})
                assert conn.execute(relabel, (key, labels, json.dumps(finished))
                                    ).fetchone() == (True,)
                # The same rows again change nothing (and tell nobody).
                assert conn.execute(relabel, (key, labels, json.dumps(finished))
                                    ).fetchone() == (False,)
                assert conn.execute(relabel, ("no such key", labels, json.dumps(finished))
                                    ).fetchone() == (False,)
                for files in ("[]", json.dumps([{"role": "take", "name": "../x.wav",
                                                 "sha256": "a" * 64, "size": 1}])):
                    with pytest.raises(psycopg.errors.InvalidParameterValue):
                        conn.execute(relabel, (key, labels, files))
            watcher.poll(5.0)
            assert watcher.changed == {team_id}
            watcher.close()
    finally:
        library.close()
    after = _files(admin)
    assert [f for f in after if f[0].startswith("take")] == \
        [f for f in before if f[0].startswith("take")]
    assert [f for f in after if f[0].startswith("finished")] == \
        [("finished", "step.flac", "f" * 64)]  # its sidecar went with the role
    assert _labels(admin) == {"fx_name": "Only Finished"}


@pytest.mark.parametrize("start", range(1, LATEST))
def test_a_take_published_before_step_7_is_relabelled_after_the_upgrade(team_server, start):
    name = f"relabel_from_{start}"
    with psycopg.connect(team_server.server.admin_conninfo(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    with psycopg.connect(team_server.server.admin_conninfo(name), autocommit=True) as conn:
        migrate(conn, target=start)
        take_id = conn.execute(  # as an older SA3 Studio wrote it: no labels in provenance
            "INSERT INTO takes (take_key, content_sha256, name, prompt, mode, seconds, "
            "sample_rate, samples, provenance, designer, created) VALUES ('k1', 'c1', 'Old', "
            "'steps', 't2a', 2.0, 44100, 88200, '{\"seed\": 3}', 'ann', "
            "'2026-01-02T03:04:05Z') RETURNING id").fetchone()[0]
        conn.execute("INSERT INTO take_files VALUES (%s, 'take', 'old.wav', %s, 10, 'wav')",
                     (take_id, "a" * 64))
        assert migrate(conn) == list(range(start + 1, LATEST + 1))
        conn.execute(f"LISTEN {migrations.CHANGED_TAKES_CHANNEL}")
        files = [{"role": "take", "name": "new.wav", "sha256": "b" * 64, "size": 11,
                  "format": "wav"}]
        assert conn.execute("SELECT sa3_relabel('k1', 'ANN', %s::jsonb, %s::jsonb)",
                            (json.dumps({"fx_name": "Steps"}), json.dumps(files))
                            ).fetchone() == (True,)
        assert conn.execute("SELECT provenance FROM takes").fetchone()[0] == \
            {"seed": 3, "library": {"labels": {"fx_name": "Steps"}}}
        assert conn.execute("SELECT role, file_name, size FROM take_files").fetchall() == \
            [("take", "new.wav", 11)]
        notes = list(conn.notifies(timeout=5, stop_after=1))
        assert [n.payload for n in notes] == [str(take_id)]
