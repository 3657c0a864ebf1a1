"""Opening a library folder: read-only or writable, healthy, damaged or gone, and putting it right
after a crash. ClipLibrary opens its folder through LibraryOpening.open, which hands back the
database its parts share and what the user should know about the way it went (`notice`, one
sentence, and the schema it was migrated from).

A damaged database is never replaced in place: it is copied aside for the user, a new database
is built under a temporary name from everything that can be found (rebuild.py), and only the
finished one is renamed over the damaged file. A crash during the rebuild leaves the damaged
file where it was, so the next open simply starts the rebuild again.
"""

from __future__ import annotations

import logging
import os
import secrets
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from engines.error_sentences import sentence, shown
from engines.store import access, database, rebuild, repair, salvage, schema
from engines.store.database import LibraryDatabase
from engines.store.files import fsync_dir
from engines.store.folders import AUDIO_DIR, DB_NAME, TRASH_DIR, LibraryFolders
from engines.store.journal import EditJournal
from engines.store.quality_check import CHECK_ON_OPEN_S, QualityCheck
from engines.store.records import LibraryError
from engines.store.rows import created_now

log = logging.getLogger(__name__)

__all__ = ["AUDIO_DIR", "DB_NAME", "TRASH_DIR", "LibraryOpening", "OpenedLibrary"]

_REBUILDING = ".rebuilding-"  # infix of the database being built in place of a damaged one


@dataclass(frozen=True)
class OpenedLibrary:
    """What opening a library folder gives its parts and tells its user."""

    database: LibraryDatabase
    notice: str | None = None  # one sentence after a repair or when read-only, else None
    migrated_from: int | None = None  # the schema version it was migrated from, if it was


