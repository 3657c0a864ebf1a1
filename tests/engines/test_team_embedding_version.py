"""The team library's sound embeddings carry their recipe version (schema step 9,
engines.team.embedding_step) on a real PostgreSQL: rows of older releases read as version 1,
"more like this" compares only vectors of this release's recipe and says how many it left out,
`reembed` makes old vectors again from the stored audio (checked against a vector computed here
from the local take), and the server takes a vector only where the stored one is older."""

from __future__ import annotations

import json

import numpy as np
import psycopg
import pytest

from engines.similarity.embedding import EMBEDDING_DIM, EMBEDDING_VERSION, take_embedding
from engines.team import migrations
from engines.team.bundle import TakeBundle
from engines.team.entries import TeamQuery
from engines.team.errors import TeamError, TeamRefused
from engines.team.records import insert_bundle, vector_text
from tests.team_support import add_take, require_postgres, rows, team_library

require_postgres()
KINDS = {"low hum": "tone:110", "low drone": "tone:120", "hiss": "noise",
         "high whistle": "tone:4000", "footsteps on gravel": "noise"}


def _published(team_db, local, tmp_path, kinds=KINDS) -> tuple[dict[str, int], dict]:
    """Each of `kinds` published by alice: (prompt -> team id, prompt -> local record)."""
    library, files = local
    records = {p: add_take(library, files, p, n, kind) for n, (p, kind) in
               enumerate(kinds.items())}
    with team_library(team_db, "alice", tmp_path / "outbox") as team:
        report = team.publish(library, [r.id for r in records.values()])
    return {p: report.published[n][1] for n, p in enumerate(kinds)}, records


def _stored(admin: str) -> dict[int, tuple[int, np.ndarray | None]]:
    """Every entry's (version, vector) as the server holds them."""
    return {row[0]: (row[1], None if row[2] is None else np.array(json.loads(row[2])))
            for row in rows(admin, "SELECT id, embedding_version, embedding::text FROM takes")}


def _make_old(admin: str, ids: list[int], vector: str | None = None, version: int = 1) -> None:
    """What an older release left: entries of another recipe (as the owner, past the guards)."""
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("UPDATE takes SET embedding_version = %s, embedding = coalesce(%s::vector,"
                     " embedding) WHERE id = ANY(%s)", (version, vector, ids))


