"""The team library's schema migrations (engines.team.migrations) on a real PostgreSQL: from an
empty database and from every older version, with the data kept; applied once when two admins
upgrade at once; a failing step leaves the version before it."""

from __future__ import annotations

import itertools
import threading

import psycopg
import pytest

from engines.team import migrations
from engines.team.errors import TeamError
from engines.team.migrations import LATEST, MIGRATIONS, Migration, check_schema, migrate
from tests.team_support import SharedServer, require_postgres

require_postgres()
_names = itertools.count(1)
TABLES = {"schema_version", "team_settings", "takes", "take_files", "ratings", "tags", "notes",
          "designer_logins", "adapters"}


@pytest.fixture
def empty(team_server: SharedServer) -> str:
    """The superuser's connection to a new, empty database."""
    name = f"migrate_{next(_names)}"
    with psycopg.connect(team_server.server.admin_conninfo(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return team_server.server.admin_conninfo(name)


def _versions(conn: psycopg.Connection) -> list[int]:
    return [row[0] for row in conn.execute("SELECT version FROM schema_version ORDER BY 1")]


def _tables(conn: psycopg.Connection) -> set[str]:
    return {row[0] for row in conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}


def test_an_empty_database_gets_every_step_once(empty: str) -> None:
    with psycopg.connect(empty, autocommit=True) as conn:
        assert migrations.schema_version(conn) == 0
        assert migrate(conn) == list(range(1, LATEST + 1))
        assert migrate(conn) == []  # run again: nothing to do
        assert _versions(conn) == list(range(1, LATEST + 1))
        assert _tables(conn) == TABLES
        titles = [row[0] for row in conn.execute("SELECT title FROM schema_version ORDER BY "
                                                 "version")]
        assert titles == [step.title for step in MIGRATIONS]
        check_schema(conn, "here")  # the version this release reads and writes


# What a take, a rating, a tag and a note look like at each version (inserted by hand, as an
# older SA3 Studio would have written them).
_TAKE = ("INSERT INTO takes (take_key, content_sha256, name, prompt, mode, seconds, "
         "sample_rate, samples, provenance, designer, created) VALUES ('k1', 'c1', 'Old', "
         "'footsteps on wet gravel', 't2a', 2.0, 44100, 88200, '{\"seed\": 3}', 'ann', "
         "'2026-01-02T03:04:05Z') RETURNING id")


@pytest.mark.parametrize("start", range(1, LATEST))
def test_every_older_version_migrates_with_its_data_kept(empty: str, start: int) -> None:
    with psycopg.connect(empty, autocommit=True) as conn:
        assert migrate(conn, target=start) == list(range(1, start + 1))
        take_id = conn.execute(_TAKE).fetchone()[0]
        conn.execute("INSERT INTO take_files VALUES (%s, 'take', 'old.wav', %s, 10, 'wav')",
                     (take_id, "a" * 64))
        if start >= 2:
            conn.execute("INSERT INTO ratings (take_id, designer, stars) VALUES (%s, 'ann', 4)",
                         (take_id,))
            conn.execute("INSERT INTO tags (take_id, designer, tag) VALUES (%s, 'ann', 'Wet')",
                         (take_id,))
            conn.execute("UPDATE takes SET rating_avg = 4, rating_count = 1, tag_list = "
                         "'{wet}', tag_text = 'wet' WHERE id = %s", (take_id,))
        assert migrate(conn) == list(range(start + 1, LATEST + 1))
        check_schema(conn, "here")
        row = conn.execute("SELECT name, prompt, provenance, designer, seconds FROM takes"
                           ).fetchone()
        assert row == ("Old", "footsteps on wet gravel", {"seed": 3}, "ann", 2.0)
        assert conn.execute("SELECT file_name, size FROM take_files").fetchall() == \
            [("old.wav", 10)]
        # What the later steps added works on the old row: text search, aggregates, no
        # embedding yet.
        found = conn.execute("SELECT id FROM takes WHERE search @@ to_tsquery('english', "
                             "'footstep:*')").fetchall()
        assert found == [(take_id,)]
        stars = conn.execute("SELECT rating_avg, rating_count, tag_list, embedding IS NULL "
                             "FROM takes").fetchone()
        # Step 5 gives the tags back the case they were given (CatIDs are case-sensitive);
        # a library already past it keeps the aggregate it has.
        tag_list = ["Wet"] if start < 5 else ["wet"]
        assert stars == ((4.0, 1, tag_list, True) if start >= 2 else (0.0, 0, [], True))
        # ... and a new take is announced to watchers (step 4).
        conn.execute(f"LISTEN {migrations.NEW_TAKES_CHANNEL}")
        with psycopg.connect(empty, autocommit=True) as other:
            new_id = other.execute(_TAKE.replace("'k1'", "'k2'")).fetchone()[0]
        notes = list(conn.notifies(timeout=5, stop_after=1))
        assert [(n.channel, n.payload) for n in notes] == \
            [(migrations.NEW_TAKES_CHANNEL, str(new_id))]
        # ... and (step 5) the old take changes only through the functions that check the
        # writer, even for a role granted the table itself.
        conn.execute("GRANT UPDATE ON takes TO sa3_team_publisher")
        conn.execute("SET ROLE sa3_team_publisher")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE takes SET rating_avg = 5")
        conn.execute("RESET ROLE")
        assert conn.execute("SELECT sa3_rate(%s, 'ann', 2)", (take_id,)).fetchone() == (True,)
        assert conn.execute("SELECT rating_avg, rating_count FROM takes WHERE id = %s",
                            (take_id,)).fetchone() == (2.0, 1)


def test_two_admins_upgrading_at_once_apply_each_step_once(empty: str) -> None:
    applied: list[list[int]] = []
    start = threading.Barrier(2)

    def upgrade() -> None:
        with psycopg.connect(empty, autocommit=True) as conn:
            start.wait()
            applied.append(migrate(conn))

    threads = [threading.Thread(target=upgrade) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(sum(applied, [])) == list(range(1, LATEST + 1))
    with psycopg.connect(empty) as conn:
        assert _versions(conn) == list(range(1, LATEST + 1))


def test_a_failing_step_leaves_the_version_before_it(empty: str, monkeypatch) -> None:
    broken = Migration(LATEST + 1, "broken", lambda: "CREATE TABLE half_done (a int); "
                                                     "SELECT 1 / 0")
    monkeypatch.setattr(migrations, "MIGRATIONS", (*MIGRATIONS, broken))
    with psycopg.connect(empty, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.DivisionByZero):
            migrate(conn, target=LATEST + 1)
        assert migrations.schema_version(conn) == LATEST
        assert "half_done" not in _tables(conn)


def test_a_client_is_told_when_the_schema_is_not_its_own(empty: str) -> None:
    with psycopg.connect(empty, autocommit=True) as conn:
        migrate(conn, target=LATEST - 1)
        with pytest.raises(TeamError, match="team init"):
            check_schema(conn, "studio:5432/sa3_team")
        migrate(conn)
        conn.execute("INSERT INTO schema_version (version, title) VALUES (%s, 'future')",
                     (LATEST + 1,))
        with pytest.raises(TeamError, match="newer SA3 Studio"):
            check_schema(conn, "studio:5432/sa3_team")
