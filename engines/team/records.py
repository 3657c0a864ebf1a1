"""The SQL of the team library: publishing a bundle, per-designer ratings, tags and notes, and
finding takes by text, tags, rating, model and sound.

No lost updates with many designers at once: ratings and tags are rows per (take, designer),
written by upserts, so two designers never write the same row; the aggregate on the take
(average stars, every tag) is recomputed in the same transaction after taking the take's row
lock first, so each recomputation reads every rating committed before it (READ COMMITTED gives
each statement a fresh snapshot, taken here after the lock is held).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import TYPE_CHECKING

from engines.finish.take import strict_json
from engines.team.bundle import TakeBundle
from engines.team.entries import ENTRY_COLUMNS, MAX_LIMIT, TeamEntry, TeamFile, TeamQuery

if TYPE_CHECKING:
    import psycopg

_WORD = re.compile(r"\w+", re.UNICODE)

_PUBLISH_TAKE = """
WITH new AS (
    INSERT INTO takes (take_key, content_sha256, name, prompt, negative_prompt, seed, model,
                       tier, mode, seconds, sample_rate, samples, provenance, designer,
                       created, embedding, rating_avg, rating_count, tag_list, tag_text)
    VALUES (%(key)s, %(content_sha256)s, %(name)s, %(prompt)s, %(negative_prompt)s, %(seed)s,
            %(model)s, %(tier)s, %(mode)s, %(seconds)s, %(sample_rate)s, %(samples)s,
            %(provenance)s::jsonb, %(designer)s, %(created)s, %(embedding)s::vector,
            %(stars)s, %(rated)s,
            coalesce((SELECT array_agg(DISTINCT lower(x) ORDER BY lower(x))
                      FROM unnest(%(tags)s::text[]) AS x), '{}'),
            coalesce((SELECT string_agg(DISTINCT lower(x), ' ' ORDER BY lower(x))
                      FROM unnest(%(tags)s::text[]) AS x), ''))
    ON CONFLICT (take_key) DO NOTHING
    RETURNING id
), files AS (
    INSERT INTO take_files (take_id, role, file_name, sha256, size, format)
    SELECT new.id, f.role, f.name, f.sha256, f.size, f.format
    FROM new, unnest(%(roles)s::text[], %(names)s::text[], %(shas)s::text[],
                     %(sizes)s::bigint[], %(formats)s::text[])
              AS f (role, name, sha256, size, format)
    ON CONFLICT DO NOTHING
)
SELECT id FROM new
"""


def _aggregate(which: str) -> str:
    """The statement that recomputes the aggregates of the take(s) `which` names, from every
    designer's rows; a take whose aggregates come out as they are is left alone (a new take
    is inserted with its publisher's own), so no row version, index entry or notification
    is made for nothing."""
    return f"""
WITH fresh AS (
    SELECT t.id,
        coalesce((SELECT avg(stars) FROM ratings r WHERE r.take_id = t.id), 0)::real AS stars,
        (SELECT count(*) FROM ratings r WHERE r.take_id = t.id)::integer AS rated,
        coalesce((SELECT array_agg(DISTINCT lower(tag) ORDER BY lower(tag))
                  FROM tags g WHERE g.take_id = t.id), '{{}}') AS tag_list,
        coalesce((SELECT string_agg(DISTINCT lower(tag), ' ' ORDER BY lower(tag))
                  FROM tags g WHERE g.take_id = t.id), '') AS tag_text
    FROM takes t WHERE {which}
)
UPDATE takes t SET rating_avg = fresh.stars, rating_count = fresh.rated,
                   tag_list = fresh.tag_list, tag_text = fresh.tag_text
FROM fresh
WHERE t.id = fresh.id AND (t.rating_avg, t.rating_count, t.tag_list, t.tag_text)
    IS DISTINCT FROM (fresh.stars, fresh.rated, fresh.tag_list, fresh.tag_text)
