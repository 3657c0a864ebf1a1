"""The team library holds against its own logins (engines.team.writes, schema step 5), tried
with direct SQL through psycopg as a publisher would: another designer's take, ratings, tags
and aggregates cannot be changed, a designer with a login of their own is the only one who
writes as them; a store file damaged in place is repaired by publishing the take again; a
search or tag too large for the server is refused as bad input, never worded as a server out
of reach; tags keep the case they were given."""

from __future__ import annotations

import errno
import hashlib
import json
import os
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest

from engines.store.library import ClipLibrary
from engines.team import content_store
from engines.team.connection import parse_line
from engines.team.designers import add_designer
from engines.team.entries import TeamQuery
from engines.team.errors import TeamError, TeamRefused, TeamUnreachable
from engines.team.provisioning import TeamSetup
from engines.team.service import TeamLibrary
from engines.team.session import reworded
from tests.team_support import (
    SharedServer,
    add_take,
    engine_files,
    require_postgres,
    rows,
    team_library,
)

require_postgres()


def _published(team_db: TeamSetup, local, tmp_path: Path) -> int:
    """A take published by alice (4 stars, tag "Rain"), rated 2 by bob: its team id."""
    library, files = local
    take = add_take(library, files, "rain on a tin roof", 1)
    library.update(take.id, rating=4, tags=["Rain"])
    with team_library(team_db, "alice", tmp_path / "a") as alice:
        team_id = alice.publish(library, [take.id]).published[0][1]
    with team_library(team_db, "bob", tmp_path / "b") as bob:
        bob.rate(team_id, 2)
        bob.tag(team_id, ["bob's"])
    return team_id


def _state(admin: str, team_id: int) -> list:
    return [rows(admin, "SELECT designer, stars FROM ratings ORDER BY 1"),
            rows(admin, "SELECT designer, tag FROM tags ORDER BY 1, 2"),
            rows(admin, "SELECT role, file_name FROM take_files ORDER BY 1"),
            rows(admin, "SELECT rating_avg, rating_count, tag_list, designer, prompt FROM takes"
                        " WHERE id = %s", (team_id,)),
            rows(admin, "SELECT count(*) FROM takes"),
            rows(admin, "SELECT designer, body FROM notes ORDER BY 1")]


ATTACKS = [
    # add files to another's take
    "INSERT INTO take_files (take_id, role, file_name, sha256, size, format) VALUES "
    "(%(id)s, 'take', 'evil.wav', repeat('a', 64), 1, 'wav')",
    "UPDATE take_files SET sha256 = repeat('b', 64)",
    # every designer's ratings and tags
    "DELETE FROM ratings",
    "UPDATE ratings SET stars = 1",
    "INSERT INTO ratings (take_id, designer, stars) VALUES (%(id)s, 'carol', 5)",
    "DELETE FROM tags",
    "TRUNCATE ratings",
    "INSERT INTO notes (take_id, designer, body) VALUES (%(id)s, 'alice', 'forged')",
    # the aggregates, and the take itself
    "UPDATE takes SET rating_avg = 5, rating_count = 99",
    "UPDATE takes SET tag_list = '{evil}', tag_text = 'evil'",
    "UPDATE takes SET prompt = 'mine now', designer = 'mallory'",
    "DELETE FROM takes",
    # the functions only the server's own may call, and who owns a name
    "SELECT sa3_refresh(%(id)s)",
    "SELECT sa3_add_tags(%(id)s, 'alice', ARRAY['forged'])",
    "INSERT INTO designer_logins (login, designer) VALUES (session_user, 'alice')",
    "UPDATE team_settings SET value = '/tmp/evil' WHERE key = 'store'",
]


@pytest.fixture(scope="module")
def attacked(team_server: SharedServer, tmp_path_factory: pytest.TempPathFactory):
    """One team library with alice's take, rated and tagged by bob, for every attack (each
    attack must leave it as it was)."""
    tmp_path = tmp_path_factory.mktemp("attacked")
    team_db = team_server.database()
    library = ClipLibrary(tmp_path / "library")
    try:
        team_id = _published(team_db, (library, engine_files(tmp_path / "engines")), tmp_path)
    finally:
        library.close()
    admin = team_server.admin(team_db)
    return team_db, team_id, admin, _state(admin, team_id)


@pytest.mark.parametrize("attack", ATTACKS)
def test_a_publisher_cannot_change_another_designers_take_with_direct_sql(attacked, attack):
    team_db, team_id, admin, before = attacked
    with psycopg.connect(team_db.publisher_line, autocommit=True) as conn, \
            pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute(attack, {"id": team_id})
    assert _state(admin, team_id) == before


