"""Search by sound ("more like this"), the API both front ends call: the takes of a library that
sound most like one of its takes, or like an audio file.

Distances are cosine distances of the sound embeddings: 0 is the same sound, about 1 unrelated
(2 at most). A user reads `SimilarTake.similarity_text`: "similarity 92%" is 1 - distance.
Takes in the trash are never returned. Takes without an embedding are embedded first (see
engines.store.embedding_backfill; `progress` hears about that pass).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from engines.audio_io import audio_info, read_audio
from engines.constants import MAX_INIT_S
from engines.store.embedding_backfill import EmbedProgress, embed_missing
from engines.store.embeddings import Embedded, audio_embedding
from engines.store.records import LibraryError, TakeRecord

if TYPE_CHECKING:
    from engines.similarity.encoding import LatentEncoders
    from engines.store.library import ClipLibrary

DEFAULT_LIMIT = 10
# A file to search by is compared by its start, as long as the longest take: hours of audio
# decoded whole took gigabytes (6 h at 8 kHz: 8.8 GB), and no take is longer than this anyway.
LIKE_SECONDS = MAX_INIT_S


@dataclass(frozen=True)
class SimilarTake:
    """One take found by sound: the take, and how far its sound is from the query."""

    record: TakeRecord
    distance: float  # cosine distance: 0 the same sound, about 1 unrelated
    same_space: bool  # compared on latents and audio features (else audio features only)

    @property
    def similarity(self) -> float:
        """1 - distance, clipped to [0, 1]."""
        return float(min(1.0, max(0.0, 1.0 - self.distance)))

    @property
    def similarity_text(self) -> str:
        return f"similarity {round(100 * self.similarity)}%"


def similar_takes(library: ClipLibrary, take_id: int, limit: int = DEFAULT_LIMIT, *,
                  encoders: LatentEncoders | None = None,
                  progress: EmbedProgress | None = None) -> list[SimilarTake]:
    """The `limit` takes that sound most like take `take_id`, closest first (not itself).
    LibraryError (one sentence) for an unknown take, or one whose audio cannot be read."""
    record = library.get(take_id)
    embed_missing(library, encoders, progress)
    index = library.similarity_index()
    found = index.vector(record.id)
    if found is None:  # in the trash, or its audio could not be read by the pass
        if record.missing:
            raise LibraryError(f"The audio of take #{record.id} is missing, so there is no "
                               "sound to compare; regenerate it first.")
        audio = library.load_float_audio(record.id)  # raises its own sentence when unreadable
        found = audio_embedding(audio)
    return _ranked(library, found, limit, exclude={record.id})


def file_excerpt(path: str | os.PathLike[str]) -> tuple[float, float] | None:
    """(seconds compared, seconds in the file) when a file to search by is longer than
    LIKE_SECONDS, so only its start is compared (front ends say so); None when it is compared
    whole. Reads the header only; AudioFileError (one sentence) for a file that has none."""
    seconds = audio_info(path).duration_seconds
    return (LIKE_SECONDS, seconds) if seconds > LIKE_SECONDS else None


def similar_to_file(library: ClipLibrary, path: str | os.PathLike[str],
                    limit: int = DEFAULT_LIMIT, *, encoders: LatentEncoders | None = None,
                    progress: EmbedProgress | None = None) -> list[SimilarTake]:
    """The `limit` takes that sound most like an audio file, closest first. The file is read as
    init audio is (any format libsndfile reads, resampled to 44.1 kHz, stereo), its first
    LIKE_SECONDS only (see file_excerpt), and encoded in the library's most common latent space
    when that encoder is at hand. AudioFileError (one sentence) for a file that cannot be
    read."""
    audio = read_audio(path, max_seconds=LIKE_SECONDS)
    embed_missing(library, encoders, progress)
    return similar_to_audio(library, audio, limit, encoders=encoders)


def similar_to_audio(library: ClipLibrary, audio: np.ndarray, limit: int = DEFAULT_LIMIT, *,
                     encoders: LatentEncoders | None = None) -> list[SimilarTake]:
    """Like similar_to_file, for float32 (frames, 2) audio at 44.1 kHz already in memory
    (a dropped file the window has read, a take of this session)."""
    space = encoders.spaces[0] if encoders is not None and encoders.spaces else ""
    latents = encoders.latents(space, audio) if encoders is not None and space else None
    return _ranked(library, audio_embedding(audio, latents, space), limit)


def _ranked(library: ClipLibrary, query: Embedded, limit: int,
            exclude: set[int] | None = None) -> list[SimilarTake]:
    """The nearest takes that are still in the library and not in the trash."""
    if limit < 1:
        return []
    index = library.similarity_index()
    space, vector = query
    wanted = limit + 16
    while True:
        neighbours = index.nearest(vector, space, wanted, exclude or ())
        results: list[SimilarTake] = []
        for neighbour in neighbours:
            try:
                record = library.get(neighbour.take_id)
            except LibraryError:  # emptied out of the trash by another process
                continue
            if record.deleted:
                continue
            stored = index.vector(record.id)
            results.append(SimilarTake(record, neighbour.distance,
                                       bool(space) and stored is not None and stored[0] == space))
            if len(results) == limit:
                return results
        if len(neighbours) < wanted:
            return results
        wanted *= 4
