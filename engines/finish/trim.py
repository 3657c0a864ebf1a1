"""Trimming a take: leading and trailing silence below a threshold (a short pad kept, so the
first transient is not cut), or manual in/out points.

Spans are frames [start, end), end exclusive like a slice. Trimming never returns empty audio:
a take that is silent throughout keeps its first MIN_KEEP_S, and the caller says so.
Results are views of the input; copy before writing into them.
"""

from __future__ import annotations

import numpy as np

from engines.errors import RequestError

MIN_KEEP_S = 0.1  # what an all-silent take keeps: short, but still a take one can see and hear
# Frames per look when scanning for sound: silence at the ends is usually short, so the scan
# from each end stops after a chunk or two instead of testing every sample of a long take.
SCAN_CHUNK = 16384

Span = tuple[int, int]


def db_to_amplitude(db: float) -> float:
    return float(10.0 ** (db / 20.0))


def _loud_frames(block: np.ndarray, threshold: float) -> np.ndarray:
    """Indices of frames where either channel reaches the threshold (sample peak)."""
    return np.flatnonzero((np.abs(block) >= threshold).any(axis=1))


def sound_span(audio: np.ndarray, threshold_db: float) -> Span | None:
    """Frames from the first to the last one whose peak (either channel) reaches
    `threshold_db` dBFS; None when the whole take stays below it."""
    threshold = db_to_amplitude(threshold_db)
    n = len(audio)
    start = None
    for offset in range(0, n, SCAN_CHUNK):
        loud = _loud_frames(audio[offset:offset + SCAN_CHUNK], threshold)
        if loud.size:
            start = offset + int(loud[0])
            break
    if start is None:
        return None
    end = start + 1
    for stop in range(n, start, -SCAN_CHUNK):
        first = max(start, stop - SCAN_CHUNK)
        loud = _loud_frames(audio[first:stop], threshold)
        if loud.size:
            end = first + int(loud[-1]) + 1
            break
    return start, end


def padded_span(sound: Span | None, n_frames: int, rate: int, pad_ms: float) -> Span:
    """The span to keep around the sound, `pad_ms` wider at each end (within the take); for a
    silent take (sound None), its first MIN_KEEP_S."""
    if sound is None:
        return 0, min(n_frames, max(1, round(MIN_KEEP_S * rate)))
    pad = round(pad_ms * rate / 1000.0)
    return max(0, sound[0] - pad), min(n_frames, sound[1] + pad)


def trim_silence(audio: np.ndarray, rate: int, threshold_db: float = -60.0,
                 pad_ms: float = 10.0) -> tuple[np.ndarray, Span]:
    """Leading and trailing silence below `threshold_db` removed, `pad_ms` kept at each end."""
    start, end = padded_span(sound_span(audio, threshold_db), len(audio), rate, pad_ms)
    return audio[start:end], (start, end)


def trim_points(audio: np.ndarray, rate: int, in_s: float | None,
                out_s: float | None) -> tuple[np.ndarray, Span]:
    """Manual in/out points in seconds (None: the take's start or end). An out point past the
    end is taken as the end; an in point at or past the end is refused with a sentence."""
    n = len(audio)
    start = 0 if in_s is None else round(in_s * rate)
    end = n if out_s is None else min(n, round(out_s * rate))
    if start >= n:
        raise RequestError(f"trim in point {in_s:.2f} s is at or past the end of the take "
                           f"({n / rate:.2f} s); choose an earlier in point.")
    end = max(end, start + 1)  # points closer than one frame still keep one frame
    return audio[start:end], (start, end)