def test_the_write_functions_never_reach_past_the_writer(team_server, team_db, local, tmp_path):
    team_id = _published(team_db, local, tmp_path)
    admin = team_server.admin(team_db)
    key = rows(admin, "SELECT take_key FROM takes")[0][0]
    before = _state(admin, team_id)
    evil = json.dumps([{"role": "take", "name": "evil.wav", "sha256": "c" * 64, "size": 5,
                        "format": "wav"}])
    with psycopg.connect(team_db.publisher_line, autocommit=True) as conn:
        # The take's key published again with files of its own: no file is added.
        new = conn.execute("SELECT is_new FROM sa3_publish(%s, %s::jsonb, NULL, 'mallory', "
                           "%s::jsonb, 0, '{}', '')",
                           (key, json.dumps({"content_sha256": "d" * 64, "mode": "t2a",
                                             "seconds": 1, "sample_rate": 1,
                                             "samples": 1, "provenance": {},
                                             "created": "2026-01-01T00:00:00Z"}), evil))
        assert new.fetchone() == (False,)
        # Taking "their" rating away takes away only the writer's own (mallory has none).
        conn.execute("SELECT sa3_rate(%s, 'mallory', 0)", (team_id,))
        conn.execute("SELECT sa3_retag(%s, 'mallory', '{}', ARRAY['Rain', 'bob''s'])",
                     (team_id,))
    assert _state(admin, team_id) == before
    with psycopg.connect(team_db.reader_line, autocommit=True) as conn:
        for call in ("SELECT sa3_rate(%s, 'reader', 5)", "SELECT sa3_note(%s, 'r', 'hi')",
                     "SELECT sa3_retag(%s, 'r', ARRAY['x'], '{}')"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(call, (team_id,))
    assert _state(admin, team_id) == before


def test_a_designer_with_a_login_of_their_own_is_the_only_one_writing_as_them(
        team_server, team_db, local, tmp_path):
    team_id = _published(team_db, local, tmp_path)
    admin = team_server.admin(team_db)
    port = urlsplit(team_db.publisher_line).port
    carol = add_designer(admin, "Carol  Ng", "localhost", port)
    assert carol.designer == "Carol Ng" and carol.login in carol.line
    # Her own line writes as her, whatever name her machine gives.
    with TeamLibrary(parse_line(carol.line), "cng-laptop", tmp_path / "c") as team:
        assert team.rate(team_id, 5).my_rating == 5
        assert team.designer == "Carol Ng"
    with psycopg.connect(carol.line, autocommit=True) as conn:
        conn.execute("SELECT sa3_rate(%s, 'alice', 1)", (team_id,))  # "as alice": as Carol
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("DELETE FROM ratings WHERE designer = 'alice'")
    ratings = dict(rows(admin, "SELECT designer, stars FROM ratings"))
    assert ratings == {"alice": 4, "bob": 2, "Carol Ng": 1}
    # The shared login may no longer write as her, in any case or spacing.
    with team_library(team_db, "carol ng", tmp_path / "s") as shared, \
            pytest.raises(TeamRefused, match="own connection line"):
        shared.rate(team_id, 1)
    with psycopg.connect(team_db.publisher_line, autocommit=True) as conn, \
            pytest.raises(psycopg.errors.DatabaseError) as refused:
        conn.execute("SELECT sa3_rate(%s, ' CAROL   NG ', 0)", (team_id,))
    assert refused.value.sqlstate == "SA301"
    assert dict(rows(admin, "SELECT designer, stars FROM ratings"))["Carol Ng"] == 1
    # A new line for her replaces the old one (a leaked line stops working).
    again = add_designer(admin, "carol ng", "localhost", port)
    assert again.login == carol.login and again.line != carol.line
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(carol.line).close()


def test_a_store_file_damaged_in_place_is_repaired_by_publishing_again(team_server, team_db,
                                                                       local, tmp_path):
    library, files = local
    take = add_take(library, files, "bell", 4, "tone:880")
    with team_library(team_db, "alice", tmp_path / "o") as team:
        team_id = team.publish(library, [take.id]).published[0][1]
        audio = next(f for f in team.entry(team_id).files if f.role == "take")
        stored = team_server.root / "store" / audio.sha256[:2] / audio.sha256
        for damage in ("flip a byte", "cut short"):
            stored.chmod(0o644)
            data = bytearray(stored.read_bytes())
            if damage == "flip a byte":  # the same size: a size check cannot see it
                data[len(data) // 2] ^= 0xFF
            stored.write_bytes(bytes(data if damage == "flip a byte" else data[:100]))
            with pytest.raises(TeamError, match="damaged|no file"):
                team.fetch(team_id, tmp_path / f"broken-{len(data)}")
            again = team.publish(library, [take.id])
            assert again.published == [(take.id, team_id, False)] and not again.problems
            assert hashlib.sha256(stored.read_bytes()).hexdigest() == audio.sha256, damage
            assert not stored.stat().st_mode & 0o222  # read-only again
            fetched = team.fetch(team_id, tmp_path / f"fixed-{damage[0]}", roles=["take"])
            assert hashlib.sha256(fetched[0].read_bytes()).hexdigest() == audio.sha256
    assert not list((team_server.root / "store" / "incoming").glob(f"{audio.sha256}*"))


def test_a_search_or_tag_too_large_is_bad_input_not_a_server_out_of_reach(
        team_server, team_db, local, tmp_path):
    library, files = local
    take = add_take(library, files, "wind", 5)
    with team_library(team_db, "alice", tmp_path / "o") as team:
        team_id = team.publish(library, [take.id]).published[0][1]
        huge = " ".join(f"w{n}" for n in range(20_000))
        for attempt in (lambda: team.find(TeamQuery(text=huge)),
                        lambda: team.find(TeamQuery(text="x" * 5_000)),
                        lambda: team.similar(team_id, TeamQuery(tags=("t" * 4_000,))),
                        lambda: team.tag(team_id, ["x" * 4_000]),
                        lambda: team.tag(team_id, ["\u200b\u200b"]),
                        lambda: team.tag(team_id, [f"t{n}" for n in range(60)])):
            with pytest.raises(TeamError) as refused:
                attempt()
            assert not isinstance(refused.value, TeamUnreachable)
            assert "reached" not in str(refused.value) and "outbox" not in str(refused.value)
        assert team.find(TeamQuery(text=" ".join(["wind"] * 32)))  # the most it takes
        assert team.entry(team_id).tags == [] and team.notice is None
    # What the server itself refuses is worded by its class, not as a server away.
    line = parse_line(team_db.publisher_line)
    with psycopg.connect(team_db.publisher_line, autocommit=True) as conn:
        for statement, words in (
                (f"SELECT to_tsquery('simple', '{' & '.join(['a'] * 20_000)}')", "too large"),
                (f"SELECT sa3_retag({team_id}, 'alice', ARRAY[repeat('x', 4000)], '{{}}')",
                 "refused a value")):
            with pytest.raises(psycopg.Error) as failed:
                conn.execute(statement)
            problem = reworded(failed.value, line)
            assert type(problem) is TeamError and words in str(problem), str(problem)
    stopped = psycopg.OperationalError("connection failed: Connection refused")
    assert isinstance(reworded(stopped, line), TeamUnreachable)


def test_tags_keep_their_case_and_match_without_it(team_db, local, tmp_path):
    library, files = local
    step = add_take(library, files, "footstep on gravel", 6)
    library.update(step.id, tags=["FOOTGrvl", "Gravel Step"])
    with team_library(team_db, "ann", tmp_path / "a") as ann:
        team_id = ann.publish(library, [step.id]).published[0][1]
        assert ann.entry(team_id).tags == ["FOOTGrvl", "Gravel Step"]
    with team_library(team_db, "ben", tmp_path / "b") as ben:
        # ben's spelling of the same tag is one tag, its first spelling kept
        assert ben.tag(team_id, ["footgrvl", "FOLYCloth", "folycloth"]).tags == \
            ["FOLYCloth", "FOOTGrvl", "Gravel Step"]
        for asked in ("footgrvl", "FOOTGRVL", "FOOTGrvl"):
            assert [e.id for e in ben.find(TeamQuery(tags=(asked,)))] == [team_id]
        assert [e.id for e in ben.find(TeamQuery(text="footgrvl"))] == [team_id]
        assert ben.tag(team_id, remove=["FOLYCLOTH"]).tags == ["FOOTGrvl", "Gravel Step"]


def test_a_store_that_refuses_or_is_full_is_said_as_that_and_the_publish_waits(
        team_db, local, tmp_path, monkeypatch):
    library, files = local
    take = add_take(library, files, "hum", 9, "tone:60")
    real_open = content_store.os.open
    for code, kind, words in ((errno.EACCES, TeamRefused, "let you write"),
                              (errno.ENOSPC, TeamError, "make room")):
        def refusing(path, *args, _code=code, **kwargs):
            if str(path).endswith(".partial"):  # the store's temporary, not the outbox's files
                raise OSError(_code, os.strerror(_code))
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr(content_store.os, "open", refusing)
        with team_library(team_db, "alice", tmp_path / "o") as team:
            if kind is TeamRefused:
                with pytest.raises(TeamRefused, match=words):
                    team.publish(library, [take.id])
            else:
                report = team.publish(library, [take.id])
                assert report.published == [] and words in report.problems[0]
                assert report.unreachable is None
            assert team.outbox.count() == 1  # kept for when the drive takes it
        monkeypatch.setattr(content_store.os, "open", real_open)
    with team_library(team_db, "alice", tmp_path / "o") as team:
        assert [r[0] for r in team.send_queued().published] == [take.id]
        assert team.outbox.count() == 0
