"""The library's SQLite schema, its version (PRAGMA user_version) and the migrations between them.

Version 1 (the first release) kept one row per take with the request, timings, engine files
(path and size, no hash) and an absolute audio path; it had no names, tags, notes, favourites,
text search or hash cache. Version 2 adds those, stores the audio file relative to the library
folder (so a moved data folder still works) and records a content hash of every take's samples.
Version 3 adds a take's finishing chain (issue 11: JSON, NULL when it has none) and its quality
flags (a JSON list of engines.finish.quality codes; NULL until the take's audio was checked,
which opening does for takes that came from an older library or a rebuild: see quality_check).
Version 4 adds the UCS labels a take was given (issue 31: CatID, the Category and SubCategory
the user's UCS list gave it, FXName, CreatorID, SourceID; '' when not given), so every later
way out names and labels its files without the flags again, and its variation number in the set
it was made in and that set's size (NULL for takes from before: their family tells, see
engines.store.families).
Version 5 adds the sound files a designer imported in place (issue 34, engines.sound_import):
the takes table's `source_root` (the imported folder of a referenced sound, NULL for the
library's own audio) and the tables sound_files (one per referenced file: where it is, its
stat and content fingerprint for rescans, what its header and metadata said, its peaks) and
sound_folders (the folders imported, for a rescan of them all). See engines.store.sound_files.
It also adds the index takes_search (deleted, created, id, search_text): a search word too short
for the text index (LIKE) and a count of matches read it instead of every wide row, which keeps
search-as-you-type quick at 50,000 rows of takes and sounds (bench/bench_library_import.py).
Every migration runs inside one transaction: it completes or leaves the old version untouched.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

log = logging.getLogger(__name__)

SCHEMA_VERSION = 5

# Kept verbatim: tests build a version 1 database from it by hand and migrate it.
SCHEMA_V1 = """
CREATE TABLE takes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created TEXT NOT NULL,
    prompt TEXT NOT NULL,
    negative_prompt TEXT NOT NULL,
    model TEXT NOT NULL,
    decoder TEXT NOT NULL,
    precision TEXT NOT NULL,
    seconds REAL NOT NULL,
    steps INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    cfg REAL NOT NULL,
    apg REAL NOT NULL,
    init_noise_level REAL,
    inpaint_spans TEXT NOT NULL,
    limiter_ceiling REAL NOT NULL,
    mode TEXT NOT NULL,
    backend TEXT NOT NULL,
    timings_ms TEXT NOT NULL,
    engine_files TEXT NOT NULL,
    audio_path TEXT NOT NULL,
    parent_id INTEGER,
    init_source TEXT,
    rating INTEGER NOT NULL DEFAULT 0,
    sample_rate INTEGER NOT NULL,
    samples INTEGER NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX takes_created ON takes(created);
