"""The SQL of the team library: publishing a bundle, per-designer ratings, tags and notes, and
finding takes by text, tags, rating, model and sound.

Every change goes through the server's functions (engines.team.writes), which check who
writes. No lost updates with many designers at once: ratings and tags are rows per (take,
designer), written by upserts, so two designers never write the same row; the aggregate on the
take (average stars, every tag) is recomputed in the same transaction after taking the take's
row lock first, so each recomputation reads every rating committed before it (READ COMMITTED
gives each statement a fresh snapshot, taken there after the lock is held).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import TYPE_CHECKING

from engines.finish.finished_take import strict_json
from engines.similarity.embedding import EMBEDDING_VERSION
from engines.team.bundle import TakeBundle
from engines.team.entries import ENTRY_COLUMNS, MAX_LIMIT, TeamEntry, TeamFile, TeamQuery
from engines.team.writes import WRITER_ROLE

if TYPE_CHECKING:
    import psycopg

_WORD = re.compile(r"\w+", re.UNICODE)


def vector_text(vector: list[float]) -> str:
    """A vector as pgvector reads it ("[0.1,0.2,...]")."""
    return "[" + ",".join(f"{value:.8g}" for value in vector) + "]"


def insert_bundle(conn: psycopg.Connection, bundle: TakeBundle) -> tuple[int, bool]:
    """Publish one bundle in one transaction (the server's sa3_publish, engines.team.writes,
    with its vector's recipe version: sa3_publish_versioned, engines.team.embedding_step):
    (its team id, whether it is new). Files of an entry are those of its first publish; a
    later publish of the same take adds only the designer's rating, tags and notes (and, by
    its first publisher, new files and labels: `publish_relabelled`)."""
    take = {**bundle.fields, "provenance": bundle.provenance}
    # The vector goes with its recipe version (engines.team.embedding_step).
    row = conn.execute(
        "SELECT team_id, is_new FROM sa3_publish_versioned(%s, %s::jsonb, %s, %s, %s, "
        "%s::jsonb, %s, %s::text[], %s)",
        (bundle.key, json.dumps(strict_json(take), ensure_ascii=False),
         vector_text(bundle.embedding) if bundle.embedding else None,
         bundle.embedding_version, bundle.designer,
         json.dumps(_file_rows(bundle)), bundle.rating, list(bundle.tags),
         bundle.notes.strip())).fetchone()
    return int(row[0]), bool(row[1])


def publish_relabelled(conn: psycopg.Connection, bundle: TakeBundle) -> tuple[int, bool, bool]:
    """Publish `bundle` and point its entry at the bundle's files and labels (the server's
    sa3_relabel, engines.team.relabel), in one transaction: (team id, new, relabelled). The
    server refuses anyone but the take's first publisher; the files must be in the store."""
    with conn.transaction():
        team_id, new = insert_bundle(conn, bundle)
        row = conn.execute("SELECT sa3_relabel(%s, %s, %s::jsonb, %s::jsonb)",
                           (bundle.key, bundle.designer,
                            json.dumps(published_labels(bundle.provenance) or None,
                                       ensure_ascii=False),
                            json.dumps(_file_rows(bundle)))).fetchone()
    return team_id, new, bool(row and row[0])


def published_labels(provenance: object) -> dict[str, str]:
    """The UCS labels a team take's provenance keeps (the local library's sidecar's
    library.labels: only those given); {} for none."""
    library = provenance.get("library") if isinstance(provenance, dict) else None
    labels = library.get("labels") if isinstance(library, dict) else None
    return dict(labels) if isinstance(labels, dict) else {}


def _file_rows(bundle: TakeBundle) -> list[dict]:
    return [{"role": f.role, "name": f.file_name, "sha256": f.sha256, "size": f.size,
             "format": f.format} for f in bundle.files]


