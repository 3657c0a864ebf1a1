"""Rebuilding the library database when it is damaged, empty or gone, and telling the user
what came back.

The takes come back from three places, best first: the rows still readable in the damaged file
(everything, see salvage.py), the note embedded in each take's audio file (what made it, see
repair.py), and the edit journal (names, ratings, tags, notes, imported file names, timings,
engine files: see journal.py). opening.py runs the steps; this module holds the ones that only
touch the new database.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from engines.error_sentences import shown
from engines.store import journal, schema
from engines.store.records import MAX_TAKE_ID

log = logging.getLogger(__name__)

_ID_PREFIX = re.compile(r"^(\d+)-")

# Columns a salvaged row must have, with their types, to be worth a take.
_REQUIRED = {"id": (int,), "created": (str,), "prompt": (str,), "model": (str,),
             "mode": (str,), "seconds": (int, float), "audio_file": (str,),
             "sample_rate": (int,), "samples": (int,), "deleted": (int,),
             "content_sha256": (str,)}


@dataclass
class RebuildReport:
    """How a rebuild went, for the one sentence the user is told."""

    cause: str  # "damaged", "empty (0 bytes)", "missing"
    kept_as: Path | None = None  # the copy of the old database, if there was one
    from_rows: int = 0
    from_notes: int = 0
    from_journal: int = 0  # of those from notes, how many the journal gave their data back

    def notice(self) -> str:
        if self.kept_as is not None:
            start = (f"The library database was {self.cause}; a copy was kept as "
                     f"{shown(self.kept_as)} and a new one was built")
        else:
            start = f"The library database was {self.cause}, so a new one was built"
        found = []
        if self.from_rows:
            found.append(f"{_takes(self.from_rows)} from the old database's readable rows")
        if self.from_notes:
            found.append(f"{_takes(self.from_notes)} from the notes in their audio files")
        if not found:
            return f"{start}; no takes were found to bring back."
        text = f"{start} with {' and '.join(found)}"
        if self.from_notes and self.from_journal == self.from_notes:
            text += (", whose names, ratings, tags and notes came back from the edit "
                     "journal")
        elif self.from_journal:
            text += (f"; the edit journal gave back the names, ratings, tags and notes of "
                     f"{self.from_journal} of those {self.from_notes}, the others' are lost")
        elif self.from_notes:
            text += ", whose names, ratings, tags and notes are lost (the edit journal had none)"
        return text + "."


def _takes(count: int) -> str:
    return f"{count} take{'s' if count != 1 else ''}"


def ids_in_file_names(names: Iterable[str]) -> int:
    """The highest take id the audio files are named after (`000042-door-1a2b3c.wav`)."""
    top = 0
    for name in names:
        match = _ID_PREFIX.match(name)
        if match and len(match.group(1)) <= 18:
            top = max(top, int(match.group(1)))
    return top


def insert_salvaged(conn: sqlite3.Connection, rows: list[dict], root: Path) -> int:
    """Put salvaged rows (of schema 1, 2 or 3) into the new database; returns how many went
    in. Columns an older schema lacks take their defaults (quality NULL: measured later).
    A row with garbage where the schema needs a value is left out (its audio file, if any,
    comes back from its note). The caller holds the write transaction."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(takes)")}
    kept = 0
    for old in rows:
        # A value of the wrong kind (a damaged page can hold anything) falls back to the
        # column's default rather than reach the app as, say, a rating made of text.
        row = {key: value for key, value in old.items() if key in columns
               and (key not in journal.COLUMNS or type(value) in journal.COLUMNS[key])}
        if "audio_file" not in row and isinstance(old.get("audio_path"), str):
            row["audio_file"] = schema.relative_audio_name(root, Path(old["audio_path"]))
        row.setdefault("content_sha256", "")
        row.setdefault("deleted", 0)
        if not all(type(row.get(key)) in kinds for key, kinds in _REQUIRED.items()) \
                or not 1 <= row["id"] <= MAX_TAKE_ID or not row["audio_file"]:
            continue
        names = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        try:
            conn.execute(f"INSERT INTO takes ({names}) VALUES ({marks})", tuple(row.values()))
        except sqlite3.Error as err:
            log.warning("Left out the salvaged row of take #%s (%s)", row["id"], err)
            continue
        kept += 1
    return kept


def finish(conn: sqlite3.Connection, highest_id: int, use_fts: bool) -> None:
    """Never hand out an id the old library used (sidecars and copies name takes by id), and
    bring every take's search text and the text index up to date. The caller holds the write
    transaction."""
    top = conn.execute("SELECT max(id) FROM takes").fetchone()[0] or 0
    highest = max(highest_id, top)
    if highest > 0:
        if conn.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'takes'",
                        (highest,)).rowcount == 0:
            conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('takes', ?)",
                         (highest,))
    for row in conn.execute("SELECT id, prompt, name, tags, notes, init_source "
                            "FROM takes").fetchall():
        tags = _tag_list(row["tags"])
        conn.execute("UPDATE takes SET search_text = ? WHERE id = ?",
                     (schema.search_text(row["prompt"], row["name"], tags, row["notes"],
                                         row["init_source"]), row["id"]))
    if use_fts:
        conn.execute(f"DELETE FROM {schema.FTS_TABLE}")
        conn.execute(f"INSERT INTO {schema.FTS_TABLE} (rowid, search_text) "
                     "SELECT id, search_text FROM takes")


def _tag_list(text: object) -> list[str]:
    try:
        tags = json.loads(text) if isinstance(text, str) else []
    except ValueError:
        return []
    return [tag for tag in tags if isinstance(tag, str)] if isinstance(tags, list) else []