"""

_TAKES_V2 = """
CREATE TABLE takes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created TEXT NOT NULL,
    name TEXT NOT NULL DEFAULT '',
    prompt TEXT NOT NULL,
    negative_prompt TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL,
    decoder TEXT NOT NULL DEFAULT '',
    precision TEXT NOT NULL DEFAULT '',
    seconds REAL NOT NULL,
    steps INTEGER NOT NULL DEFAULT 0,
    seed INTEGER NOT NULL DEFAULT 0,
    seed_was_random INTEGER NOT NULL DEFAULT 0,
    cfg REAL NOT NULL DEFAULT 1.0,
    apg REAL NOT NULL DEFAULT 1.0,
    init_noise_level REAL,
    inpaint_spans TEXT NOT NULL DEFAULT '[]',
    limiter_ceiling REAL NOT NULL DEFAULT 0.977,
    mode TEXT NOT NULL,
    backend TEXT NOT NULL DEFAULT '',
    requested_backend TEXT NOT NULL DEFAULT 'auto',
    decoder_tier TEXT NOT NULL DEFAULT '',
    timings_ms TEXT NOT NULL DEFAULT '{}',
    engine_files TEXT NOT NULL DEFAULT '[]',
    warnings TEXT NOT NULL DEFAULT '[]',
    audio_file TEXT NOT NULL,
    content_sha256 TEXT NOT NULL DEFAULT '',
    parent_id INTEGER REFERENCES takes(id),
    init_source TEXT,
    rating INTEGER NOT NULL DEFAULT 0 CHECK (rating BETWEEN 0 AND 5),
    favourite INTEGER NOT NULL DEFAULT 0,
    tags TEXT NOT NULL DEFAULT '[]',
    notes TEXT NOT NULL DEFAULT '',
    sample_rate INTEGER NOT NULL,
    samples INTEGER NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0,
    search_text TEXT NOT NULL DEFAULT ''
)
"""

_INDEXES_V2 = """
CREATE INDEX IF NOT EXISTS takes_created ON takes(deleted, created);
CREATE INDEX IF NOT EXISTS takes_rating ON takes(deleted, rating, created);
CREATE INDEX IF NOT EXISTS takes_model ON takes(model, created);
CREATE INDEX IF NOT EXISTS takes_favourite ON takes(favourite, created);
CREATE INDEX IF NOT EXISTS takes_content ON takes(content_sha256);
CREATE INDEX IF NOT EXISTS takes_parent ON takes(parent_id);
CREATE INDEX IF NOT EXISTS takes_files ON takes(deleted, audio_file);
CREATE TABLE IF NOT EXISTS file_hashes (
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

# Added to version 2's table. A new library is made the same way (version 2, then these), so a
# migrated library and a new one have the very same table.
_COLUMNS_V3 = ("finishing TEXT", "quality TEXT")
# Schema 4's label columns (engines.store.records.LABEL_COLUMNS) and variation numbers.
_COLUMNS_V4 = ("ucs_catid TEXT NOT NULL DEFAULT ''", "ucs_category TEXT NOT NULL DEFAULT ''",
               "ucs_subcategory TEXT NOT NULL DEFAULT ''", "ucs_fx_name TEXT NOT NULL DEFAULT ''",
               "ucs_creator TEXT NOT NULL DEFAULT ''", "ucs_source TEXT NOT NULL DEFAULT ''",
               "variation INTEGER", "variations INTEGER")
# Schema 5: referenced sound files (engines.store.sound_files holds what reads them).
_COLUMNS_V5 = ("source_root TEXT",)
_TABLES_V5 = """
CREATE INDEX IF NOT EXISTS takes_source ON takes(source_root);
CREATE INDEX IF NOT EXISTS takes_search ON takes(deleted, created, id, search_text);
CREATE TABLE IF NOT EXISTS sound_files (
    take_id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    root TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    fingerprint TEXT NOT NULL,
    format TEXT NOT NULL DEFAULT '',
    subtype TEXT NOT NULL DEFAULT '',
    channels INTEGER NOT NULL DEFAULT 0,
    sample_rate INTEGER NOT NULL DEFAULT 0,
    frames INTEGER NOT NULL DEFAULT 0,
    metadata TEXT NOT NULL DEFAULT '{}',
    words TEXT NOT NULL DEFAULT '',
    peaks BLOB
);
CREATE INDEX IF NOT EXISTS sound_files_root ON sound_files(root);
CREATE INDEX IF NOT EXISTS sound_files_fingerprint ON sound_files(fingerprint);
CREATE TABLE IF NOT EXISTS sound_folders (
    root TEXT PRIMARY KEY,
    added TEXT NOT NULL,
    scanned TEXT
);
"""

FTS_TABLE = "takes_fts"
_FTS_DDL = f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5(search_text, " \
           "tokenize='trigram')"

_fts_available: bool | None = None


def fts_available() -> bool:
    """Whether this sqlite3 has FTS5 with the trigram tokenizer (SQLite 3.34+)."""
    global _fts_available
    if _fts_available is None:
        probe = sqlite3.connect(":memory:")
        try:
            probe.execute(_FTS_DDL)
            _fts_available = True
        except sqlite3.DatabaseError:
            _fts_available = False
        finally:
            probe.close()
    return _fts_available


def search_text(prompt: str, name: str, tags: list[str], notes: str,
                init_source: str | None) -> str:
    """What a library search looks through, lower case (LIKE's case folding is ASCII only)."""
    source = Path(init_source).name if init_source else ""
    return "\n".join(part for part in (prompt, name, " ".join(tags), notes, source)
                     if part).lower()


def create_fresh(conn: sqlite3.Connection) -> None:
    """A new, empty library at SCHEMA_VERSION (inside the caller's transaction)."""
    conn.execute(_TAKES_V2)
    _run_script(conn, _INDEXES_V2)
    _add_columns_v3(conn)
    _add_columns(conn, _COLUMNS_V4)
    _add_v5(conn)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _run_script(conn: sqlite3.Connection, script: str) -> None:
    # executescript() would COMMIT the open transaction first; run statement by statement.
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def migrate(conn: sqlite3.Connection, root: Path) -> int:
    """Bring an open library up to SCHEMA_VERSION; returns the version it had.

    The caller holds a write transaction; the caller commits.
    """
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version == 0:
        tables = conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'takes'")
        if tables.fetchone()[0] == 0:
            create_fresh(conn)
            return 0
        version = 1  # a version 1 file written before user_version was set
    if version == 1:
        _migrate_1_to_2(conn, root)
    if version <= 2:
        log.info("Migrating the library database in %s from schema 2 to 3", root)
        _add_columns_v3(conn)
        conn.execute("PRAGMA user_version = 3")
    if version <= 3:
        log.info("Migrating the library database in %s from schema 3 to 4", root)
        _add_columns(conn, _COLUMNS_V4)
        conn.execute("PRAGMA user_version = 4")
    if version <= 4:
        log.info("Migrating the library database in %s from schema 4 to 5", root)
        _add_v5(conn)
        conn.execute("PRAGMA user_version = 5")
    return version


def _add_columns_v3(conn: sqlite3.Connection) -> None:
    _add_columns(conn, _COLUMNS_V3)


def _add_v5(conn: sqlite3.Connection) -> None:
    _add_columns(conn, _COLUMNS_V5)
    _run_script(conn, _TABLES_V5)


def _add_columns(conn: sqlite3.Connection, columns: tuple[str, ...]) -> None:
    for column in columns:
        conn.execute(f"ALTER TABLE takes ADD COLUMN {column}")


def _migrate_1_to_2(conn: sqlite3.Connection, root: Path) -> None:
    log.info("Migrating the library database in %s from schema 1 to 2", root)
    old_rows = conn.execute("SELECT * FROM takes ORDER BY id").fetchall()
    columns = [d[0] for d in conn.execute("SELECT * FROM takes LIMIT 0").description]
    sequence = conn.execute(
        "SELECT seq FROM sqlite_sequence WHERE name = 'takes'").fetchone()
    conn.execute("ALTER TABLE takes RENAME TO takes_v1")
    conn.execute("DROP INDEX IF EXISTS takes_created")
    conn.execute(_TAKES_V2)
    for values in old_rows:
        old = dict(zip(columns, values, strict=True))
        engine_files = [{**entry, "sha256": entry.get("sha256")}
                        for entry in json.loads(old["engine_files"] or "[]")]
        new = {key: old[key] for key in (
            "id", "created", "prompt", "negative_prompt", "model", "decoder", "precision",
            "seconds", "steps", "seed", "cfg", "apg", "init_noise_level", "inpaint_spans",
            "limiter_ceiling", "mode", "backend", "timings_ms", "parent_id", "init_source",
            "rating", "sample_rate", "samples", "deleted")}
        new["rating"] = min(max(int(new["rating"] or 0), 0), 5)
        new["engine_files"] = json.dumps(engine_files)
        new["audio_file"] = relative_audio_name(root, Path(old["audio_path"]))
        new["search_text"] = search_text(old["prompt"], "", [], "", old["init_source"])
        names = ", ".join(new)
        marks = ", ".join("?" for _ in new)
        conn.execute(f"INSERT INTO takes ({names}) VALUES ({marks})", tuple(new.values()))
    conn.execute("DROP TABLE takes_v1")
    if sequence is not None:
        conn.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'takes'",
                     (sequence[0],))
    _run_script(conn, _INDEXES_V2)
    conn.execute("PRAGMA user_version = 2")


