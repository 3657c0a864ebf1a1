"""Nearest neighbours by brute force over an in-memory matrix of every embedding in a library.

One matrix-vector product per search: 100,000 takes x 128 values is about 13 million multiply-adds
(a few milliseconds in BLAS), so no approximate index is needed at library sizes (see
bench/bench_similar.py). Rows live in grow-only arrays, so adding a take costs one row copy, not a
copy of the matrix.

How two takes compare (see engines.similarity.embedding): when both carry latent features of the
same latent space, on the whole vector; otherwise on the audio parts alone. Both are cosine
similarities of unit vectors, so one ranking can hold both.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from engines.similarity.embedding import EMBEDDING_DIM, LATENT_DIMS, audio_part

_NO_SPACE = -1  # the space code of an embedding without latent features


@dataclass(frozen=True)
class Neighbour:
    """One take found near a query: its id and the cosine distance (0 = the same sound,
    1 = unrelated; the similarity a user reads is 1 - distance)."""

    take_id: int
    distance: float

    @property
    def similarity(self) -> float:
        """1 - distance, clipped to [0, 1]: what "similarity 92%" says."""
        return float(min(1.0, max(0.0, 1.0 - self.distance)))


class EmbeddingIndex:
    """Every embedding of a library by take id, with its latent space.

    Kept as two matrices: the latent parts as they are, and the audio parts renormalised (with
    their norms), so a search reads each value once: audio similarities for every row, and the
    latent dot products that turn them back into whole-vector similarities for the rows of the
    query's own latent space."""

    def __init__(self, capacity: int = 1024) -> None:
        self._ids = np.zeros(capacity, dtype=np.int64)
        self._codes = np.zeros(capacity, dtype=np.int32)
        self._latent = np.zeros((capacity, LATENT_DIMS), dtype=np.float32)
        self._audio = np.zeros((capacity, EMBEDDING_DIM - LATENT_DIMS), dtype=np.float32)
        self._audio_norm = np.zeros(capacity, dtype=np.float32)
        self._count = 0
        self._row_of: dict[int, int] = {}
        self._space_codes: dict[str, int] = {}

    def __len__(self) -> int:
        return self._count

    def __contains__(self, take_id: object) -> bool:
        return take_id in self._row_of

    def _code(self, space: str) -> int:
        if not space:
            return _NO_SPACE
        return self._space_codes.setdefault(space, len(self._space_codes))

    def _grow(self, needed: int) -> None:
        capacity = self._ids.shape[0]
        if needed <= capacity:
            return
        capacity = max(needed, 2 * capacity)
        for name in ("_ids", "_codes", "_latent", "_audio", "_audio_norm"):
            old = getattr(self, name)
            new = np.zeros((capacity, *old.shape[1:]), dtype=old.dtype)
            new[: self._count] = old[: self._count]
            setattr(self, name, new)

    def add_many(self, take_ids: Iterable[int], spaces: Iterable[str], vectors: np.ndarray
                 ) -> None:
        """Add or replace embeddings; `vectors` (N, EMBEDDING_DIM) unit rows."""
        ids = [int(i) for i in take_ids]
        codes = np.array([self._code(space) for space in spaces], dtype=np.int32)
        matrix = np.asarray(vectors, dtype=np.float32).reshape(len(ids), EMBEDDING_DIM)
        norms = np.linalg.norm(matrix[:, LATENT_DIMS:], axis=1)
        self._grow(self._count + len(ids))
        rows = np.empty(len(ids), dtype=np.int64)
        for index, take_id in enumerate(ids):
            row = self._row_of.get(take_id)
            if row is None:
                row = self._row_of[take_id] = self._count
                self._count += 1
            rows[index] = row
        self._ids[rows] = ids
        self._codes[rows] = codes
        self._latent[rows] = matrix[:, :LATENT_DIMS]
        self._audio[rows] = audio_part(matrix)
        self._audio_norm[rows] = norms

    def add(self, take_id: int, space: str, vector: np.ndarray) -> None:
        self.add_many([take_id], [space], np.asarray(vector)[None])

    def vector(self, take_id: int) -> tuple[str, np.ndarray] | None:
        """(space, vector) of a take in the index, else None."""
        row = self._row_of.get(int(take_id))
        if row is None:
            return None
        code = int(self._codes[row])
        space = next((name for name, c in self._space_codes.items() if c == code), "")
        vector = np.concatenate([self._latent[row], self._audio[row] * self._audio_norm[row]])
        return space, vector

    def nearest(self, vector: np.ndarray, space: str, limit: int,
                exclude: Iterable[int] = ()) -> list[Neighbour]:
        """The `limit` nearest takes to an embedding of latent space `space` ("" when it has
        no latent features), closest first, leaving out the ids in `exclude`."""
        count = self._count
        if count == 0 or limit < 1:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(EMBEDDING_DIM)
        audio_norm = float(np.linalg.norm(query[LATENT_DIMS:]))
        similarity = self._audio[:count] @ audio_part(query)
        code = self._space_codes.get(space) if space else None
        if code is not None:
            # Whole-vector cosine for the rows of the query's space: latent dot plus the
            # audio dot scaled back from the renormalised parts.
            whole = self._latent[:count] @ query[:LATENT_DIMS]
            whole += similarity * self._audio_norm[:count] * audio_norm
            similarity = np.where(self._codes[:count] == code, whole, similarity)
        skipped = [self._row_of[i] for i in {int(x) for x in exclude} if i in self._row_of]
        similarity[skipped] = -np.inf
        wanted = min(limit, count - len(skipped))
        if wanted <= 0:
            return []
        top = np.argpartition(-similarity, wanted - 1)[:wanted]
        top = top[np.lexsort((self._ids[top], -similarity[top]))]
        return [Neighbour(int(self._ids[row]), float(max(0.0, 1.0 - similarity[row])))
                for row in top]