def may_publish(conn: psycopg.Connection) -> bool:
    """Whether this login may publish, rate and tag (a read-only one may not)."""
    row = conn.execute("SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = %s AND "
                       "pg_has_role(oid, 'MEMBER'))", (WRITER_ROLE,)).fetchone()
    return bool(row and row[0])


def writer(conn: psycopg.Connection, designer: str) -> str | None:
    """The designer this login writes as (a login of a designer's own names its designer,
    whatever `designer` says); None for a login that may only read."""
    row = conn.execute("SELECT sa3_whoami(%s)", (designer,)).fetchone()
    return row[0] if row else None


def rate(conn: psycopg.Connection, take_id: int, designer: str, stars: int) -> bool:
    """The designer's stars for a take (0 takes their rating away); False: no such take."""
    row = conn.execute("SELECT sa3_rate(%s, %s, %s)", (take_id, designer, stars)).fetchone()
    return bool(row and row[0])


def retag(conn: psycopg.Connection, take_id: int, designer: str, add: list[str],
          remove: list[str]) -> bool:
    """Add and remove the designer's own tags of a take; False: no such take."""
    row = conn.execute("SELECT sa3_retag(%s, %s, %s::text[], %s::text[])",
                       (take_id, designer, add, remove)).fetchone()
    return bool(row and row[0])


def add_note(conn: psycopg.Connection, take_id: int, designer: str, body: str) -> bool:
    row = conn.execute("SELECT sa3_note(%s, %s, %s)", (take_id, designer, body)).fetchone()
    return bool(row and row[0])


def text_query(text: str, tags: tuple[str, ...] = ()) -> str | None:
    """One tsquery for the words of `text`, each also matching words it starts ("foot"
    finds "footsteps"), and the words of each tag among the take's tags (weight A); None
    when there is nothing to match. One query, so one scan of the one text index answers
    both: a common tag and a rare word cost what the rare word costs."""
    words = [f"{word}:*" for word in _WORD.findall(text.lower())]
    words += [f"{word}:A" for tag in tags for word in _WORD.findall(tag.lower())]
    return " & ".join(words) if words else None


def _filters(query: TeamQuery, params: dict) -> list[str]:
    where = []
    words = text_query(query.text, query.tags)
    if words is not None:
        params["words"] = words
        where.append("t.search @@ to_tsquery('english', %(words)s)")
    if query.tags:  # the exact tags (the index found the takes with their words), without
        params["tags"] = list(query.tags)  # case, lowered as the server lowers (not Python)
        where.append("ARRAY(SELECT lower(x) FROM unnest(t.tag_list) AS x) @> "
                     "ARRAY(SELECT lower(x) FROM unnest(%(tags)s::text[]) AS x)")
    if query.min_rating > 0:
        params["min_rating"] = query.min_rating
        where.append("t.rating_avg >= %(min_rating)s")
    if query.model:
        params["model"] = query.model
        where.append("t.model = %(model)s")
    if query.designer:
        params["designer"] = query.designer
        where.append("t.designer = %(designer)s")
    if query.before_id is not None:
        params["before"] = query.before_id
        where.append("t.id < %(before)s")
    return where


def find(conn: psycopg.Connection, query: TeamQuery, me: str) -> list[TeamEntry]:
    params: dict = {"me": me, "limit": max(1, min(query.limit, MAX_LIMIT))}
    where = _filters(query, params)
    sql = (f"SELECT {ENTRY_COLUMNS} FROM takes t "
           + (f"WHERE {' AND '.join(where)} " if where else "")
           + "ORDER BY t.id DESC LIMIT %(limit)s")
    return [TeamEntry.from_row(row) for row in conn.execute(sql, params).fetchall()]


def _near_filters(take_id: int, query: TeamQuery, params: dict) -> list[str]:
    """The conditions on the other takes of a "more like this" (the query's, text aside)."""
    params["id"] = take_id
    return ["t.id <> %(id)s", *_filters(TeamQuery(tags=query.tags, min_rating=query.min_rating,
                                                  model=query.model, designer=query.designer),
                                        params)]