def relative_audio_name(root: Path, path: Path) -> str:
    """The audio_file value for `path`: its name when it lies in audio/ or trash/ (the deleted
    flag says which), else the absolute path as it was."""
    if path.parent in (root / "audio", root / "trash"):
        return path.name
    return str(path)


def fts_usable(conn: sqlite3.Connection) -> bool:
    """Whether searches may use the text index of a library that cannot be written (so the
    index cannot be repaired): only when it exists and is complete."""
    if not fts_available():
        return False
    try:
        exists = conn.execute("SELECT count(*) FROM sqlite_master WHERE name = ?",
                              (FTS_TABLE,)).fetchone()[0] > 0
        if not exists or conn.execute(
                "SELECT 1 FROM meta WHERE key = 'fts_stale'").fetchone() is not None:
            return False
        indexed = conn.execute(f"SELECT count(*) FROM {FTS_TABLE}").fetchone()[0]
        return indexed == conn.execute("SELECT count(*) FROM takes").fetchone()[0]
    except sqlite3.Error:
        return False


EMBEDDINGS_TABLE = "embeddings"
# Derived data (engines.store.embeddings), so no schema version: an older app ignores the table.
_EMBEDDINGS_DDL = (f"CREATE TABLE IF NOT EXISTS {EMBEDDINGS_TABLE} (take_id INTEGER PRIMARY KEY, "
                   "space TEXT NOT NULL DEFAULT '', version INTEGER NOT NULL, "
                   "vector BLOB NOT NULL)")


