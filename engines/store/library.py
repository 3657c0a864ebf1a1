"""The sound library: every take kept on disk and in SQLite with what made it.

Layout under the library folder: see folders.py (library.sqlite3, audio/, trash/, the edit
journal). Crash safety: a take's audio is renamed into place while the writer holds the
database's write lock and only then is its row committed (keeper.py); deletes move the file
inside the same locked transaction that flips the row's flag (editing.py); the next open adopts
a file that has no row, removes temporary files and puts any file whose move was interrupted
where its row says it belongs (opening.py, repair.py).

One sqlite3 connection per ClipLibrary, used from the thread that made it (the GUI thread, or
the CLI's main thread); transactions are short. Several processes may open the same library.

ClipLibrary is the one entry point the front ends use. It composes parts, each with its own
state and handed only what it needs (the database, the folders, the journal, another part):
    database     LibraryDatabase: the connection, reads, the write transaction, a row put in
    opening      LibraryOpening: opening, repairing, rebuilding and migrating (once, at start)
    lookup       TakeLookup: finding takes (get, search, lineage, identify)
    take_audio   TakeAudio: reading a take's audio; the request that makes it again
    keeper       TakeKeeper: keeping new takes, imports and regenerated audio
    editing      TakeEditing: rating, tags, notes, names, labels, finishing; trash and restore
    embeddings   TakeEmbeddings: each take's sound embedding and the index searches run on
    quality_check  QualityCheck: quality flags for takes kept without them
    export_plan  LibraryExport: takes out of the library, as made or finished, named
and delegates to them below.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engines.store.editing import TakeEditing
from engines.store.embeddings import Embedded, TakeEmbeddings
from engines.store.files import copy_atomic, sha256_file
from engines.store.folders import AUDIO_DIR, DB_NAME, TRASH_DIR, LibraryFolders
from engines.store.journal import EditJournal
from engines.store.keeper import TakeKeeper
from engines.store.lookup import TakeLookup
from engines.store.opening import LibraryOpening
from engines.store.quality_check import QualityCheck
from engines.store.records import LibraryError, TakeRecord, normalize_tags
from engines.store.schema import SCHEMA_VERSION
from engines.store.sound_files import SoundFile, SoundFiles, SoundFolder
from engines.store.take_audio import TakeAudio

if TYPE_CHECKING:
    from engines.generation_result import GenerationResult
    from engines.request import GenerationRequest
    from engines.similarity.index import EmbeddingIndex
    from engines.store.export_plan import ExportOptions, LibraryExport

__all__ = ["AUDIO_DIR", "DB_NAME", "SCHEMA_VERSION", "TRASH_DIR", "ClipLibrary",
           "LibraryError", "TakeRecord", "copy_atomic", "normalize_tags", "sha256_file"]


class ClipLibrary:
    """The library in one folder. See the module docstring for the layout and guarantees.

    `notice`: one sentence for the user after a repair, or while the library is read-only,
    else None. `read_only`: the folder cannot be written, so takes can be found, played and
    exported, but every change is refused with a LibraryError that says so."""

    def __init__(self, root: Path, *, for_reading: bool = False) -> None:
        """`for_reading`: only reads follow, so a writer holding the lock is not waited for
        (see LibraryOpening.open)."""
        folders = LibraryFolders.under(root)
        self.root, self.audio_dir = folders.root, folders.audio_dir
        self.trash_dir, self.db_path = folders.trash_dir, folders.db_path
        self._journal = EditJournal(folders.root)
        opened = LibraryOpening(folders, self._journal).open(for_reading)
        self.notice: str | None = opened.notice
        self.migrated_from: int | None = opened.migrated_from
        self._db = db = opened.database
        self._lookup = TakeLookup(db, folders)
        self._audio = TakeAudio(self._lookup)
        self._embeddings = TakeEmbeddings(db)
        self._keeper = TakeKeeper(db, self._journal, folders, self._lookup, self._embeddings)
        self._editing = TakeEditing(db, self._journal, self._lookup, folders)
        self._quality = QualityCheck(db, folders)
        self._sounds = SoundFiles(db)
        self._exporter: LibraryExport | None = None  # built on the first export (_export_part)

    @property
    def read_only(self) -> bool:
        return self._db.read_only

    @property
    def reading_beside_writer(self) -> bool:
        """Opened for reading while another process was writing: read as it stood."""
        return self._db.beside_writer

    @property
    def _conn(self) -> sqlite3.Connection:
        """The connection every part shares (None once closed), for tests that look under
        the parts or put a failing connection in its place."""
        return self._db.conn

    @_conn.setter
    def _conn(self, conn: sqlite3.Connection) -> None:
        self._db.conn = conn

    def require_writable(self) -> None:
        """LibraryError (one sentence) when the library is read-only."""
        self._db.require_writable()

    # ---- keeping: keeper.py ----------------------------------------------------------------

    def add(self, result: GenerationResult, *, parent_id: int | None = None, name: str = "",
            init_source: str | None = None, labels: object = None,
            variation: int | None = None, variations: int | None = None) -> TakeRecord:
        """Keep a finished take (TakeKeeper.add)."""
        return self._keeper.add(result, parent_id=parent_id, name=name, init_source=init_source,
                               labels=labels, variation=variation, variations=variations)

    def add_imported(self, pcm: np.ndarray, source: str, name: str = "", *,
                     parent_id: int | None = None, latents: np.ndarray | None = None,
                     space: str = "") -> TakeRecord:
        """Keep the user's own audio exactly (TakeKeeper.add_imported)."""
        return self._keeper.add_imported(pcm, source, name, parent_id=parent_id,
                                        latents=latents, space=space)

    def replace_audio(self, take_id: int, result: GenerationResult) -> TakeRecord:
        """Give a take the audio of its regeneration (TakeKeeper.replace_audio)."""
        return self._keeper.replace_audio(take_id, result)

    # ---- finding: lookup.py ----------------------------------------------------------------

    def get(self, take_id: int) -> TakeRecord:
        """The take; LibraryError (one sentence) when there is none of that id."""
        return self._lookup.get(take_id)

    def search(self, text: str = "", *, model: str | None = None,
               favourite: bool | None = None, min_rating: int = 0, since: Any = None,
               until: Any = None, sort: str = "created", descending: bool = True,
               limit: int | None = 200, offset: int = 0, include_deleted: bool = False,
               quality: str | None = None, finished: bool | None = None,
               tier: str | None = None, source: str | None = None,
               adapter: str | None = None) -> list[TakeRecord]:
        """Takes found by text and filters, sorted (TakeLookup.search; `source`: generated,
        imported or one imported folder; `adapter`: a NAME_OR_SHA)."""
        return self._lookup.search(text, model=model, favourite=favourite,
                                  min_rating=min_rating, since=since, until=until, sort=sort,
                                  descending=descending, limit=limit, offset=offset,
                                  include_deleted=include_deleted, quality=quality,
                                  finished=finished, tier=tier, source=source,
                                  adapter=adapter)

    def count(self, text: str = "", *, model: str | None = None, favourite: bool | None = None,
              min_rating: int = 0, since: Any = None, until: Any = None,
              include_deleted: bool = False, quality: str | None = None,
              finished: bool | None = None, tier: str | None = None,
              source: str | None = None, adapter: str | None = None,
              **_ignored: Any) -> int:
        """How many takes `search` would find without a limit (sort arguments are ignored)."""
        return self._lookup.count(text, model=model, favourite=favourite,
                                 min_rating=min_rating, since=since, until=until,
                                 include_deleted=include_deleted, quality=quality,
                                 finished=finished, tier=tier, source=source, adapter=adapter)

    def models(self) -> list[str]:
        """The model keys of the takes kept, for a filter list."""
        return self._lookup.models()

    def tiers(self) -> list[str]:
        """The codec tiers of the takes kept, for a filter list."""
        return self._lookup.tiers()

    def lineage(self, take_id: int) -> list[TakeRecord]:
        """The take, its parent, the parent's parent, ... (TakeLookup.lineage)."""
        return self._lookup.lineage(take_id)

    def identify(self, path: str | os.PathLike[str]) -> TakeRecord | None:
        """The take an audio file found anywhere is a copy of, or None (TakeLookup.identify)."""
        return self._lookup.identify(path)

    def variation_number(self, take_id: int) -> tuple[int, int]:
        """(n, of): the take's number in its set of variations, and the set's size."""
        return self._lookup.variation_number(take_id)

    # ---- sound files referenced in place: sound_files.py -----------------------------------

    @property
    def sounds(self) -> SoundFiles:
        """The sound tables, for engines.sound_import (imports, rescans, peaks)."""
        return self._sounds

    def sound_folders(self) -> list[SoundFolder]:
        """The folders imported in place, with how many sounds each has in the library."""
        return self._sounds.sound_folders()

    def sound_file(self, take_id: int) -> SoundFile | None:
        """What the library knows of a referenced sound's file; None for any other take."""
        return self._sounds.sound_file(take_id)

    def sound_peaks(self, take_id: int) -> np.ndarray | None:
        """A referenced sound's thumbnail peaks, float32 (2, PEAK_COLUMNS); None until made."""
        return self._sounds.sound_peaks(take_id)

    # ---- audio: take_audio.py --------------------------------------------------------------

    def load_audio(self, take_id: int) -> np.ndarray:
        """The take's samples as int16 (N, 2)."""
        return self._audio.load_audio(take_id)

    def load_float_audio(self, take_id: int, max_frames: int = -1) -> np.ndarray:
        """float32 (N, 2) exactly as a request used it (TakeAudio.load_float_audio)."""
        return self._audio.load_float_audio(take_id, max_frames)

    def verified_audio(self, take_id: int) -> np.ndarray:
        """The take's samples as stored, checked against the hash saved with them."""
        return self._audio.verified_audio(take_id)

    def audio_problem(self, take_id: int) -> str | None:
        """Why the take's audio file cannot be used, as one sentence; None when it is sound."""
        return self._audio.audio_problem(take_id)

    def regeneration_request(self, take_id: int) -> GenerationRequest:
        """The request that re-makes a take exactly, init audio included."""
        return self._audio.regeneration_request(take_id)

    # ---- changing: editing.py --------------------------------------------------------------

    def update(self, take_id: int, *, rating: int | None = None, favourite: bool | None = None,
               tags: Iterable[str] | str | None = None, notes: str | None = None,
               name: str | None = None) -> TakeRecord:
        """Change what the user keeps about a take; None leaves a field as it is."""
        return self._editing.update(take_id, rating=rating, favourite=favourite, tags=tags,
                                   notes=notes, name=name)

    def set_labels(self, take_id: int, labels: object) -> TakeRecord:
        """Change the UCS labels a take keeps (TakeEditing.set_labels)."""
        return self._editing.set_labels(take_id, labels)

    def set_finishing(self, take_id: int, finishing: dict | None) -> TakeRecord:
        """Keep a take's finishing chain, or drop it with None (TakeEditing.set_finishing)."""
        return self._editing.set_finishing(take_id, finishing)

    def delete(self, take_id: int) -> None:
        """Move the take's audio into trash/ and hide it from searches; `restore` undoes it."""
        self._editing.delete(take_id)

    def restore(self, take_id: int) -> None:
        """Undo `delete`: the audio goes back to audio/ and the take shows again."""
        self._editing.restore(take_id)

    def in_trash(self) -> list[int]:
        """The ids of the takes in the trash, oldest first."""
        return self._editing.in_trash()

    def purge_trash(self, ids: Iterable[int] | None = None, *,
                    unremovable: Callable[[Path, OSError], None] | None = None) -> int:
        """Delete takes in the trash for good; how many (TakeEditing.purge_trash)."""
        return self._editing.purge_trash(ids, unremovable=unremovable)

    def check_quality(self, budget_s: float | None = None) -> int:
        """Measure the takes kept without quality flags (QualityCheck.check_quality)."""
        return self._quality.check_quality(budget_s)

    # ---- sound embeddings: embeddings.py ---------------------------------------------------

    def similarity_index(self) -> EmbeddingIndex:
        """Every kept embedding, in memory (TakeEmbeddings.similarity_index)."""
        return self._embeddings.similarity_index()

    def takes_to_embed(self, encodable: Collection[str] = ()) -> list[tuple[int, str]]:
        """(take id, latent space) of the takes without a current embedding."""
        return self._embeddings.takes_to_embed(encodable)

    def latent_spaces(self) -> list[str]:
        """The latent spaces (codecs) of the generated takes kept, most takes first."""
        return self._embeddings.latent_spaces()

    def keep_embeddings(self, items: Iterable[tuple[int, Embedded]]) -> int:
        """Keep computed embeddings; how many (TakeEmbeddings.keep_embeddings)."""
        return self._embeddings.keep_embeddings(items)

    # ---- out: export_plan.py ---------------------------------------------------------------

    def _export_part(self) -> LibraryExport:
        """The export part, built on first use: its module pulls the finishing and delivery
        chain, which opening a library (the window's first paint, `library list`) never needs."""
        if self._exporter is None:
            # Imported here, not at the top: ~35 ms of finishing/delivery modules off startup.
            from engines.store.export_plan import LibraryExport

            self._exporter = LibraryExport(self._lookup, self._audio, self.root)
        return self._exporter

    def export(self, ids: Iterable[int], folder: Path,
               options: ExportOptions | None = None) -> list[Path]:
        """Takes and their sidecars into `folder`; the audio paths (LibraryExport.export)."""
        return self._export_part().export(ids, folder, options)

    def export_zip(self, ids: Iterable[int], zip_path: Path,
                   options: ExportOptions | None = None) -> Path:
        """One zip of takes and their sidecars, written atomically."""
        return self._export_part().export_zip(ids, zip_path, options)

    # ---- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ClipLibrary:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