def not_compared(conn: psycopg.Connection, take_id: int, query: TeamQuery,
                 version: int = EMBEDDING_VERSION) -> tuple[int, int, int] | None:
    """(take `take_id`'s embedding version, how many takes the query would compare with it
    whose vectors are older than `version` or missing, how many newer); None: no such take.
    Only vectors of one recipe compare (engines.team.embedding_step)."""
    seed = conn.execute("SELECT embedding_version FROM takes WHERE id = %s",
                        (take_id,)).fetchone()
    if seed is None:
        return None
    params: dict = {"version": version}
    where = _near_filters(take_id, query, params)
    # A missing vector is always version 1 (the step's default), so "older" counts it too.
    row = conn.execute(
        "SELECT count(*) FILTER (WHERE t.embedding_version < %(version)s), "
        "count(*) FILTER (WHERE t.embedding_version > %(version)s) FROM takes t "
        f"WHERE {' AND '.join(where)} AND t.embedding_version <> %(version)s",
        params).fetchone()
    return int(seed[0]), int(row[0]), int(row[1])


def similar(conn: psycopg.Connection, take_id: int, query: TeamQuery,
            me: str, version: int = EMBEDDING_VERSION) -> list[TeamEntry] | None:
    """The takes that sound most like take `take_id`, nearest first (with the query's
    filters, text aside), among those whose vectors are of recipe `version` (no other
    compares: `not_compared` counts them); None when there is no such take, [] when it has
    no embedding of that version."""
    row = conn.execute("SELECT embedding::text FROM takes WHERE id = %s AND "
                       "(embedding IS NULL OR embedding_version = %s)",
                       (take_id, version)).fetchone()
    if row is None:
        exists = conn.execute("SELECT 1 FROM takes WHERE id = %s", (take_id,)).fetchone()
        return [] if exists else None
    if row[0] is None:
        return []
    params: dict = {"me": me, "limit": max(1, min(query.limit, MAX_LIMIT)), "vector": row[0],
                    "version": version}
    where = ["t.embedding IS NOT NULL", "t.embedding_version = %(version)s",
             *_near_filters(take_id, query, params)]
    # The HNSW index answers ORDER BY distance LIMIT n; the outer sort puts back the order
    # a relaxed (filtered) index scan may give up.
    sql = (f"SELECT * FROM (SELECT {ENTRY_COLUMNS}, t.embedding <=> %(vector)s::vector AS d "
           f"FROM takes t WHERE {' AND '.join(where)} "
           "ORDER BY t.embedding <=> %(vector)s::vector LIMIT %(limit)s) near ORDER BY d")
    return [TeamEntry.from_row(row[:-1], float(row[-1]))
            for row in conn.execute(sql, params).fetchall()]


def entry(conn: psycopg.Connection, take_id: int, me: str) -> TeamEntry | None:
    row = conn.execute(f"SELECT {ENTRY_COLUMNS} FROM takes t WHERE t.id = %(id)s",
                       {"me": me, "id": take_id}).fetchone()
    if row is None:
        return None
    files = [TeamFile(*file_row) for file_row in conn.execute(
        "SELECT role, file_name, sha256, size, format FROM take_files WHERE take_id = %s "
        "ORDER BY role, file_name", (take_id,)).fetchall()]
    return replace(TeamEntry.from_row(row), files=files)


def newer_than(conn: psycopg.Connection, last_id: int, me: str,
               limit: int = MAX_LIMIT) -> list[TeamEntry]:
    """Takes published after take `last_id`, oldest first (what a watcher has not seen)."""
    sql = (f"SELECT {ENTRY_COLUMNS} FROM takes t WHERE t.id > %(last)s ORDER BY t.id "
           "LIMIT %(limit)s")
    return [TeamEntry.from_row(row) for row in
            conn.execute(sql, {"me": me, "last": last_id, "limit": limit}).fetchall()]