def ensure_embeddings(conn: sqlite3.Connection) -> None:
    """Create the sound embeddings table if the library has none yet (a library from before
    them gains it here; its takes get their rows from engines.store.embedding_backfill)."""
    conn.execute(_EMBEDDINGS_DDL)


def ensure_fts(conn: sqlite3.Connection) -> bool:
    """Create or repair the text index if this sqlite3 can; returns whether searches may use it.

    The index is derived data kept in step by ClipLibrary's own writes (no triggers, so a
    sqlite3 without FTS5 can still write the library). A library written while the index could
    not be maintained is marked stale and rebuilt on the next open that can.
    """
    exists = conn.execute("SELECT count(*) FROM sqlite_master WHERE name = ?",
                          (FTS_TABLE,)).fetchone()[0] > 0
    if not fts_available():
        if exists:
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('fts_stale', '1')")
        return False
    conn.execute(_FTS_DDL)
    stale = conn.execute("SELECT value FROM meta WHERE key = 'fts_stale'").fetchone()
    indexed = conn.execute(f"SELECT count(*) FROM {FTS_TABLE}").fetchone()[0]
    rows = conn.execute("SELECT count(*) FROM takes").fetchone()[0]
    if not exists or stale is not None or indexed != rows:
        conn.execute(f"DELETE FROM {FTS_TABLE}")
        conn.execute(f"INSERT INTO {FTS_TABLE} (rowid, search_text) "
                     "SELECT id, search_text FROM takes")
        conn.execute("DELETE FROM meta WHERE key = 'fts_stale'")
    return True
