"""A take the team library has already, published again (engines.team.service.send).

Labels live in the delivered files' metadata (iXML, bext, Vorbis comments), so a take
relabelled since it was published delivers audio files of other bytes. When its first
publisher publishes it again, the new files go into the store (written, then read back and
checked against their SHA-256) and the entry's file list and labels point to them in the same
transaction as the rating, tags and notes (the server's sa3_relabel, engines.team.relabel):
`team fetch` then returns the new labels. The old store files stay (content-addressed, never
modified), so a copy fetched before still matches its hash.

Another designer's publish of the same take keeps the entry as it is (their rating, tags and
notes are added as ever), and one sentence says whose labels it keeps when theirs differ. Why
not refuse it: the same take is one entry whoever publishes it, and another designer's files
differ from the first publisher's by more than labels (their designer and library names in
the metadata), so refusing would stop every colleague from rating a take they also have, and
accepting would let any designer rewrite a colleague's labels. The server holds the rule
whatever SQL is sent: sa3_relabel refuses anyone but the first publisher.

Only audio files are compared: every delivery writes its time and path into its sidecar.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from engines.error_sentences import printable, sentence, shown
from engines.team import records
from engines.team.bundle import TakeBundle, file_path
from engines.team.content_store import ContentStore, sha256_of
from engines.team.errors import TeamError

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger(__name__)
T = TypeVar("T")
Run = Callable[[Callable[["psycopg.Connection"], T]], T]
SIDECAR = "-sidecar"


@dataclass(frozen=True)
class KnownTake:
    """What the team has of a take: its id, first publisher, files and labels."""

    id: int
    designer: str
    files: frozenset[tuple[str, str]]  # (role, sha256) of each of its files
    labels: dict[str, str]

    def audio_differs(self, bundle: TakeBundle) -> bool:
        """Whether `bundle` delivers an audio file the entry does not have in that role."""
        mine = {(f.role, f.sha256) for f in bundle.files if not f.role.endswith(SIDECAR)}
        return not mine <= self.files


@dataclass(frozen=True)
class Sent:
    team_id: int
    new: bool
    relabelled: bool = False  # the entry now has this publish's files and labels
    notice: str | None = None  # the entry kept another designer's labels


def known_take(conn: psycopg.Connection, key: str) -> KnownTake | None:
    row = conn.execute("SELECT id, designer, provenance->'library'->'labels' FROM takes "
                       "WHERE take_key = %s", (key,)).fetchone()
    if row is None:
        return None
    files = conn.execute("SELECT role, sha256 FROM take_files WHERE take_id = %s",
                         (row[0],)).fetchall()
    labels = records.published_labels({"library": {"labels": row[2]}})
    return KnownTake(int(row[0]), row[1], frozenset((r[0], r[1]) for r in files), labels)


def send_known(run: Run, store_of: Callable[[], ContentStore], bundle: TakeBundle,
               folder: Path, known: KnownTake) -> Sent:
    """Send a bundle of a take the team has (`known`): relabelled by its first publisher when
    its audio differs, else its rating, tags and notes added and damaged store files put
    back (see the module's docstring)."""
    notice = None
    if known.audio_differs(bundle):
        if run(lambda c: _first_publisher(c, known.id, bundle.designer)):
            store = store_of()
            for entry in bundle.files:
                _put_verified(store, file_path(folder, entry), entry.sha256, known.id)
            team_id, new, relabelled = run(lambda c: records.publish_relabelled(c, bundle))
            if relabelled:
                log.info("Team library: team take #%d now has the files and labels of local "
                         "take %s", team_id, bundle.local_id)
            return Sent(team_id, new, relabelled)
        mine = records.published_labels(bundle.provenance)
        if mine != known.labels:
            notice = (f"Team take #{known.id} keeps the labels {printable(known.designer)} "
                      f"published it with ({_shown(known.labels)}, not {_shown(mine)}): only "
                      "the designer who first published a take can relabel it there (what "
                      "you rated, tagged or noted was added).")
    repair(store_of, bundle, folder, known)
    team_id, new = run(lambda c: records.insert_bundle(c, bundle))
    return Sent(team_id, new, notice=notice)


def _first_publisher(conn: psycopg.Connection, team_id: int, designer: str) -> bool:
    """Whether the server writes `designer`'s publish as the take's first publisher (as
    sa3_relabel compares them)."""
    row = conn.execute("SELECT lower(designer) = lower(sa3_whoami(%s)) FROM takes WHERE id = %s",
                       (designer, team_id)).fetchone()
    return bool(row and row[0])


def _put_verified(store: ContentStore, path: Path, sha256: str, team_id: int) -> None:
    """Store one file and read it back from the store: the entry points to it only once the
    store holds exactly its bytes."""
    stored = store.put(path, sha256)
    try:
        whole = sha256_of(stored)[0] == sha256
    except OSError as err:
        raise TeamError(sentence(f"Could not read back {shown(stored)} from the team's audio "
                                 "store", err, f"team take #{team_id} keeps its files; publish "
                                 "it again")) from err
    if not whole:
        raise TeamError(f"The team's audio store did not keep {shown(path.name)} whole (its "
                        f"SHA-256 differs after writing), so team take #{team_id} keeps its "
                        "files; publish it again.")


def repair(store_of: Callable[[], ContentStore], bundle: TakeBundle, folder: Path,
           known: KnownTake) -> None:
    """Each of the take's recorded files this publish holds the same bytes of is stored
    again where the store's copy no longer hashes to its name (a file damaged in place is
    repaired, never left for ever). Best effort: the rating and tags go to the server
    whatever the store does."""
    recorded = {sha for _role, sha in known.files}
    try:
        store = store_of()
        for entry in bundle.files:
            if entry.sha256 in recorded:
                store.put(file_path(folder, entry), entry.sha256)
    except TeamError as err:
        log.warning("Team library: could not check the stored files of team take #%d: %s",
                    known.id, err)


def _shown(labels: dict[str, str]) -> str:
    return ", ".join(f"{key.replace('_', ' ')} '{printable(value)}'"
                     for key, value in sorted(labels.items())) or "none"
