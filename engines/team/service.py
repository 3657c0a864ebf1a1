"""TeamLibrary: the one object a front end holds for the team library (the CLI per command,
the window for its life, on its worker thread): publish local takes, a selection or a batch
folder; browse, search and "more like this"; fetch files; rate, tag and note; watch for other
designers' takes (TeamWatcher, on a thread of its own).

The server unreachable: every call that needs it raises TeamUnreachable (one sentence), except
publishing, which queues in the outbox and says so in its report; `notice` holds that sentence
once, until the server answers again, so a window shows it once. `send_queued` sends what
waits (the window calls it on a timer; every publish sends what waits with it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from engines.error_sentences import shown
from engines.errors import Advice, Remedy
from engines.paths import cache_dir, data_dir
from engines.store.library import ClipLibrary
from engines.team import records
from engines.team.adapter_files import shelve_adapters
from engines.team.batch_files import batch_takes
from engines.team.bundle import TakeBundle, bundle_take, file_path
from engines.team.connection import TEAM_SETTING, TeamConnection
from engines.team.content_store import ContentStore
from engines.team.entries import TeamEntry, TeamQuery, check_query, check_tag
from engines.team.errors import TeamError, TeamRefused, TeamUnreachable
from engines.team.fetching import cached_copy, fetch_files
from engines.team.near_takes import NearTakes, check_seed
from engines.team.outbox import Outbox
from engines.team.reembedding import ReembedReport, reembed
from engines.team.republish import Sent, known_take, send_known
from engines.team.session import connect, psycopg, read_only, reworded
from engines.team.watcher import TeamWatcher
from engines.team.writes import MAX_TAGS

if TYPE_CHECKING:
    import psycopg as psycopg_types

log = logging.getLogger(__name__)
T = TypeVar("T")
OUTBOX_DIR = "team"


@dataclass
class PublishReport:
    """What a publish or a send did: takes the server now has (local id, team id, new),
    how many still wait in the outbox, and sentences about takes that could not go."""

    published: list[tuple[int | None, int, bool]] = field(default_factory=list)
    relabelled: list[int] = field(default_factory=list)  # team ids given new files and labels
    notices: list[str] = field(default_factory=list)  # entries that kept another's labels
    waiting: int = 0
    problems: list[str] = field(default_factory=list)
    unreachable: str | None = None  # the sentence, when the server could not be reached
    refused: str | None = None  # the sentence naming batch files that were not published


class TeamLibrary:
    """The team library at `connection`, used by `designer`; the outbox in the data folder
    unless `outbox_root` is given."""

    def __init__(self, connection: TeamConnection, designer: str,
                 outbox_root: Path | None = None) -> None:
        self.connection = connection
        self.designer = designer
        self.outbox = Outbox(outbox_root or data_dir() / OUTBOX_DIR)
        self.notice: str | None = None
        self._conn: psycopg_types.Connection | None = None
        self._store: ContentStore | None = None
        self._may_publish: bool | None = None  # asked once a connection

    # ---- the connection --------------------------------------------------------------------

    def _connection(self) -> psycopg_types.Connection:
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            return self._conn
        self._drop()
        try:
            self._conn = connect(self.connection)
        except TeamUnreachable as err:
            self.notice = self.notice or str(err)
            raise
        self.notice = None
        self._learn_writer(self._conn)
        return self._conn

    def _learn_writer(self, conn: psycopg_types.Connection) -> None:
        """Whether this login may write, and as whom: a designer's own login writes under
        that designer's name whatever this machine calls its user (engines.team.writes)."""
        try:
            name = records.writer(conn, self.designer)
        except psycopg.Error as err:  # a name another designer's login holds: said on writing
            log.info("team library: %s", err)
            return
        self._may_publish = name is not None
        if name is not None and name != self.designer:
            log.info("Team library: this login writes as designer '%s'", name)
            self.designer = name

    def use_designer(self, name: str) -> None:
        """Write as `name` from now (the window's Settings name, changed since the line was
        set), unless this login is bound to a designer of its own: the server decides."""
        self.designer = name
        if self._conn is not None:
            self._learn_writer(self._conn)

    def _drop(self) -> None:
        conn, self._conn, self._may_publish = self._conn, None, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # a broken connection may fail to close; it is gone either way
                log.debug("closing a broken team connection", exc_info=True)

    def _run(self, work: Callable[[psycopg_types.Connection], T]) -> T:
        """`work` on the connection, its failures as sentences (see engines.team.session)."""
        conn = self._connection()
        try:
            return work(conn)
        except psycopg.Error as err:
            problem = reworded(err, self.connection)
            if isinstance(problem, TeamUnreachable):
                self._drop()
                self.notice = self.notice or str(problem)
            raise problem from err

    def store(self) -> ContentStore:
        """The shared audio store: the connection line's, else the one the server records."""
        if self._store is None:
            root = self.connection.store
            if root is None:
                row = self._run(lambda c: c.execute(
                    "SELECT value FROM team_settings WHERE key = 'store'").fetchone())
                if row is None:
                    raise TeamError(Advice("The team library records no audio store; add "
                                           "store=FOLDER to {0}.", Remedy.setting(TEAM_SETTING)))
                root = Path(row[0])
            self._store = ContentStore(root)
        return self._store

    # ---- publishing ------------------------------------------------------------------------

    def publish(self, library: ClipLibrary, take_ids: Iterable[int],
                batch_files: dict[int, Path] | None = None) -> PublishReport:
        """Deliver each take's files into the outbox, queue it, and send it, then everything
        else queued. LibraryError for a take that cannot be read (nothing queued for it);
        TeamRefused for a login that may only read (nothing queued)."""
        reachable = self._check_may_publish()
        mine: list[TakeBundle] = []
        try:
            for take_id in dict.fromkeys(take_ids):
                bundle = bundle_take(library, take_id, self.designer, self.outbox.folder_for,
                                     (batch_files or {}).get(take_id))
                self.outbox.put(bundle, self.connection.where, claim=True)
                mine.append(bundle)
        except BaseException:
            for bundle in mine:
                self.outbox.release(bundle)
            raise
        return self._send(mine) if reachable else self._queued_only(mine)

    def publish_bundles(self, bundles: Iterable[TakeBundle]) -> PublishReport:
        """Queue bundles made ready elsewhere (their files already in outbox.files_of) and
        send them, then everything else queued."""
        reachable = self._check_may_publish()
        mine = list(bundles)
        for bundle in mine:
            self.outbox.put(bundle, self.connection.where, claim=True)
        return self._send(mine) if reachable else self._queued_only(mine)

    def publish_batch(self, library: ClipLibrary, folder: Path) -> PublishReport:
        """The takes a batch rendered into `folder` (its manifest.json), with the files the
        batch delivered: only files in that folder that are the batch's own files of the
        takes its manifest names (engines.team.batch_files); the rest are named in the
        report's `refused` sentence, and nothing of their takes is published."""
        files, refused = batch_takes(library, folder)
        what = (f"the batch in {shown(folder)} names files that are not its own takes' files "
                f"in that folder, so nothing of theirs was published: {'; '.join(refused)}")
        if not files:
            raise TeamError(f"Nothing was published: {what}; give the folder the batch wrote, "
                            "as it wrote it.")
        report = self.publish(library, list(files), files)
        if refused:
            report.refused = f"Only the other takes were published: {what}."
        return report

    def _check_may_publish(self) -> bool:
        """TeamRefused now for a read-only login, rather than a publish queued in vain; the
        server away, the question waits for it (and so does the publish). Whether the
        server answered."""
        if self._may_publish:
            return True
        try:
            self._may_publish = self._run(records.may_publish)
        except TeamUnreachable:
            return False
        if not self._may_publish:
            raise read_only(self.connection)
        return True

    def _queued_only(self, mine: list[TakeBundle]) -> PublishReport:
        """The report of a publish that only queued: the server did not answer just now
        (asking it again at once would only wait for the same timeout)."""
        for bundle in mine:
            self.outbox.release(bundle)
        return PublishReport(waiting=self.outbox.waiting(self.connection.where),
                             unreachable=self.notice)

    def send_queued(self) -> PublishReport:
        """Send every bundle waiting for this team library that no other sender is sending,
        oldest first."""
        return self._send([])

    def _send(self, mine: list[TakeBundle]) -> PublishReport:
        """This publish's bundles (claimed when queued) first, then what else waits."""
        report = PublishReport()
        queue = list(mine)
        tried = {(b.key, b.staged) for b in mine}
        try:
            while queue:
                if not self._send_one(queue.pop(0), report):
                    break
            else:
                for bundle in self.outbox.pending(self.connection.where):
                    if (bundle.key, bundle.staged) in tried or not self.outbox.claim(bundle):
                        continue
                    if not self._send_one(bundle, report):
                        break
        finally:
            for bundle in queue:  # not sent (the server went away): any sender may send them
                self.outbox.release(bundle)
        report.waiting = self.outbox.waiting(self.connection.where)
        return report

    def _send_one(self, bundle: TakeBundle, report: PublishReport) -> bool:
        """One claimed bundle sent, or its failure in `report`; False: stop sending (the
        server or the store is away)."""
        try:
            sent = self.send(bundle)
        except TeamUnreachable as err:
            self.outbox.release(bundle)
            report.unreachable = str(err)
            return False
        except TeamRefused:
            self.outbox.release(bundle)
            raise  # the same for every take: said once, the outbox kept as it is
        except TeamError as err:
            self.outbox.failed(bundle, str(err))
            report.problems.append(str(err))
            return True
        report.published.append((bundle.local_id, sent.team_id, sent.new))
        if sent.relabelled:
            report.relabelled.append(sent.team_id)
        if sent.notice:
            report.notices.append(sent.notice)
        return True

    def send(self, bundle: TakeBundle) -> Sent:
        """One queued bundle to the server: its files into the store, then its row in one
        transaction; then out of the outbox. A take the team has already gets this designer's
        rating, tags and notes, and new files and labels from its first publisher
        (engines.team.republish)."""
        known = self._run(lambda c: known_take(c, bundle.key))
        folder = self.outbox.files_of(bundle)
        if known is None:
            store = self.store()
            for entry in bundle.files:
                store.put(file_path(folder, entry), entry.sha256)
            sent = Sent(*self._run(lambda c: records.insert_bundle(c, bundle)))
        else:
            sent = send_known(self._run, self.store, bundle, folder, known)
        self.outbox.done(bundle)
        log.info("Team library: take %s published as team take #%d", bundle.local_id,
                 sent.team_id)
        return sent

    # ---- finding ---------------------------------------------------------------------------

    def find(self, query: TeamQuery | None = None) -> list[TeamEntry]:
        """Team takes matching `query`, newest first."""
        check_query(query or TeamQuery())
        return self._run(lambda c: records.find(c, query or TeamQuery(), self.designer))

    def similar(self, take_id: int, query: TeamQuery | None = None) -> list[TeamEntry]:
        """The team takes that sound most like team take `take_id`, nearest first."""
        return self.near(take_id, query).entries

    def near(self, take_id: int, query: TeamQuery | None = None) -> NearTakes:
        """`similar`, and how many takes were not compared (vectors of another recipe)."""
        asked = query or TeamQuery()
        check_query(asked)
        counts = self._run(lambda c: records.not_compared(c, take_id, asked))
        if counts is None:
            raise _no_take(take_id)
        check_seed(take_id, counts[0])
        found = self._run(lambda c: records.similar(c, take_id, asked, self.designer))
        return NearTakes(found or [], counts[1], counts[2])

    def reembed(self, progress: Callable[[int, int], None] | None = None) -> ReembedReport:
        """Make the team's stale sound embeddings again (engines.team.reembedding)."""
        self._check_may_publish()
        return reembed(self._run, self.store, self.designer, progress)

    def entry(self, take_id: int) -> TeamEntry:
        """One team take with its files."""
        found = self._run(lambda c: records.entry(c, take_id, self.designer))
        if found is None:
            raise _no_take(take_id)
        return found

    def fetch(self, take_id: int, folder: Path, roles: Iterable[str] | None = None
              ) -> list[Path]:
        """Copies of a team take's files (all, or those of `roles`) in `folder`, each checked
        against its SHA-256; never replacing a file there. The paths written."""
        entry = self.entry(take_id)
        wanted = set(roles) if roles is not None else None
        files = [f for f in entry.files
                 if wanted is None or f.role.removesuffix("-sidecar") in wanted]
        fetched = fetch_files(self.store(), files, folder)
        # Its adapters onto this machine's shelf too, so Restore settings finds them by hash.
        shelve_adapters(self.store(), entry.files)
        return fetched

    def local_copy(self, take_id: int) -> Path:
        """The team take's sound on this machine (its finished file when it has one), fetched
        into the cache once and checked: for playing and dragging from the team library."""
        files = {f.role: f for f in self.entry(take_id).files}
        chosen = files.get("finished") or files.get("batch") or files.get("take")
        if chosen is None:
            raise TeamError(f"Team take #{take_id} has no audio file; publish it again.")
        return cached_copy(self.store(), chosen, cache_dir() / "team")

    # ---- ratings, tags, notes --------------------------------------------------------------

    def rate(self, take_id: int, stars: int) -> TeamEntry:
        if not 0 <= stars <= 5:
            raise TeamError(f"{stars} is not a rating; give 0 to 5 stars.")
        self._check_may_publish()
        if not self._run(lambda c: records.rate(c, take_id, self.designer, stars)):
            raise _no_take(take_id)
        return self.entry(take_id)

    def tag(self, take_id: int, add: Iterable[str] = (), remove: Iterable[str] = ()
            ) -> TeamEntry:
        """Add and take off this designer's tags; each kept in the case given (CatIDs are
        case-sensitive), one spelling a tag (the first given), matched without case."""
        added = _unique([check_tag(t) for t in add])
        removed = _unique([check_tag(t) for t in remove])
        if len(added) + len(removed) > MAX_TAGS:
            raise TeamError(f"That is {len(added) + len(removed)} tags at once; give at most "
                            f"{MAX_TAGS}.")
        self._check_may_publish()
        if not self._run(lambda c: records.retag(c, take_id, self.designer, added, removed)):
            raise _no_take(take_id)
        return self.entry(take_id)

    def note(self, take_id: int, text: str) -> None:
        if text.strip() and not self._run(
                lambda c: records.add_note(c, take_id, self.designer, text.strip())):
            raise _no_take(take_id)

    # ---- watching and lifetime -------------------------------------------------------------

    def watch(self, last_id: int | None = None) -> TeamWatcher:
        """A watcher of takes other designers publish from now (or after `last_id`); give it
        a thread of its own."""
        return TeamWatcher(self.connection, self.designer, last_id)

    def close(self) -> None:
        self._drop()
        self.outbox.close()

    def __enter__(self) -> TeamLibrary:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _unique(tags: list[str]) -> list[str]:
    """`tags` with repeats left out, whatever their case; the first spelling kept."""
    first: dict[str, str] = {}
    for tag in tags:
        first.setdefault(tag.casefold(), tag)
    return list(first.values())


def _no_take(take_id: int) -> TeamError:
    return TeamError(Advice(f"There is no take #{take_id} in the team library; give an id "
                            "that {0} shows.", Remedy.command("team list")))