"""


def vector_text(vector: list[float]) -> str:
    """A vector as pgvector reads it ("[0.1,0.2,...]")."""
    return "[" + ",".join(f"{value:.8g}" for value in vector) + "]"


def insert_bundle(conn: psycopg.Connection, bundle: TakeBundle) -> tuple[int, bool]:
    """Publish one bundle in one transaction: (its team id, whether it is new). Files of an
    entry are those of its first publish; a later publish of the same take adds only the
    designer's rating, tags and notes. Every statement names the take by its key, so the
    whole transaction goes to the server in one pipeline: one round trip, not ten."""
    files = bundle.files
    values = {**bundle.fields, "key": bundle.key, "designer": bundle.designer,
              "provenance": json.dumps(strict_json(bundle.provenance), ensure_ascii=False),
              "embedding": vector_text(bundle.embedding) if bundle.embedding else None,
              "roles": [f.role for f in files], "names": [f.file_name for f in files],
              "shas": [f.sha256 for f in files], "sizes": [f.size for f in files],
              "formats": [f.format for f in files], "stars": bundle.rating,
              "rated": 1 if bundle.rating else 0, "tags": list(bundle.tags),
              "notes": bundle.notes.strip()}
    with conn.pipeline(), conn.transaction():
        inserted = conn.execute(_PUBLISH_TAKE, values)
        # The row lock before the designer's rows and the aggregate: see the module docstring.
        locked = conn.execute("SELECT id FROM takes WHERE take_key = %(key)s FOR UPDATE",
                              values)
        if bundle.rating:
            conn.execute("INSERT INTO ratings (take_id, designer, stars) SELECT id, "
                         "%(designer)s, %(stars)s FROM takes WHERE take_key = %(key)s "
                         "ON CONFLICT (take_id, designer) DO UPDATE SET stars = "
                         "EXCLUDED.stars, updated = now()", values)
        if bundle.tags:
            conn.execute("INSERT INTO tags (take_id, designer, tag) SELECT t.id, "
                         "%(designer)s, tag FROM takes t, unnest(%(tags)s::text[]) AS tag "
                         "WHERE t.take_key = %(key)s ON CONFLICT DO NOTHING", values)
        if values["notes"]:
            conn.execute("INSERT INTO notes (take_id, designer, body) SELECT id, "
                         "%(designer)s, %(notes)s FROM takes WHERE take_key = %(key)s "
                         "ON CONFLICT DO NOTHING", values)
        if bundle.rating or bundle.tags or values["notes"]:
            conn.execute(_aggregate("t.take_key = %(key)s"), values)
    return int(locked.fetchone()[0]), inserted.fetchone() is not None


def _lock(conn: psycopg.Connection, take_id: int) -> bool:
    """Hold the take's row until the transaction ends; False when there is no such take."""
    return conn.execute("SELECT 1 FROM takes WHERE id = %s FOR UPDATE",
                        (take_id,)).fetchone() is not None


def _upsert_rating(conn: psycopg.Connection, take_id: int, designer: str, stars: int) -> None:
    conn.execute("INSERT INTO ratings (take_id, designer, stars) VALUES (%s, %s, %s) "
                 "ON CONFLICT (take_id, designer) DO UPDATE SET stars = EXCLUDED.stars, "
                 "updated = now()", (take_id, designer, stars))


def _add_tags(conn: psycopg.Connection, take_id: int, designer: str, tags: list[str]) -> None:
    with conn.cursor() as cursor:
        cursor.executemany("INSERT INTO tags (take_id, designer, tag) VALUES (%s, %s, %s) "
                           "ON CONFLICT DO NOTHING", [(take_id, designer, t) for t in tags])


def _add_note(conn: psycopg.Connection, take_id: int, designer: str, body: str) -> None:
    conn.execute("INSERT INTO notes (take_id, designer, body) VALUES (%s, %s, %s) "
                 "ON CONFLICT DO NOTHING", (take_id, designer, body))


def may_publish(conn: psycopg.Connection) -> bool:
    """Whether this login may add takes (a read-only one may not)."""
    row = conn.execute("SELECT has_table_privilege('takes', 'INSERT')").fetchone()
    return bool(row and row[0])


def rate(conn: psycopg.Connection, take_id: int, designer: str, stars: int) -> bool:
    """The designer's stars for a take (0 takes their rating away); False: no such take."""
    with conn.transaction():
        if not _lock(conn, take_id):
            return False
        if stars:
            _upsert_rating(conn, take_id, designer, stars)
        else:
            conn.execute("DELETE FROM ratings WHERE take_id = %s AND designer = %s",
                         (take_id, designer))
        conn.execute(_aggregate("t.id = %(id)s"), {"id": take_id})
    return True


def retag(conn: psycopg.Connection, take_id: int, designer: str, add: list[str],
          remove: list[str]) -> bool:
    """Add and remove the designer's own tags of a take; False: no such take."""
    with conn.transaction():
        if not _lock(conn, take_id):
            return False
        _add_tags(conn, take_id, designer, add)
        if remove:
            conn.execute("DELETE FROM tags WHERE take_id = %s AND designer = %s AND "
                         "lower(tag) IN (SELECT lower(x) FROM unnest(%s::text[]) AS x)",
                         (take_id, designer, remove))
        conn.execute(_aggregate("t.id = %(id)s"), {"id": take_id})
    return True


def add_note(conn: psycopg.Connection, take_id: int, designer: str, body: str) -> bool:
    with conn.transaction():
        if not _lock(conn, take_id):
            return False
        _add_note(conn, take_id, designer, body)
    return True


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
    if query.tags:  # the exact tags (the index found the takes with their words), lowered
        params["tags"] = list(query.tags)  # as the server lowers them (not as Python does)
        where.append("t.tag_list @> ARRAY(SELECT lower(x) FROM unnest(%(tags)s::text[]) AS x)")
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


def similar(conn: psycopg.Connection, take_id: int, query: TeamQuery,
            me: str) -> list[TeamEntry] | None:
    """The takes that sound most like take `take_id`, nearest first (with the query's
    filters, text aside); None when there is no such take, [] when it has no embedding."""
    row = conn.execute("SELECT embedding::text FROM takes WHERE id = %s", (take_id,)).fetchone()
    if row is None:
        return None
    if row[0] is None:
        return []
    params: dict = {"me": me, "limit": max(1, min(query.limit, MAX_LIMIT)), "vector": row[0],
                    "id": take_id}
    where = ["t.id <> %(id)s", "t.embedding IS NOT NULL",
             *_filters(TeamQuery(tags=query.tags, min_rating=query.min_rating,
                                 model=query.model, designer=query.designer), params)]
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
