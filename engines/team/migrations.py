"""The team library's schema, built by numbered steps and recorded in `schema_version`.

A server made today runs every step from 1; one made by an older SA3 Studio runs the steps it
lacks (`team init` does it, as the server's owner). Each step runs in one transaction under an
advisory lock, so two admins upgrading at once apply it once, and a step that fails leaves the
schema at the version before it. Steps are never edited once released: a change is a new step.

    1  takes and their files (records, provenance, the content-addressed audio)
    2  per-designer ratings, tags and notes, with an aggregate on the take
    3  sound embeddings (pgvector, HNSW, cosine) and text search (tsvector, GIN; tags are
       its weight-A words, so words and tags are found by one index scan)
    4  notifications of new and changed takes (LISTEN/NOTIFY)
    5  writes only through functions that check who writes (engines.team.writes): designer
       logins, guarded tables, tags that keep their case
    6  what nobody may write (engines.team.write_limits): hidden characters in designer names,
       blank or oversized notes and prompts, file names that are not one plain name
    7  a take's files and labels delivered again by its first publisher (engines.team.relabel)
    8  adapter files shared with their takes, and the team's adapter catalogue
       (engines.team.adapter_step)
    9  each entry's sound embedding with its recipe version, and old vectors brought up to
       date only where they are older (engines.team.embedding_step)
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engines.errors import Advice, Remedy
from engines.similarity.embedding import EMBEDDING_DIM
from engines.team import adapter_step, embedding_step, relabel, write_limits, writes
from engines.team.errors import TeamError

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger(__name__)

NEW_TAKES_CHANNEL = "sa3_team_takes"
CHANGED_TAKES_CHANNEL = "sa3_team_changes"
_LOCK_KEY = "sa3_team_migrations"

_V1 = """
CREATE TABLE team_settings (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE takes (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    take_key text NOT NULL UNIQUE,
    content_sha256 text NOT NULL,
    name text NOT NULL DEFAULT '',
    prompt text NOT NULL DEFAULT '',
    negative_prompt text NOT NULL DEFAULT '',
    seed bigint,
    model text NOT NULL DEFAULT '',
    tier text NOT NULL DEFAULT '',
    mode text NOT NULL,
    seconds double precision NOT NULL,
    sample_rate integer NOT NULL,
    samples bigint NOT NULL,
    provenance jsonb NOT NULL,
    designer text NOT NULL,
    created timestamptz NOT NULL,
    published timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX takes_newest ON takes (id DESC);
CREATE INDEX takes_model ON takes (model, id DESC);
CREATE INDEX takes_designer ON takes (designer, id DESC);
CREATE TABLE take_files (
    take_id bigint NOT NULL REFERENCES takes (id) ON DELETE CASCADE,
    role text NOT NULL,
    file_name text NOT NULL,
    sha256 text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    size bigint NOT NULL CHECK (size >= 0),
    format text NOT NULL DEFAULT '',
    PRIMARY KEY (take_id, sha256)
);
"""

_V2 = """
CREATE TABLE ratings (
    take_id bigint NOT NULL REFERENCES takes (id) ON DELETE CASCADE,
    designer text NOT NULL,
    stars smallint NOT NULL CHECK (stars BETWEEN 0 AND 5),
    updated timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (take_id, designer)
);
CREATE TABLE tags (
    take_id bigint NOT NULL REFERENCES takes (id) ON DELETE CASCADE,
    designer text NOT NULL,
    tag text NOT NULL,
    added timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (take_id, designer, tag)
);
CREATE TABLE notes (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    take_id bigint NOT NULL REFERENCES takes (id) ON DELETE CASCADE,
    designer text NOT NULL,
    body text NOT NULL,
    written timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX notes_once ON notes (take_id, designer, md5(body));
ALTER TABLE takes
    ADD COLUMN rating_avg real NOT NULL DEFAULT 0,
    ADD COLUMN rating_count integer NOT NULL DEFAULT 0,
    ADD COLUMN tag_list text[] NOT NULL DEFAULT '{}',
    ADD COLUMN tag_text text NOT NULL DEFAULT '';
"""


def _v3() -> str:
    # The dimension is the embedding's of this release (engines.similarity); recorded so a
    # client with another one is told rather than fed vectors it cannot compare.
    return f"""
CREATE EXTENSION IF NOT EXISTS vector;
ALTER TABLE takes ADD COLUMN embedding vector({EMBEDDING_DIM});
CREATE INDEX takes_embedding ON takes USING hnsw (embedding vector_cosine_ops);
ALTER TABLE takes ADD COLUMN search tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english'::regconfig, name || ' ' || prompt), 'D') ||
    setweight(to_tsvector('english'::regconfig, tag_text), 'A')) STORED;
CREATE INDEX takes_search ON takes USING gin (search);
INSERT INTO team_settings (key, value) VALUES ('embedding_dim', '{EMBEDDING_DIM}')
    ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;
"""


_V4 = f"""
CREATE FUNCTION sa3_new_take() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('{NEW_TAKES_CHANNEL}', NEW.id::text);
    RETURN NULL;
END $$;
CREATE TRIGGER takes_new AFTER INSERT ON takes
    FOR EACH ROW EXECUTE FUNCTION sa3_new_take();
CREATE FUNCTION sa3_changed_take() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('{CHANGED_TAKES_CHANNEL}', NEW.id::text);
    RETURN NULL;
END $$;
CREATE TRIGGER takes_changed AFTER UPDATE OF rating_avg, rating_count, tag_list ON takes
    FOR EACH ROW EXECUTE FUNCTION sa3_changed_take();
"""


@dataclass(frozen=True)
class Migration:
    version: int
    title: str
    sql: Callable[[], str]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "takes and their files", lambda: _V1),
    Migration(2, "per-designer ratings, tags and notes", lambda: _V2),
    Migration(3, "sound embeddings and text search", _v3),
    Migration(4, "notifications of new and changed takes", lambda: _V4),
    Migration(5, "writes only through functions that check the writer", writes.step_sql),
    Migration(6, "plain designer and file names, bounded text", write_limits.step_sql),
    Migration(7, "files and labels delivered again by the first publisher",
              lambda: relabel.step_sql(CHANGED_TAKES_CHANNEL)),
    Migration(8, "adapter files shared with their takes", adapter_step.step_sql),
    Migration(9, "sound embeddings with their recipe version", embedding_step.step_sql),
)
LATEST = MIGRATIONS[-1].version


def schema_version(conn: psycopg.Connection) -> int:
    """The version the database's schema is at; 0 for a database without one."""
    exists = conn.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return 0
    row = conn.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()
    return int(row[0]) if row else 0


def migrate(conn: psycopg.Connection, target: int = LATEST) -> list[int]:
    """Bring the schema up to `target`, one step per transaction; the versions applied.
    `conn` is an autocommit connection of the database's owner (or a superuser)."""
    applied: list[int] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (_LOCK_KEY,))
        conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version integer PRIMARY KEY, "
                     "title text NOT NULL, applied timestamptz NOT NULL DEFAULT now())")
    for step in MIGRATIONS:
        if step.version > target:
            break
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (_LOCK_KEY,))
            if schema_version(conn) >= step.version:
                continue
            log.info("Team library: schema step %d (%s)", step.version, step.title)
            conn.execute(step.sql())
            conn.execute("INSERT INTO schema_version (version, title) VALUES (%s, %s)",
                         (step.version, step.title))
            applied.append(step.version)
    return applied


def check_schema(conn: psycopg.Connection, where: str) -> None:
    """TeamError (one sentence) unless the schema is the one this release reads and writes."""
    version = schema_version(conn)
    if version == LATEST:
        row = conn.execute("SELECT value FROM team_settings WHERE key = 'embedding_dim'"
                           ).fetchone()
        if row is not None and row[0] != str(EMBEDDING_DIM):
            raise TeamError(f"The team library at {where} keeps sound embeddings of {row[0]} "
                            f"numbers and this SA3 Studio makes {EMBEDDING_DIM}; use the SA3 "
                            "Studio release the rest of the team uses.")
        return
    if version > LATEST:
        raise TeamError(f"The team library at {where} was set up by a newer SA3 Studio "
                        f"(schema {version}, this one knows {LATEST}); update SA3 Studio on "
                        "this machine.")
    raise TeamError(Advice(f"The team library at {where} has schema {version} and this SA3 "
                           f"Studio needs {LATEST}; ask whoever runs the team's server to run "
                           "{0} there, which upgrades it.", Remedy.command("team init")))