class LibraryOpening:
    """Opening one library folder, with the repairs a crash or damage calls for."""

    def __init__(self, folders: LibraryFolders, journal: EditJournal) -> None:
        self._folders = folders
        self._journal = journal

    def open(self, for_reading: bool = False) -> OpenedLibrary:
        """`for_reading`: the caller only reads (library list, show). Then a library another
        process is writing right now is read as it stands, without the tidying up a writable
        open does (that needs the write lock, and a reader must not wait for a writer)."""
        folders = self._folders
        reason = self._make_folders()
        if reason:
            conn, use_fts = database.open_read_only(folders.db_path, folders.root, reason)
            notice = access.read_only_notice(folders.root, reason)
            log.warning("%s", notice)
            return OpenedLibrary(LibraryDatabase(conn, folders.root, use_fts=use_fts,
                                                 read_only_reason=reason), notice)
        existed = folders.db_path.exists()
        opened = database.open_database(folders.db_path, folders.root)
        if opened.conn is None:
            db, report = self._rebuild(rebuild.RebuildReport(opened.damage or "damaged",
                                                             opened.kept_as))
            notice = report.notice()
            log.warning("%s", notice)
            return OpenedLibrary(db, notice)
        db = LibraryDatabase(opened.conn, folders.root)
        if for_reading and self._read_beside_writer(db):
            return OpenedLibrary(db)
        try:
            db.use_fts, migrated_from = database.prepare(db.conn, folders.db_path, folders.root)
            adopted = self._reconcile(db)
            restored = self._replay_journal(db, adopted) if adopted else set()
            self._compact_journal(db)
            QualityCheck(db, folders).check_quality(CHECK_ON_OPEN_S)  # takes from before flags
        except BaseException as err:
            db.conn.close()
            if isinstance(err, sqlite3.Error):  # outside a transaction: a pragma, a count
                raise LibraryError(sentence(f"The library at {shown(folders.root)} could not "
                                            "be opened", err)) from err
            raise
        notice = None
        if not existed and adopted:  # the database was deleted, the takes were not
            notice = rebuild.RebuildReport("missing", from_notes=len(adopted),
                                           from_journal=len(restored)).notice()
        return OpenedLibrary(db, notice, migrated_from)

    def _read_beside_writer(self, db: LibraryDatabase) -> bool:
        """True when another process holds the write lock and this connection can read the
        library as it is (WAL readers never wait for writers); the writer tidies it up."""
        try:
            if not database.writer_busy(db.conn) or not database.current(db.conn):
                return False  # free: the usual open; an old schema must wait to be migrated
            db.use_fts = schema.fts_usable(db.conn)
        except sqlite3.Error as err:
            db.conn.close()
            raise LibraryError(sentence(f"The library at {shown(self._folders.root)} could not "
                                        "be opened", err)) from err
        db.beside_writer = True
        log.info("the library %s is being written by another process; read as it stands",
                 self._folders.root)
        return True

    def _make_folders(self) -> str:
        """Create the folders a writable library needs. A folder that exists but cannot be
        written makes the library read-only rather than unusable: then why, in a few words
        (else "")."""
        folders = self._folders
        companions = [folders.db_path.with_name(DB_NAME + suffix)
                      for suffix in access.DB_COMPANIONS]
        if folders.root.is_dir() and not access.writable(
                folders.root, [folders.audio_dir, folders.trash_dir, folders.db_path,
                               *companions, self._journal.path]):
            return access.read_only_reason(folders.root)
        try:
            for folder in (folders.root, folders.audio_dir, folders.trash_dir):
                folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise LibraryError(sentence(f"The library folder {shown(folders.root)} cannot be "
                                        "created", err)) from err
        return ""

    # ---- after a crash ---------------------------------------------------------------------

    def _reconcile(self, db: LibraryDatabase) -> set[int]:
        """Tidy up after any crash (see repair.py); returns the ids of the takes adopted back
        from the notes in their audio files."""
        audio_dir, trash_dir = self._folders.audio_dir, self._folders.trash_dir
        adopted: set[int] = set()
        with db.write() as _:
            listing = repair.list_folders((audio_dir, trash_dir))
            rows = db.conn.execute("SELECT id, audio_file, deleted FROM takes").fetchall()
            claimed = repair.settle_files(rows, listing, audio_dir, trash_dir)
            strays = repair.unclaimed(listing, claimed)
            purged = self._journal.purged() if strays else set()
            for path in strays:
                row = repair.row_from_file(path, deleted=path.parent == trash_dir,
                                           now=created_now())
                if row is not None and (row["id"], row["created"]) in purged:
                    repair.remove_purged(path)  # emptied out of the trash: never back
                    continue
                if row is None or db.conn.execute(
                        "SELECT 1 FROM takes WHERE id = ?", (row["id"],)).fetchone() is not None:
                    repair.set_aside(path, trash_dir)
                    continue
                try:
                    db.insert_take(row)
                except (sqlite3.IntegrityError, OverflowError) as err:  # a note out of range
                    log.warning("Could not rebuild take #%d from %s (%s)", row["id"], path, err)
                    continue
                adopted.add(row["id"])
                log.warning("Take #%d had no library entry; it was rebuilt from %s", row["id"],
                            path)
        return adopted

    def _replay_journal(self, db: LibraryDatabase, only: set[int] | None) -> set[int]:
        """Give takes that came back without their row what the edit journal kept of them."""
        with db.write() as _:
            restored = self._journal.replay(db.conn, only)
            if restored:
                rebuild.finish(db.conn, 0, db.use_fts)
        return restored

    def _compact_journal(self, db: LibraryDatabase) -> None:
        if self._journal.needs_compacting(db.conn):
            with db.write() as _:
                self._journal.compact(db.conn)

    # ---- rebuilding ------------------------------------------------------------------------

    def _rebuild(self, report: rebuild.RebuildReport
                 ) -> tuple[LibraryDatabase, rebuild.RebuildReport]:
        """Build a new database beside the damaged one from its readable rows, the audio
        files' notes and the edit journal, then put it in the damaged one's place."""
        root, db_path = self._folders.root, self._folders.db_path
        for stale in root.glob(f"{DB_NAME}{_REBUILDING}*"):
            try:
                stale.unlink(missing_ok=True)  # an earlier rebuild that was cut short
            except OSError:
                log.warning("Could not remove %s", stale, exc_info=True)
        temp = db_path.with_name(f"{DB_NAME}{_REBUILDING}{secrets.token_hex(4)}")
        conn: sqlite3.Connection | None = None
        try:
            conn = database.connect(temp)
            built = LibraryDatabase(conn, root)
            self._fill_rebuilt(built, report, temp)
            conn.close()
            # The damaged file's write-ahead log and shared memory (the log was copied aside)
            # must never meet the new file: SQLite would apply the log to it.
            for suffix in access.DB_COMPANIONS:
                db_path.with_name(DB_NAME + suffix).unlink(missing_ok=True)
            os.replace(temp, db_path)
            fsync_dir(root)
        except BaseException as err:
            if conn is not None:
                conn.close()
            for leftover in (temp, temp.with_name(temp.name + "-journal")):
                try:
                    leftover.unlink(missing_ok=True)
                except OSError:
                    log.warning("Could not remove %s", leftover, exc_info=True)
            if isinstance(err, (OSError, sqlite3.Error)):
                raise LibraryError(sentence(f"The library database {shown(db_path)} is "
                                            f"{report.cause} and could not be rebuilt",
                                            err)) from err
            raise
        try:
            conn = database.connect(db_path)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
        except sqlite3.Error as err:
            raise LibraryError(sentence(f"The rebuilt library database {shown(db_path)} "
                                        "could not be opened", err)) from err
        return LibraryDatabase(conn, root, use_fts=built.use_fts), report

    def _fill_rebuilt(self, db: LibraryDatabase, report: rebuild.RebuildReport,
                      temp: Path) -> None:
        db.use_fts, _ = database.prepare(db.conn, temp, self._folders.root)
        listing = repair.list_folders((self._folders.audio_dir, self._folders.trash_dir))
        known = max(rebuild.ids_in_file_names(name for names in listing.values()
                                              for name in names), self._journal.max_id())
        found = salvage.SalvagedRows()
        if report.kept_as is not None:
            wal = report.kept_as.with_name(report.kept_as.name + "-wal")
            found = salvage.salvage_takes(report.kept_as, wal, known)
        purged = self._journal.purged()
        rows = [row for row in found.rows if (row.get("id"), row.get("created")) not in purged]
        with db.write() as _:
            report.from_rows = rebuild.insert_salvaged(db.conn, rows, self._folders.root)
        adopted = self._reconcile(db)
        with db.write() as _:
            restored = self._journal.replay(db.conn)  # salvaged rows too: newer edits
            # Ids handed out before stay used (sidecars and copies name takes by id); file
            # names are not trusted for that: any file can be dropped into audio/.
            rebuild.finish(db.conn, max(self._journal.max_id(), found.sequence), db.use_fts)
        # Takes whose flags the journal did not have.
        QualityCheck(db, self._folders).check_quality(CHECK_ON_OPEN_S)
        report.from_notes = len(adopted)
        report.from_journal = len(adopted & restored)
