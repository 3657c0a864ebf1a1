"""The background pass after an import: each referenced sound's thumbnail peaks and sound
embedding, for the sounds that have neither yet (new, or changed since). The file is read once
(only read); the embedding goes through engines.store.embeddings.audio_embedding, the entry
point every take's embedding uses (engines.similarity), so Find similar covers both kinds.

Batches of EXTRAS_BATCH sounds are kept in one short transaction each: a pass cut short keeps
what it made, and the next one goes on from there. A file that cannot be read is skipped
(counted, logged) and tried again by the next pass."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from engines.audio_io import read_audio
from engines.constants import SAMPLE_RATE
from engines.errors import AudioFileError
from engines.similarity.embedding import EMBEDDING_VERSION
from engines.sound_import.importer import Cancel, ImportProgress, Progress, _Throttled
from engines.sound_import.peaks import array_peaks, file_peaks
from engines.store.embeddings import audio_embedding

if TYPE_CHECKING:
    from engines.store.library import ClipLibrary

log = logging.getLogger(__name__)

EXTRAS_BATCH = 32
# What an embedding hears of a long recording: its start. Sound search compares short
# sounds; a ten-minute ambience is known well enough by its first minute.
EMBED_SECONDS = 60.0
_READ_ERRORS = (AudioFileError, OSError, RuntimeError, ValueError, MemoryError)

__all__ = ["ExtrasReport", "ImportProgress", "make_sound_extras"]


@dataclass
class ExtrasReport:
    thumbnails: int = 0
    embeddings: int = 0
    failed: int = 0
    cancelled: bool = False
    seconds: float = 0.0


def make_sound_extras(library: ClipLibrary, progress: Progress | None = None,
                      cancel: Cancel | None = None) -> ExtrasReport:
    """Peaks and embeddings for every referenced sound lacking them, oldest first; progress
    phase "extras" (done, total)."""
    started = time.perf_counter()
    report = ExtrasReport()
    if library.read_only:
        return report
    tell = _Throttled(progress)
    todo = library.sounds.needing_extras(EMBEDDING_VERSION, limit=10**9)
    failed: set[int] = set()
    done = 0
    for start in range(0, len(todo), EXTRAS_BATCH):
        if cancel is not None and cancel.is_set():
            report.cancelled = True
            break
        peaks: list[tuple[int, np.ndarray]] = []
        embedded = []
        for take_id, path, needs_peaks, needs_embedding in todo[start:start + EXTRAS_BATCH]:
            try:
                made_peaks, vector = _extras_of(path, needs_peaks, needs_embedding)
            except _READ_ERRORS as err:
                log.info("No thumbnail or embedding for %s: %s", path, err)
                failed.add(take_id)
                continue
            if made_peaks is not None:
                peaks.append((take_id, made_peaks))
            if vector is not None:
                embedded.append((take_id, vector))
        with library.sounds.write():
            library.sounds.set_peaks(peaks)
        report.embeddings += library.keep_embeddings(embedded)
        report.thumbnails += len(peaks)
        done = min(start + EXTRAS_BATCH, len(todo))
        tell("extras", done, len(todo), todo[done - 1][1])
    tell("extras", done, len(todo), force=True)
    report.failed = len(failed)
    report.seconds = time.perf_counter() - started
    return report


def _extras_of(path: str, needs_peaks: bool, needs_embedding: bool):  # noqa: ANN202
    """(peaks or None, (space, vector) or None) of one file."""
    if not needs_embedding:
        return file_peaks(path), None
    audio = read_audio(path, max_seconds=EMBED_SECONDS)
    peaks = None
    if needs_peaks:
        # A clip read whole is its own peaks; a longer file is sampled over its full length.
        whole = audio.shape[0] < round(EMBED_SECONDS * SAMPLE_RATE)
        peaks = array_peaks(audio) if whole else file_peaks(path)
    return peaks, audio_embedding(audio)
