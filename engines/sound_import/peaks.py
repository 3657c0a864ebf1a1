"""Thumbnail peaks of a sound: min and max per column (as mne-qt-browser's peak mode and
app.common.thumbnails do), computed once in the background and kept in the library, so a
thumbnail never reads a file that may sit on a slow or unplugged drive."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import soundfile as sf

from engines.store.sound_files import PEAK_COLUMNS
from engines.store.wavmeta import sf_name

READ_PER_COLUMN = 4096  # frames read per column of a long file (not every frame)


def array_peaks(audio: np.ndarray, columns: int = PEAK_COLUMNS) -> np.ndarray:
    """float32 (2, columns): the lowest and highest sample of each column, in -1..1, of
    in-memory audio ((N,) or (N, channels), int16 or float)."""
    samples = np.asarray(audio)
    if samples.ndim == 1:
        samples = samples[:, None]
    out = np.zeros((2, columns), dtype=np.float32)
    frames = len(samples)
    if frames == 0 or columns <= 0:
        return out
    scale = 1.0 / 32768.0 if samples.dtype == np.int16 else 1.0
    lows, highs = samples.min(axis=1), samples.max(axis=1)
    starts = np.minimum(np.arange(columns) * frames // columns, frames - 1)
    out[0] = np.minimum.reduceat(lows, starts) * scale
    out[1] = np.maximum.reduceat(highs, starts) * scale
    return np.clip(out, -1.0, 1.0)


def file_peaks(path: str | os.PathLike[str], columns: int = PEAK_COLUMNS,
               per_column: int = READ_PER_COLUMN) -> np.ndarray:
    """Peaks of a file, without reading all of a long one: a short file is read whole, a long
    one `per_column` frames at the start of each column."""
    with sf.SoundFile(sf_name(Path(path))) as handle:
        total = handle.frames
        if total <= columns * per_column:
            return array_peaks(handle.read(dtype="float32", always_2d=True), columns)
        out = np.zeros((2, columns), dtype=np.float32)
        for column in range(columns):
            handle.seek(column * total // columns)
            block = handle.read(per_column, dtype="float32", always_2d=True)
            if len(block):
                out[0, column], out[1, column] = block.min(), block.max()
        return np.clip(out, -1.0, 1.0)


def fit_peaks(peaks: np.ndarray, columns: int) -> np.ndarray:
    """Stored peaks (2, N) drawn at another width: (2, columns), each column the min/max of
    the stored columns it covers (repeated when wider than N)."""
    stored = np.asarray(peaks, dtype=np.float32)
    count = stored.shape[1]
    if columns <= 0 or count == 0:
        return np.zeros((2, max(columns, 0)), dtype=np.float32)
    starts = np.minimum(np.arange(columns) * count // columns, count - 1)
    if columns >= count:
        return stored[:, starts].copy()
    return np.stack([np.minimum.reduceat(stored[0], starts),
                     np.maximum.reduceat(stored[1], starts)])
