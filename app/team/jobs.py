"""What the team thread runs (app.team.thread): plain functions of its job context, no Qt.

    publish_takes  local takes to the team library, one by one, with progress; once the server
                   is found away, the rest are only queued in the outbox (no connection
                   attempt per take)
    send_waiting   the outbox's takes for this team library (None when none wait: the server
                   was not asked)
    find_takes     a browse or search, or "more like this" (with a sentence for each kind of
                   take it did not compare: sound embeddings of another recipe)
    drag_copy      a team take's sound as a file on this machine, for dragging out
    check_line     Settings' Test connection, as one sentence
"""

from __future__ import annotations

import logging
import os
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING

from engines.error_sentences import shown
from engines.errors import StudioError
from engines.paths import data_dir
from engines.team import records
from engines.team.bundle import bundle_take
from engines.team.connection import parse_line
from engines.team.entries import TeamEntry, TeamQuery
from engines.team.errors import TeamError, TeamRefused
from engines.team.service import PublishReport
from engines.team.session import connect, psycopg, reworded

if TYPE_CHECKING:
    from app.team.thread import TeamJobContext

log = logging.getLogger(__name__)

# The file a team take drags out as: its finished file, else a batch's, else the take as made.
AUDIO_ROLES = ("finished", "batch", "take")
DRAG_FOLDER = ("team", "files")  # in the data folder: DATA/team/files/<sha prefix>/<name>
SHA_PREFIX = 16


def publish_takes(context: TeamJobContext, take_ids: list[int], designer: str) -> PublishReport:
    """Publish `take_ids` (local library ids); a take that cannot go (in the trash, a damaged
    file) is a sentence in `problems` and the others go on. TeamRefused (a read-only login)
    stops it, since it is the same for every take."""
    team = context.team()
    team.use_designer(designer)  # the name in Settings now; a designer's own login keeps its
    library = context.library()
    total = PublishReport()
    for done, take_id in enumerate(take_ids, 1):
        if context.closing():
            break  # the window is closing: the takes not reached stay unpublished
        try:
            if total.unreachable is None:
                report = team.publish(library, [take_id])
                total.published += report.published
                total.problems += report.problems
                total.relabelled += report.relabelled
                total.notices += report.notices
                total.unreachable = report.unreachable
            else:  # the server is away: queue the rest without asking it again
                bundle = bundle_take(library, take_id, team.designer, team.outbox.folder_for)
                team.outbox.put(bundle, team.connection.where)
        except TeamRefused:
            raise
        except StudioError as err:
            total.problems.append(str(err))
        context.progress(done, len(take_ids))
    total.waiting = team.outbox.count(team.connection.where)
    return total


def send_waiting(context: TeamJobContext) -> PublishReport | None:
    if not context.line:
        return None
    team = context.team()
    if team.outbox.count(team.connection.where) == 0:
        return None
    return team.send_queued()


def find_takes(context: TeamJobContext, query: TeamQuery,
               like: int | None) -> tuple[list[TeamEntry], list[str]]:
    team = context.team()
    if like is None:
        return team.find(query), []
    near = team.near(like, query)
    return near.entries, near.left_out()


def drag_copy(context: TeamJobContext, take_id: int) -> Path:
    """The team take's sound in DATA/team/files/<its SHA-256's start>/, under the name the
    delivery layer gave it when it was published (its sidecar beside it), each file checked
    against its SHA-256 as it is copied; a copy made before is used again."""
    team = context.team()
    entry = team.entry(take_id)
    files = {f.role: f for f in entry.files}
    role = next((r for r in AUDIO_ROLES if r in files), None)
    if role is None:
        raise TeamError(f"Team take #{take_id} has no audio file; ask whoever published it to "
                        "publish it again.")
    audio = files[role]
    folder = data_dir().joinpath(*DRAG_FOLDER, audio.sha256[:SHA_PREFIX])
    ready = folder / audio.name
    if ready.is_file() and ready.stat().st_size == audio.size:
        return ready
    written = team.fetch(take_id, folder, roles=[role])
    log.info("Team take #%d fetched for dragging: %s", take_id, written[0])
    return written[0]


def check_line(line: str, designer: str) -> str:
    """Test connection: connect as the line says, and say who this login is, how many takes
    the team has and whether this machine reaches the audio store; TeamError (one sentence)
    when it cannot connect."""
    connection = parse_line(line)
    with closing(connect(connection)) as conn:
        try:
            may_publish = records.may_publish(conn)
            designer = (records.writer(conn, designer) or designer) if may_publish else designer
            takes = int(conn.execute("SELECT count(*) FROM takes").fetchone()[0])
            row = conn.execute("SELECT value FROM team_settings WHERE key = 'store'").fetchone()
        except psycopg.Error as err:
            raise reworded(err, connection) from err
    role = "may publish" if may_publish else "may only browse (a read-only login)"
    store = connection.store or (Path(row[0]) if row else None)
    if store is None:
        where = "but no audio store is recorded, so add store=FOLDER to the line"
    elif os.path.isdir(store):
        where = f"and its audio store {shown(store)} is reachable from here"
    else:
        where = (f"but its audio store {shown(store)} cannot be reached from here, so add "
                 "store=FOLDER (where this machine sees it) to the line")
    return (f"Connected to the team library at {connection.where} as '{connection.user}', "
            f"who {role}, as designer '{designer}': it holds {takes} take(s), {where}.")
