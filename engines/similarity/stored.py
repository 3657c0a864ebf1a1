"""The compact form a library keeps an embedding in: float16, little-endian, EMBEDDING_DIM values
(256 bytes a take; 100,000 takes are about 26 MB of vectors). float16 keeps cosine similarities to
about 1e-3, far below the differences a ranking turns on."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engines.similarity.embedding import EMBEDDING_DIM

_STORED = np.dtype("<f2")
BLOB_BYTES = EMBEDDING_DIM * _STORED.itemsize


def to_blob(vector: np.ndarray) -> bytes:
    """The bytes kept for one (EMBEDDING_DIM,) embedding."""
    values = np.asarray(vector, dtype=np.float32).reshape(-1)
    if values.shape != (EMBEDDING_DIM,):
        raise ValueError(f"an embedding has {EMBEDDING_DIM} values, not {values.size}")
    return values.astype(_STORED).tobytes()


def from_blobs(blobs: Sequence[bytes]) -> np.ndarray:
    """(N, EMBEDDING_DIM) float32 of kept embeddings, each renormalised to unit length (float16
    rounding moves the norm by up to about 1e-3)."""
    if not blobs:
        return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
    matrix = np.frombuffer(b"".join(blobs), dtype=_STORED).astype(np.float32)
    matrix = matrix.reshape(len(blobs), EMBEDDING_DIM)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)


def is_blob(value: object) -> bool:
    """Whether a stored value can be an embedding of this size (else it is computed again)."""
    return isinstance(value, bytes) and len(value) == BLOB_BYTES
