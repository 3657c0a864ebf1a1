"""Opening a library folder: read-only or writable, healthy, damaged or gone, and putting it right
after a crash. ClipLibrary runs `_open` when it is made; what the user should know about the
way it went is left in `notice` (one sentence) and `read_only`.

A damaged database is never replaced in place: it is copied aside for the user, a new database
is built under a temporary name from everything that can be found (rebuild.py), and only the
finished one is renamed over the damaged file. A crash during the rebuild leaves the damaged
file where it was, so the next open simply starts the rebuild again.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import secrets
import sqlite3
from pathlib import Path

from engines.failures import sentence, shown
from engines.store import access, database, rebuild, repair, salvage, schema
from engines.store.files import fsync_dir
from engines.store.journal import EditJournal
from engines.store.quality_check import CHECK_ON_OPEN_S, QualityCheck
from engines.store.records import LibraryError

log = logging.getLogger(__name__)

DB_NAME = "library.sqlite3"
AUDIO_DIR = "audio"
TRASH_DIR = "trash"
_REBUILDING = ".rebuilding-"  # infix of the database being built in place of a damaged one


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


class LibraryOpening(QualityCheck):
    """The opening part of ClipLibrary."""

    notice: str | None  # one sentence for the user after a repair or when read-only, else None
    migrated_from: int | None

    def _open(self, root: Path, for_reading: bool = False) -> None:
        """`for_reading`: the caller only reads (library list, show). Then a library another
        process is writing right now is read as it stands, without the tidying up a writable
        open does (that needs the write lock, and a reader must not wait for a writer)."""
        self.root = Path(root)
        self.audio_dir = self.root / AUDIO_DIR
        self.trash_dir = self.root / TRASH_DIR
        self.db_path = self.root / DB_NAME
        self._journal = EditJournal(self.root)
        self.notice = None
        self.migrated_from = None
        self.read_only = False
        self.reading_beside_writer = False
        self._read_only_reason = ""
        self._make_folders()
        if self.read_only:
            self._conn, self._use_fts = database.open_read_only(self.db_path, self.root,
                                                                self._read_only_reason)
            self.notice = access.read_only_notice(self.root, self._read_only_reason)
            log.warning("%s", self.notice)
            return
        existed = self.db_path.exists()
        opened = database.open_database(self.db_path, self.root)
        if opened.conn is None:
            report = self._rebuild(rebuild.RebuildReport(opened.damage or "damaged",
                                                         opened.kept_as))
            self.notice = report.notice()
            log.warning("%s", self.notice)
            return
        self._conn = opened.conn
        if for_reading and self._read_beside_writer():
            return
        try:
            self._use_fts, self.migrated_from = database.prepare(self._conn, self.db_path,
                                                                 self.root)
            adopted = self._reconcile()
            restored = self._replay_journal(adopted) if adopted else set()
            self._compact_journal()
            self.check_quality(CHECK_ON_OPEN_S)  # takes from before flags were kept
        except BaseException as err:
            self._conn.close()
            if isinstance(err, sqlite3.Error):  # outside a transaction: a pragma, a count
                raise LibraryError(sentence(f"The library at {shown(self.root)} could not be "
                                            "opened", err)) from err
            raise
        if not existed and adopted:  # the database was deleted, the takes were not
            self.notice = rebuild.RebuildReport("missing", from_notes=len(adopted),
                                                from_journal=len(restored)).notice()

    def _read_beside_writer(self) -> bool:
        """True when another process holds the write lock and this connection can read the
        library as it is (WAL readers never wait for writers); the writer tidies it up."""
        try:
            if not database.writer_busy(self._conn) or not database.current(self._conn):
                return False  # free: the usual open; an old schema must wait to be migrated
            self._use_fts = schema.fts_usable(self._conn)
        except sqlite3.Error as err:
            self._conn.close()
            raise LibraryError(sentence(f"The library at {shown(self.root)} could not be "
                                        "opened", err)) from err
        self.reading_beside_writer = True
        log.info("the library %s is being written by another process; read as it stands",
                 self.root)
        return True

    def _make_folders(self) -> None:
        """Create the folders a writable library needs; a folder that exists but cannot be
        written makes the library read-only rather than unusable."""
        companions = [self.db_path.with_name(DB_NAME + suffix)
                      for suffix in access.DB_COMPANIONS]
        if self.root.is_dir() and not access.writable(
                self.root, [self.audio_dir, self.trash_dir, self.db_path, *companions,
                            self._journal.path]):
            self.read_only = True
            self._read_only_reason = access.read_only_reason(self.root)
            return
        try:
            for folder in (self.root, self.audio_dir, self.trash_dir):
                folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise LibraryError(sentence(f"The library folder {shown(self.root)} cannot be "
                                        "created", err)) from err

    # ---- after a crash ---------------------------------------------------------------------

    def _reconcile(self) -> set[int]:
        """Tidy up after any crash (see repair.py); returns the ids of the takes adopted back
        from the notes in their audio files."""
        adopted: set[int] = set()
        with self._write() as _:
            listing = repair.list_folders((self.audio_dir, self.trash_dir))
            rows = self._conn.execute("SELECT id, audio_file, deleted FROM takes").fetchall()
            claimed = repair.settle_files(rows, listing, self.audio_dir, self.trash_dir)
            strays = repair.unclaimed(listing, claimed)
            purged = self._journal.purged() if strays else set()
            for path in strays:
                row = repair.row_from_file(path, deleted=path.parent == self.trash_dir,
                                           now=_now())
                if row is not None and (row["id"], row["created"]) in purged:
                    repair.remove_purged(path)  # emptied out of the trash: never back
                    continue
                if row is None or self._conn.execute(
                        "SELECT 1 FROM takes WHERE id = ?", (row["id"],)).fetchone() is not None:
                    repair.set_aside(path, self.trash_dir)
                    continue
                try:
                    self._insert(row)
                except (sqlite3.IntegrityError, OverflowError) as err:  # a note out of range
                    log.warning("Could not rebuild take #%d from %s (%s)", row["id"], path, err)
                    continue
                adopted.add(row["id"])
                log.warning("Take #%d had no library entry; it was rebuilt from %s", row["id"],
                            path)
        return adopted

    def _insert(self, row: dict) -> None:
        names = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        self._conn.execute(f"INSERT INTO takes ({names}) VALUES ({marks})", tuple(row.values()))
        if self._use_fts:
            self._conn.execute(f"INSERT INTO {schema.FTS_TABLE} (rowid, search_text) "
                               "VALUES (?, ?)", (row["id"], row["search_text"]))

    def _replay_journal(self, only: set[int] | None) -> set[int]:
        """Give takes that came back without their row what the edit journal kept of them."""
        with self._write() as _:
            restored = self._journal.replay(self._conn, only)
            if restored:
                rebuild.finish(self._conn, 0, self._use_fts)
        return restored

    def _compact_journal(self) -> None:
        if self._journal.needs_compacting(self._conn):
            with self._write() as _:
                self._journal.compact(self._conn)

    # ---- rebuilding ------------------------------------------------------------------------

    def _rebuild(self, report: rebuild.RebuildReport) -> rebuild.RebuildReport:
        """Build a new database beside the damaged one from its readable rows, the audio
        files' notes and the edit journal, then put it in the damaged one's place."""
        for stale in self.root.glob(f"{DB_NAME}{_REBUILDING}*"):
            try:
                stale.unlink(missing_ok=True)  # an earlier rebuild that was cut short
            except OSError:
                log.warning("Could not remove %s", stale, exc_info=True)
        temp = self.db_path.with_name(f"{DB_NAME}{_REBUILDING}{secrets.token_hex(4)}")
        conn: sqlite3.Connection | None = None
        try:
            conn = self._conn = database.connect(temp)
            self._fill_rebuilt(report, temp)
            conn.close()
            # The damaged file's write-ahead log and shared memory (the log was copied aside)
            # must never meet the new file: SQLite would apply the log to it.
            for suffix in access.DB_COMPANIONS:
                self.db_path.with_name(DB_NAME + suffix).unlink(missing_ok=True)
            os.replace(temp, self.db_path)
            fsync_dir(self.root)
        except BaseException as err:
            if conn is not None:
                conn.close()
            for leftover in (temp, temp.with_name(temp.name + "-journal")):
                try:
                    leftover.unlink(missing_ok=True)
                except OSError:
                    log.warning("Could not remove %s", leftover, exc_info=True)
            if isinstance(err, (OSError, sqlite3.Error)):
                raise LibraryError(sentence(f"The library database {shown(self.db_path)} is "
                                            f"{report.cause} and could not be rebuilt",
                                            err)) from err
            raise
        try:
            self._conn = database.connect(self.db_path)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
        except sqlite3.Error as err:
            raise LibraryError(sentence(f"The rebuilt library database {shown(self.db_path)} "
                                        "could not be opened", err)) from err
        return report

    def _fill_rebuilt(self, report: rebuild.RebuildReport, temp: Path) -> None:
        self._use_fts, _ = database.prepare(self._conn, temp, self.root)
        listing = repair.list_folders((self.audio_dir, self.trash_dir))
        known = max(rebuild.ids_in_file_names(name for names in listing.values()
                                              for name in names), self._journal.max_id())
        found = salvage.SalvagedRows()
        if report.kept_as is not None:
            wal = report.kept_as.with_name(report.kept_as.name + "-wal")
            found = salvage.salvage_takes(report.kept_as, wal, known)
        purged = self._journal.purged()
        rows = [row for row in found.rows if (row.get("id"), row.get("created")) not in purged]
        with self._write() as _:
            report.from_rows = rebuild.insert_salvaged(self._conn, rows, self.root)
        adopted = self._reconcile()
        with self._write() as _:
            restored = self._journal.replay(self._conn)  # salvaged rows too: newer edits
            # Ids handed out before stay used (sidecars and copies name takes by id); file
            # names are not trusted for that: any file can be dropped into audio/.
            rebuild.finish(self._conn, max(self._journal.max_id(), found.sequence),
                           self._use_fts)
        self.check_quality(CHECK_ON_OPEN_S)  # takes whose flags the journal did not have
        report.from_notes = len(adopted)
        report.from_journal = len(adopted & restored)
