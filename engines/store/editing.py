"""Changing kept takes: what the user keeps about them (rating, tags, notes, name, finishing
chain), moving them to the trash and back, and emptying the trash for good."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from engines.errors import RequestError
from engines.finish.settings import FinishSettings
from engines.store import schema
from engines.store.database import LibraryDatabase
from engines.store.folders import LibraryFolders
from engines.store.journal import EditJournal
from engines.store.lookup import TakeLookup
from engines.store.records import (
    LibraryError,
    TakeRecord,
    label_columns,
    normalize_tags,
    take_id_of,
)
from engines.store.sound_files import SoundFiles
from engines.text import storable
from engines.text_display import blank_label_sentence, looks_blank

log = logging.getLogger(__name__)


class TakeEditing:
    """Changing what the library keeps about takes. Every change is made in one write
    transaction that also appends it to the edit `journal`, so a rebuild brings it back."""

    def __init__(self, db: LibraryDatabase, journal: EditJournal, lookup: TakeLookup,
                 folders: LibraryFolders) -> None:
        self._db = db
        self._journal = journal
        self._lookup = lookup
        self._folders = folders

    def update(self, take_id: int, *, rating: int | None = None, favourite: bool | None = None,
               tags: Iterable[str] | str | None = None, notes: str | None = None,
               name: str | None = None) -> TakeRecord:
        """Change what the user keeps about a take; None leaves a field as it is."""
        record = self._lookup.get(take_id)
        changes: dict[str, Any] = {}
        if rating is not None:
            if isinstance(rating, bool) or not isinstance(rating, (int, np.integer)) \
                    or not 0 <= int(rating) <= 5:
                raise LibraryError(f"Rating {rating!r} is out of range; give 0 to 5 stars.")
            changes["rating"] = int(rating)
        if favourite is not None:
            changes["favourite"] = int(bool(favourite))
        new_tags = record.tags if tags is None else normalize_tags(tags)
        if tags is not None:
            # Only tags this call adds: one kept before this rule must not block every edit.
            for tag in new_tags:
                if tag not in record.tags and looks_blank(tag):
                    raise LibraryError(blank_label_sentence("The tag", tag))
            changes["tags"] = json.dumps(new_tags)
        for key, value in (("notes", notes), ("name", name)):
            if value is not None:
                if not isinstance(value, str):
                    raise LibraryError(f"The {key} must be text, not {type(value).__name__}.")
                value = storable(value)
                changes[key] = value.strip() if key == "notes" else " ".join(value.split())
                if key == "name" and looks_blank(changes[key]):
                    raise LibraryError(blank_label_sentence("The name", changes[key]))
        if not changes:
            return record
        text = schema.search_text(record.prompt, changes.get("name", record.name), new_tags,
                                  changes.get("notes", record.notes), record.init_source)
        if record.is_sound_file:  # what its file said (labels, keywords, path) stays findable
            text = "\n".join(part for part in (text, SoundFiles(self._db).words(record.id))
                              if part)
        changes["search_text"] = text
        assignments = ", ".join(f"{key} = ?" for key in changes)
        with self._db.write():
            self._db.conn.execute(f"UPDATE takes SET {assignments} WHERE id = ?",
                                  (*changes.values(), record.id))
            if self._db.use_fts:
                self._db.conn.execute(f"UPDATE {schema.FTS_TABLE} SET search_text = ? "
                                      "WHERE rowid = ?", (text, record.id))
            self._journal.append(record.id, record.created, changes)
        return self._lookup.get(record.id)

    def set_labels(self, take_id: int, labels: object) -> TakeRecord:
        """Change the UCS labels a take keeps: only those `labels` has (a mapping of
        records.LABEL_COLUMNS keys, or an engines.delivery.delivery_take.Labels), '' clearing
        one; the
        others stay. Checking a CatID against the user's UCS list is the caller's part
        (engines.delivery.labels.label_changes). The audio is never touched."""
        record = self._lookup.get(take_id)
        changes = label_columns(labels)
        if not changes:
            return record
        assignments = ", ".join(f"{key} = ?" for key in changes)
        with self._db.write():
            self._db.conn.execute(f"UPDATE takes SET {assignments} WHERE id = ?",
                                  (*changes.values(), record.id))
            self._journal.append(record.id, record.created, changes)
        return self._lookup.get(record.id)

    def set_finishing(self, take_id: int, finishing: dict | None) -> TakeRecord:
        """Keep a take's finishing chain (FinishedTake.record(): "chain", and "loop",
        "report", "loop_points" as it made them), or drop it with None. The take's audio is
        never touched: the finished audio is derived from it and the chain whenever needed."""
        record = self._lookup.get(take_id)
        text = None if finishing is None else stored_finishing(record.id, finishing)
        with self._db.write():
            self._db.conn.execute("UPDATE takes SET finishing = ? WHERE id = ?",
                                  (text, record.id))
            self._journal.append(record.id, record.created, {"finishing": text})
        return self._lookup.get(record.id)

    def delete(self, take_id: int) -> None:
        """Move the take's audio into trash/ and hide it from searches; `restore` undoes it."""
        self._set_deleted(take_id, True)

    def restore(self, take_id: int) -> None:
        """Undo `delete`: the audio goes back to audio/ and the take shows again."""
        self._set_deleted(take_id, False)

    def _set_deleted(self, take_id: int, deleted: bool) -> None:
        record = self._lookup.get(take_id)
        if record.deleted == deleted:
            return
        source = record.audio_path
        target = self._folders.audio_folder(deleted) / source.name
        relative = source.parent in (self._folders.audio_dir, self._folders.trash_dir)
        with self._db.write() as undo:
            self._db.conn.execute("UPDATE takes SET deleted = ? WHERE id = ?",
                                  (int(deleted), record.id))
            if relative and source.is_file():
                os.replace(source, target)  # inside the transaction: see opening's reconcile
                undo.append(lambda: os.replace(target, source))

    def in_trash(self) -> list[int]:
        """The ids of the takes in the trash, oldest first."""
        return [row[0] for row in self._db.rows("SELECT id FROM takes WHERE deleted = 1 "
                                                "ORDER BY id")]

    def purge_trash(self, ids: Iterable[int] | None = None, *,
                    unremovable: Callable[[Path, OSError], None] | None = None) -> int:
        """Delete the takes in the trash for good (of `ids` only, when given: those the user
        was shown; any of them no longer in the trash is left alone), and return how many.

        Their rows go first, with a purge line each in the edit journal, in one committed
        transaction; only then are their files removed from trash/. So a failure leaves either
        every take as it was or every take gone, and a file left behind (a crash, or one that
        cannot be removed: `unremovable(path, error)` is told, else it is logged) is removed
        by the next open instead of coming back. A file outside the library (kept by the first
        version) is left where it is."""
        wanted = None if ids is None else {take_id_of(i) for i in ids}
        with self._db.write() as undo:
            rows = [row for row in self._db.conn.execute(
                        "SELECT id, created, audio_file FROM takes WHERE deleted = 1")
                    if wanted is None or row["id"] in wanted]
            if not rows:
                return 0
            takes = [(row["id"], row["created"]) for row in rows]
            self._journal.purge(takes)
            undo.append(lambda: self._journal.purge(takes, purged=False))
            gone = [(i,) for i, _ in takes]
            self._db.conn.executemany("DELETE FROM takes WHERE id = ?", gone)
            if self._db.use_fts:
                self._db.conn.executemany(f"DELETE FROM {schema.FTS_TABLE} WHERE rowid = ?",
                                          gone)
        for row in rows:
            name = row["audio_file"]
            if os.sep in name or "/" in name:
                continue  # an absolute path kept from a version 1 library
            path = self._folders.trash_dir / name
            try:
                path.unlink(missing_ok=True)
            except OSError as err:
                if unremovable is None:
                    log.warning("Could not remove %s from the trash", path, exc_info=True)
                else:
                    unremovable(path, err)
        log.info("Library: emptied %d take(s) out of the trash for good", len(rows))
        return len(rows)