def test_rows_of_an_older_release_are_version_one_and_a_publish_says_its_own(
        team_server, team_db, local, tmp_path):
    # An entry written at schema step 8 (as release 8 wrote it), then upgraded.
    name = f"{team_db.publisher_line.rsplit('/', 1)[-1]}_old"
    with psycopg.connect(team_server.server.admin_conninfo(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    with psycopg.connect(team_server.server.admin_conninfo(name), autocommit=True) as conn:
        migrations.migrate(conn, target=8)
        conn.execute("INSERT INTO takes (take_key, content_sha256, mode, seconds, sample_rate, "
                     "samples, provenance, designer, created, embedding) VALUES ('k', 'c', "
                     "'t2a', 1, 44100, 44100, '{}', 'ann', now(), %s::vector)",
                     (vector_text([1.0] + [0.0] * (EMBEDDING_DIM - 1)),))
        assert migrations.migrate(conn) == [9]
        assert conn.execute("SELECT embedding_version FROM takes").fetchall() == [(1,)]
    ids, _ = _published(team_db, local, tmp_path, {"rain": "noise"})
    admin = team_server.admin(team_db)
    assert _stored(admin)[ids["rain"]][0] == EMBEDDING_VERSION


def test_more_like_this_compares_only_this_recipe_and_says_what_it_left_out(
        team_server, team_db, local, tmp_path):
    ids, _ = _published(team_db, local, tmp_path)
    admin = team_server.admin(team_db)
    seed = _stored(admin)[ids["low hum"]][1]
    # Two old entries holding the seed's very vector: compared, they would come first.
    _make_old(admin, [ids["hiss"], ids["high whistle"]], vector_text(seed.tolist()))
    _make_old(admin, [ids["footsteps on gravel"]], version=EMBEDDING_VERSION + 1)
    with team_library(team_db, "bob", tmp_path / "bob") as team:
        near = team.near(ids["low hum"])
        assert [e.prompt for e in near.entries] == ["low drone"]
        assert team.similar(ids["low hum"]) == near.entries
        assert (near.older, near.newer) == (2, 1)
        older, newer = near.left_out()
        assert older.startswith("2 team takes were not compared") and "reembed" in older
        assert newer.startswith("1 team take was not compared") and "newer" in newer
        # Filters count only the takes they would have compared.
        assert team.near(ids["low hum"], TeamQuery(model="no such")).older == 0
        # A take of another recipe is itself compared with nothing, and told why.
        with pytest.raises(TeamError, match="older recipe .*team reembed"):
            team.near(ids["hiss"])
        with pytest.raises(TeamError, match="newer SA3 Studio"):
            team.near(ids["footsteps on gravel"])
        with pytest.raises(TeamError, match="no take #999"):
            team.near(999)
        team.reembed()  # the old ones only: the newer one stays as its release made it
        near = team.near(ids["low hum"])
        assert (near.older, near.newer) == (0, 1) and near.left_out() == [newer]
        assert {"hiss", "high whistle"} <= {e.prompt for e in near.entries}
        _make_old(admin, [ids["footsteps on gravel"]], version=EMBEDDING_VERSION)
        near = team.near(ids["low hum"])
    assert near.left_out() == [] and len(near.entries) == 4  # nothing left out: nothing said


def test_reembed_makes_old_vectors_again_from_the_stored_audio(team_server, team_db, local,
                                                               tmp_path):
    ids, records = _published(team_db, local, tmp_path)
    library, _ = local
    admin = team_server.admin(team_db)
    old = [ids["low hum"], ids["hiss"], ids["high whistle"]]
    _make_old(admin, old, vector_text([1.0] + [0.0] * (EMBEDDING_DIM - 1)))
    with psycopg.connect(admin, autocommit=True) as conn:  # one from before step 3: none
        conn.execute("UPDATE takes SET embedding = NULL WHERE id = %s", (ids["hiss"],))
    seen: list[tuple[int, int]] = []
    with team_library(team_db, "bob", tmp_path / "bob") as team:
        report = team.reembed(lambda done, total: seen.append((done, total)))
        again = team.reembed()
    assert (report.stale, report.updated, report.current, report.problems) == (3, 3, 0, [])
    assert seen == [(1, 3), (2, 3), (3, 3)]
    assert (again.stale, again.updated) == (0, 0)
    stored = _stored(admin)
    for prompt, take_id in ids.items():
        # The oracle: the vector of the local take's own samples, computed here.
        expected = take_embedding(library.load_audio(records[prompt].id), 44100)
        version, vector = stored[take_id]
        assert version == EMBEDDING_VERSION
        assert vector == pytest.approx(expected, abs=1e-5), prompt


def test_reembed_says_an_entry_it_cannot_do_and_does_the_rest(team_server, team_db, local,
                                                              tmp_path):
    ids, _ = _published(team_db, local, tmp_path, {"creak": "noise", "thud": "tone:80"})
    admin = team_server.admin(team_db)
    _make_old(admin, list(ids.values()))
    (sha,) = rows(admin, "SELECT sha256 FROM take_files WHERE take_id = %s AND role = 'take'",
                  (ids["creak"],))[0]
    stored = team_server.root / "store" / sha[:2] / sha
    kept = stored.read_bytes()
    stored.chmod(0o644)
    stored.write_bytes(kept[:-10] + b"0123456789")  # damaged on the drive
    try:
        with team_library(team_db, "bob", tmp_path / "bob") as team:
            report = team.reembed()
    finally:
        stored.write_bytes(kept)
        stored.chmod(0o444)
    assert (report.updated, len(report.problems)) == (1, 1)
    (problem,) = report.problems
    assert f"Team take #{ids['creak']}" in problem and "damaged" in problem
    assert "\n" not in problem
    versions = {take_id: v for take_id, (v, _) in _stored(admin).items()}
    assert versions == {ids["creak"]: 1, ids["thud"]: EMBEDDING_VERSION}


def test_the_server_takes_a_vector_only_where_the_stored_one_is_older(
        team_server, team_db, local, tmp_path):
    ids, _ = _published(team_db, local, tmp_path, {"rain": "noise", "wind": "tone:300"})
    admin = team_server.admin(team_db)
    before = _stored(admin)
    other = vector_text([0.0] * (EMBEDDING_DIM - 1) + [1.0])
    with psycopg.connect(team_db.publisher_line, autocommit=True) as conn:
        # No table writes for the publisher, whatever it asks.
        for sql in ("UPDATE takes SET embedding_version = 99",
                    f"UPDATE takes SET embedding = '{other}'"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql)
        # The definer refuses to replace a current vector, and a "version" that is no version.
        assert conn.execute("SELECT sa3_reembed(%s, 'mallory', %s, %s)",
                            (ids["rain"], other, EMBEDDING_VERSION)).fetchone() == (False,)
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            conn.execute("SELECT sa3_reembed(%s, 'mallory', %s, 1)", (ids["rain"], other))
        # A publish of a take the team has, with another vector, leaves its vector too.
        take = rows(admin, "SELECT take_key FROM takes WHERE id = %s", (ids["wind"],))[0][0]
        bundle = TakeBundle(take, {"mode": "t2a", "seconds": 1, "sample_rate": 44100,
                                   "samples": 44100, "content_sha256": "c",
                                   "created": "2026-01-01T00:00:00Z"}, {}, "mallory", 0,
                            [], "", [0.0] * (EMBEDDING_DIM - 1) + [1.0],
                            embedding_version=EMBEDDING_VERSION)
        assert insert_bundle(conn, bundle) == (ids["wind"], False)
    assert _same(_stored(admin), before)
    # A login that may only read makes no vector, even of a stale entry.
    _make_old(admin, [ids["rain"]])
    with team_library(team_db, "rita", tmp_path / "rita", reader=True) as reader:
        with pytest.raises(TeamRefused):
            reader.reembed()
    with psycopg.connect(team_db.reader_line, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT sa3_reembed(%s, 'rita', %s, %s)",
                         (ids["rain"], other, EMBEDDING_VERSION))


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        a[k][0] == b[k][0] and np.allclose(a[k][1], b[k][1]) for k in a)


def test_a_bundle_queued_by_an_older_release_is_published_as_old(team_server, team_db):
    """A bundle waiting in the outbox from before versions were sent has none in its JSON: its
    vector was made by the old recipe, so the entry is stale, never taken as current."""
    fields = {"mode": "t2a", "seconds": 1, "sample_rate": 44100, "samples": 44100,
              "content_sha256": "c", "created": "2026-01-01T00:00:00Z"}
    old_json = json.dumps({"key": "q" * 64, "fields": fields, "provenance": {},
                           "designer": "ann", "rating": 0, "tags": [], "notes": "",
                           "embedding": [1.0] + [0.0] * (EMBEDDING_DIM - 1), "files": []})
    bundle = TakeBundle.from_json(old_json)
    with psycopg.connect(team_db.publisher_line, autocommit=True) as conn:
        team_id, new = insert_bundle(conn, bundle)
    assert new and _stored(team_server.admin(team_db))[team_id][0] == 1


def test_a_republish_brings_a_stale_entry_up_to_date(team_server, team_db, local, tmp_path):
    ids, records = _published(team_db, local, tmp_path, {"rain": "noise"})
    library, _ = local
    admin = team_server.admin(team_db)
    _make_old(admin, [ids["rain"]], vector_text([1.0] + [0.0] * (EMBEDDING_DIM - 1)))
    with team_library(team_db, "bob", tmp_path / "bob") as team:
        assert team.publish(library, [records["rain"].id]).published[0][2] is False
    version, vector = _stored(admin)[ids["rain"]]
    assert version == EMBEDDING_VERSION
    assert vector == pytest.approx(take_embedding(library.load_audio(records["rain"].id),
                                                  44100), abs=1e-5)
