"""Old sound embeddings of the team library made again (`team reembed`): each entry whose vector
is older than this release's recipe (EMBEDDING_VERSION), or missing, gets a new one computed
here from its own audio - the take's file in the content store, copied out and checked against
its SHA-256 first - by the function a publish uses (engines.team.bundle.sound_vector).

The server writes it only through sa3_reembed (engines.team.embedding_step), which takes a
vector only for an entry whose stored one is older: two designers running this at once, or a
newer release having been there first, never replace a current vector (the later one is told
"current already"). One entry that cannot be done (its file missing or damaged in the store, or
not audio) is one sentence in the report and stays as it was; the rest go on. The store out of
reach stops the run (TeamUnreachable): every entry would fail the same way.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from engines.audio_io.reading import read_audio
from engines.constants import SAMPLE_RATE
from engines.error_sentences import shown
from engines.errors import AudioFileError
from engines.similarity.embedding import EMBEDDING_VERSION
from engines.team.bundle import sound_vector
from engines.team.content_store import ContentStore
from engines.team.entries import TeamFile
from engines.team.errors import TeamError, TeamUnreachable
from engines.team.fetching import cached_copy
from engines.team.records import vector_text

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger(__name__)
T = TypeVar("T")
Run = Callable[[Callable[["psycopg.Connection"], T]], T]
PAGE = 100  # entries asked for at a time
AUDIO_ROLE = "take"  # the file a publish's vector is made from (the take as made)


@dataclass
class ReembedReport:
    """What a run did: entries given a new vector, found current already (another designer
    was first), and a sentence for each that could not be done."""

    version: int = EMBEDDING_VERSION
    stale: int = 0  # entries older than `version` when the run began
    updated: int = 0
    current: int = 0
    problems: list[str] = field(default_factory=list)


def stale_count(conn: psycopg.Connection, version: int = EMBEDDING_VERSION) -> int:
    row = conn.execute("SELECT count(*) FROM takes WHERE embedding_version < %s",
                       (version,)).fetchone()
    return int(row[0]) if row else 0


def stale_entries(conn: psycopg.Connection, after_id: int, version: int = EMBEDDING_VERSION,
                  limit: int = PAGE) -> list[tuple[int, TeamFile | None]]:
    """Entries after `after_id` whose vectors are older than `version` (or missing), by id,
    each with its take's audio file (None: it has none)."""
    rows = conn.execute(
        "SELECT t.id, f.role, f.file_name, f.sha256, f.size, f.format FROM takes t "
        "LEFT JOIN LATERAL (SELECT * FROM take_files f WHERE f.take_id = t.id AND "
        "f.role = %s ORDER BY f.file_name LIMIT 1) f ON true "
        "WHERE t.embedding_version < %s AND t.id > %s ORDER BY t.id LIMIT %s",
        (AUDIO_ROLE, version, after_id, limit)).fetchall()
    return [(int(row[0]), TeamFile(*row[1:]) if row[1] is not None else None) for row in rows]


def write_vector(conn: psycopg.Connection, take_id: int, designer: str, vector: list[float],
                 version: int = EMBEDDING_VERSION) -> bool:
    """The entry's new vector (the server's sa3_reembed); False: its stored one is not older
    (current already, newer, or the entry is gone), and nothing was written."""
    row = conn.execute("SELECT sa3_reembed(%s, %s, %s, %s)",
                       (take_id, designer, vector_text(vector), version)).fetchone()
    return bool(row and row[0])


def entry_vector(store: ContentStore, take_id: int, audio: TeamFile | None) -> list[float]:
    """The sound embedding of the entry's audio, from a checked copy of its store file;
    TeamError (one sentence) when there is none to be had."""
    if audio is None:
        raise TeamError(f"Team take #{take_id} has no take file, so its sound embedding could "
                        "not be made again; its first publisher can publish it again.")
    folder = Path(tempfile.mkdtemp(prefix="sa3-reembed-"))
    try:
        copy = cached_copy(store, audio, folder)
        pcm = read_audio(copy)
    except TeamUnreachable:
        raise
    except TeamError as err:  # its file missing or damaged in the store: named, left as it was
        said = str(err)
        raise TeamError(f"Team take #{take_id} kept its old sound embedding: "
                        f"{said[:1].lower()}{said[1:]}") from err
    except AudioFileError as err:
        log.info("Team reembed: take #%d: %s", take_id, err)
        raise TeamError(f"Team take #{take_id}'s file {shown(audio.name)} could not be read "
                        "as audio, so its sound embedding was not made again; its first "
                        "publisher can publish it again.") from err
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return sound_vector(pcm, SAMPLE_RATE)


def reembed(run: Run, store: Callable[[], ContentStore], designer: str,
            progress: Callable[[int, int], None] | None = None) -> ReembedReport:
    """Bring every stale entry up to this release's recipe, oldest first; `run` runs work on
    the team's connection (TeamLibrary._run), `progress(done, total)` after each entry."""
    report = ReembedReport(stale=run(stale_count))
    after, done = 0, 0
    while page := run(partial(stale_entries, after_id=after)):
        for take_id, audio in page:
            after = take_id
            try:
                vector = entry_vector(store(), take_id, audio)
            except TeamUnreachable:
                raise
            except TeamError as err:
                log.warning("Team reembed: %s", err)
                report.problems.append(str(err))
            else:
                if run(partial(write_vector, take_id=take_id, designer=designer,
                               vector=vector)):
                    report.updated += 1
                else:
                    report.current += 1
            done += 1
            if progress is not None:
                progress(done, max(done, report.stale))
    log.info("Team reembed: %d made again, %d current already, %d not done", report.updated,
             report.current, len(report.problems))
    return report