MAX_FINISHING_BYTES = 64 * 1024  # a chain and its report take about 1.5 KB


def stored_finishing(take_id: int, finishing: object) -> str:
    """The JSON text the library keeps for a finishing record; LibraryError (one sentence)
    when it is not one. Its chain is read back through FinishSettings, so what is kept is
    always a chain this version can run."""
    refused = f"The finishing of take #{take_id} was not kept"
    if not isinstance(finishing, dict) or not isinstance(finishing.get("chain"), dict):
        raise LibraryError(f"{refused}: it must be a JSON object with the chain under "
                           "\"chain\"; finish the take again.")
    try:
        chain = FinishSettings.from_dict(finishing["chain"]).to_dict()
    except RequestError as err:
        raise LibraryError(f"{refused}: {str(err).rstrip('.')}.") from err
    points = finishing.get("loop_points")
    if points is not None and not (isinstance(points, (list, tuple)) and len(points) == 2
                                   and all(type(p) is int and p >= 0 for p in points)
                                   and points[0] <= points[1]):
        raise LibraryError(f"{refused}: its loop points must be two frame numbers, start "
                           "before end; finish the take again.")
    for key, kinds in (("loop", (dict, type(None))), ("report", (dict, type(None)))):
        if not isinstance(finishing.get(key), kinds):
            raise LibraryError(f"{refused}: its {key} must be a JSON object; finish the take "
                               "again.")
    try:
        # ASCII: text that is not valid UTF-8 (lone surrogates) is kept as \\udcxx escapes.
        text = json.dumps({**finishing, "chain": chain})
    except (TypeError, ValueError) as err:
        raise LibraryError(f"{refused}: it holds values JSON cannot keep; finish the take "
                           "again.") from err
    if len(text) > MAX_FINISHING_BYTES:
        raise LibraryError(f"{refused}: it is larger than {MAX_FINISHING_BYTES // 1024} KB; "
                           "finish the take again.")
    return text
