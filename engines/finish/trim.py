"""Trimming a take: leading and trailing silence below a threshold (a short pad kept, so the
first transient is not cut), or manual in/out points.

Spans are frames [start, end), end exclusive like a slice. Trimming never returns empty audio:
a take that is silent throughout keeps its first MIN_KEEP_S, and the caller says so.
Results are views of the input; copy before writing into them.

A silence trim that cuts nothing is said, with the threshold that would cut the quieter end
(`nothing_cut_advice`): a tail a little above the threshold (a reverb's -58 dBFS under a -60
threshold) otherwise keeps the whole take without a word.
"""

from __future__ import annotations

import math

import numpy as np

from engines.errors import Advice, Remedy, RequestError
from engines.finish.settings import TRIM_DB_RANGE

MIN_KEEP_S = 0.1  # what an all-silent take keeps: short, but still a take one can see and hear
# Frames per look when scanning for sound: silence at the ends is usually short, so the scan
# from each end stops after a chunk or two instead of testing every sample of a long take.
SCAN_CHUNK = 16384
END_WINDOW_S = 0.1  # how much of each end a "nothing cut" report measures
# An end this far under the take's peak is a tail (noise, a reverb's last decay) a higher
# threshold may cut; a louder end is still the sound, and no threshold is suggested for it.
TAIL_UNDER_PEAK_DB = 30.0

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


def end_peaks_db(audio: np.ndarray, rate: int) -> tuple[float | None, float | None]:
    """Sample peak in dBFS (None: digital silence) of the first and the last END_WINDOW_S."""
    width = max(1, round(END_WINDOW_S * rate))
    peaks = []
    for end in (audio[:width], audio[-width:]):
        peak = float(np.abs(end).max()) if end.size else 0.0
        peaks.append(20.0 * math.log10(peak) if peak > 0 else None)
    return peaks[0], peaks[1]


def suggested_threshold_db(end_peak_db: float | None, take_peak_db: float) -> int | None:
    """The whole-dB threshold just above an end's peak, which cuts at least that end's
    END_WINDOW_S (less the pad); None when the end is less than TAIL_UNDER_PEAK_DB under the
    take's peak, or the threshold would be over TRIM_DB_RANGE's top: that end is part of the
    sound, not silence."""
    if end_peak_db is None or end_peak_db > take_peak_db - TAIL_UNDER_PEAK_DB:
        return None
    threshold = math.floor(end_peak_db) + 1
    return threshold if threshold <= TRIM_DB_RANGE[1] else None


def nothing_cut_advice(audio: np.ndarray, rate: int, threshold_db: float,
                       pad_ms: float) -> tuple[str, int | None]:
    """(the sentence saying that a silence trim of `audio` cut nothing, the threshold that
    would cut its quieter end or None). The sentence carries that threshold as a remedy."""
    first, last = end_peaks_db(audio, rate)
    quieter, which = (first, "first") if (last is None or (first is not None
                                                           and first < last)) else (last, "last")
    peak = "silent" if quieter is None else f"peaks at {quieter:.1f} dBFS"
    start = (f"Trim cut nothing: the {len(audio) / rate:.2f} s take reaches the "
             f"{threshold_db:g} dBFS threshold within {pad_ms:g} ms of both ends (its "
             f"{which} {END_WINDOW_S:g} s {peak})")
    take_peak = float(np.abs(audio).max())  # not silent: the trim found sound in it
    suggestion = suggested_threshold_db(quieter, 20.0 * math.log10(take_peak))
    if suggestion is None:
        return start + ": the take still sounds at both ends, so there is no silence to cut.", None
    return Advice(start.replace("{", "{{").replace("}", "}}")
                  + "; to cut that end, raise the threshold: {0}.",
                  Remedy.value("trim_db", str(suggestion))), suggestion
