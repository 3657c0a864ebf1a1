"""The library's sound embeddings (engines.similarity): one row per take in their own table, kept
as compact float16 blobs (engines.similarity.stored), and the in-memory index searches run on.

    embeddings (take_id INTEGER PRIMARY KEY, space TEXT, version INTEGER, vector BLOB)

`space` is the latent space the vector's latent part came from (the codec: "same-s", "same-l",
"demo"), "" when it has none; `version` the recipe (EMBEDDING_VERSION) that made it.

Embeddings are derived data, like the text index: the table is created by every writable open
(no schema version: an older SA3 Studio opens the library as before and ignores it), a take kept
from now on gets its row in the same transaction as its take row, and takes without one (kept
before, rebuilt from their audio files, or made by another recipe version) get theirs from
`engines.store.embedding_backfill`. A read-only library is searched on vectors computed in memory.

The index is loaded once per library opened, kept in step with this connection's own writes, and
loaded again when another connection committed since (PRAGMA data_version says so).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING

import numpy as np

from engines.constants import SAMPLE_RATE
from engines.similarity.embedding import EMBEDDING_VERSION, has_latent_part, take_embedding
from engines.similarity.index import EmbeddingIndex
from engines.similarity.stored import BLOB_BYTES, from_blobs, to_blob
from engines.store.database import LibraryDatabase
from engines.store.records import IMPORTED
from engines.store.schema import EMBEDDINGS_TABLE as TABLE

if TYPE_CHECKING:
    from engines.generation_result import GenerationResult

log = logging.getLogger(__name__)

Embedded = tuple[str, np.ndarray]  # (latent space or "", unit vector)


def result_embedding(result: GenerationResult, pcm: np.ndarray) -> Embedded:
    """(space, vector) of a generated take: its audio and final latents, in the latent space of
    its codec; a result without usable latents gets an audio-only vector (space "")."""
    vector = take_embedding(pcm, int(result.sample_rate), getattr(result, "latents", None))
    return (result.request.decoder if has_latent_part(vector) else ""), vector


def audio_embedding(audio: np.ndarray, latents: np.ndarray | None = None,
                    space: str = "") -> Embedded:
    """(space, vector) of audio at SAMPLE_RATE (an import, or a take's stored samples), with
    its latents in `space` when an encoder made them, else from the audio alone (space "")."""
    vector = take_embedding(audio, SAMPLE_RATE, latents)
    return (space if has_latent_part(vector) else ""), vector


class TakeEmbeddings:
    """Each take's sound embedding: its row (written inside the caller's transaction when a
    take is kept) and the in-memory index searches run on, which this part owns."""

    def __init__(self, db: LibraryDatabase) -> None:
        self._db = db
        self._index: EmbeddingIndex | None = None
        self._index_seen: int | None = None  # PRAGMA data_version when the index was loaded
        # (data_version, this connection's total_changes, encodable spaces) when takes_to_embed
        # last found nothing to do: until one of them changes, nothing can be missing (a search
        # of a large library then skips the query: about 70 ms at 100,000 takes).
        self._complete_stamp: tuple | None = None
        self._unstored: dict[int, Embedded] = {}  # embedded this session, not storable here

    def _has_table(self) -> bool:
        return self._db.conn.execute("SELECT count(*) FROM sqlite_master WHERE name = ?",
                                     (TABLE,)).fetchone()[0] > 0

    def insert(self, take_id: int, embedded: Embedded) -> None:
        """Keep a take's embedding (inside the caller's write transaction)."""
        space, vector = embedded
        self._db.conn.execute(f"INSERT OR REPLACE INTO {TABLE} (take_id, space, version, "
                              "vector) VALUES (?, ?, ?, ?)",
                              (take_id, space, EMBEDDING_VERSION, to_blob(vector)))

    def index_put(self, take_id: int, embedded: Embedded) -> None:
        """Tell a loaded index about an embedding this connection committed."""
        if self._index is not None:
            self._index.add(take_id, *embedded)

    def similarity_index(self) -> EmbeddingIndex:
        """Every kept embedding, in memory (loaded on first use; again after another process
        changed the library)."""
        seen = self._db.conn.execute("PRAGMA data_version").fetchone()[0]
        if self._index is None or seen != self._index_seen:
            index = EmbeddingIndex()
            if self._has_table():
                rows = self._db.rows(f"SELECT take_id, space, vector FROM {TABLE} "
                                     "WHERE version = ? AND length(vector) = ?",
                                     (EMBEDDING_VERSION, BLOB_BYTES))
                index = EmbeddingIndex(capacity=max(1024, 2 * len(rows)))
                index.add_many([r[0] for r in rows], [r[1] for r in rows],
                               from_blobs([bytes(r[2]) for r in rows]))
            for take_id, embedded in self._unstored.items():
                index.add(take_id, *embedded)
            self._index, self._index_seen = index, seen
        return self._index

    def takes_to_embed(self, encodable: Collection[str] = ()) -> list[tuple[int, str]]:
        """(take id, latent space to embed it in, "" for audio only) of every take in the
        library (not in the trash) that has no current embedding, oldest first. `encodable`:
        the latent spaces an encoder is at hand for; a take embedded from its audio alone is
        listed again when its space is one (imported audio: the first of them)."""
        spaces = list(encodable)
        conn = self._db.conn
        stamp = (conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes,
                 tuple(spaces))
        if stamp == self._complete_stamp:
            return []
        if not self._has_table():  # a read-only library from before embeddings
            rows = self._db.rows("SELECT id, mode, decoder FROM takes WHERE deleted = 0 "
                                 "ORDER BY id")
        else:
            upgrade = ""
            if spaces:
                marks = ", ".join("?" for _ in spaces)
                upgrade = f" OR (e.space = '' AND (t.mode = ? OR t.decoder IN ({marks})))"
            rows = self._db.rows(
                f"SELECT t.id, t.mode, t.decoder FROM takes t LEFT JOIN {TABLE} e "
                "ON e.take_id = t.id WHERE t.deleted = 0 AND (e.take_id IS NULL OR "
                f"e.version != ? OR length(e.vector) != ?{upgrade}) ORDER BY t.id",
                (EMBEDDING_VERSION, BLOB_BYTES, *([IMPORTED, *spaces] if spaces else [])))
        rows = [row for row in rows if row[0] not in self._unstored]
        if not rows:
            self._complete_stamp = stamp
        first = spaces[0] if spaces else ""
        return [(row[0], first if row[1] == IMPORTED else (row[2] if row[2] in spaces else ""))
                for row in rows]

    def latent_spaces(self) -> list[str]:
        """The latent spaces (codecs) of the generated takes kept, most takes first."""
        rows = self._db.rows("SELECT decoder FROM takes WHERE deleted = 0 AND mode != ? AND "
                             "decoder != '' GROUP BY decoder ORDER BY count(*) DESC, decoder",
                             (IMPORTED,))
        return [row[0] for row in rows]

    def keep_embeddings(self, items: Iterable[tuple[int, Embedded]]) -> int:
        """Keep computed embeddings (one short write transaction) and put them in the index;
        takes gone meanwhile are skipped. A library that cannot be written keeps them in the
        index only, for this session. Returns how many were kept."""
        batch = list(items)
        if not batch:
            return 0
        index = self.similarity_index()
        if self._db.read_only or self._db.beside_writer or not self._has_table():
            for take_id, embedded in batch:
                self._unstored[take_id] = embedded
                index.add(take_id, *embedded)
            return len(batch)
        with self._db.write():
            present = {row[0] for row in self._db.conn.execute(
                f"SELECT id FROM takes WHERE id IN ({', '.join('?' for _ in batch)})",
                [take_id for take_id, _ in batch])}
            kept = [(take_id, embedded) for take_id, embedded in batch if take_id in present]
            for take_id, embedded in kept:
                self.insert(take_id, embedded)
        for take_id, embedded in kept:
            index.add(take_id, *embedded)
        return len(kept)
