"""Normalisation to a loudness target under a true-peak ceiling, and the report of what it did.

Where the gain would push the true peak over the ceiling, the take is either limited (the
loudness lands on the target) or turned down (the peak sits at the ceiling); either way the
report says so in a sentence.

A take shorter than BS.1770's 400 ms block is levelled by the loudness of one block
(engines.finish.loudness.ONE_BLOCK); the report names the method its figures were measured by.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from engines.finish.audio_shape import as_2d
from engines.finish.limiter import limit_true_peak
from engines.finish.loudness import (
    INTEGRATED,
    METHODS,
    ONE_BLOCK,
    loudness_by,
    measure_level,
    to_db,
)
from engines.finish.true_peak import true_peak

LOUDNESS_TOLERANCE_LU = 0.1  # a limited take closer than this to its target is done
MAX_LIMIT_PASSES = 4  # limiting lowers loudness; make up for it at most this often
MAX_MAKEUP_STEP_DB = 6.0
LOUD_LIMITING_DB = 6.0  # more gain reduction than this can be heard: say so


@dataclass
class LoudnessReport:
    """What normalisation found and did; figures in LUFS, dBTP and dB (None: undefined)."""

    loudness_before_lufs: float | None
    true_peak_before_dbtp: float | None
    target_lufs: float | None
    ceiling_dbtp: float | None
    mode: str  # what was asked for over the ceiling: "limit" or "reduce"
    action: str  # "none", "gain", "limited" or "reduced"
    gain_db: float  # the static gain applied (before any limiting)
    limiter_reduction_db: float  # the limiter's largest gain reduction, 0 if it did nothing
    loudness_after_lufs: float | None
    true_peak_after_dbtp: float | None
    notes: list[str] = field(default_factory=list)
    method: str = INTEGRATED  # how the loudness figures were measured (loudness.METHODS)

    @property
    def limited(self) -> bool:
        return self.action == "limited"

    @property
    def reduced(self) -> bool:
        return self.action == "reduced"

    def to_dict(self) -> dict:
        return {**asdict(self), "limited": self.limited, "reduced": self.reduced,
                "method_words": METHODS.get(self.method, self.method)}


def _gain(db: float) -> float:
    return 10.0 ** (db / 20.0)


def _undefined_note() -> str:
    return ("Loudness is undefined for silence (every block is under the -70 LUFS gate), so no "
            "loudness gain was applied.")


def _short_note(audio: np.ndarray, rate: int, method: str) -> str:
    what = "the take padded with silence" if method == ONE_BLOCK else "the loop repeated"
    return (f"The take is {len(audio) / rate:.2f} s long, shorter than BS.1770's 400 ms block, "
            f"so its loudness is that of one 400 ms block ({what}).")


def normalize(audio: np.ndarray, rate: int, target_lufs: float | None,
              ceiling_dbtp: float | None, mode: str = "limit",
              circular: bool = False) -> tuple[np.ndarray, LoudnessReport]:
    """A copy of `audio` brought to `target_lufs` (None: no loudness gain) with its true peak at
    or under `ceiling_dbtp` (None: no ceiling). Where the gain would push the true peak over
    the ceiling, mode "limit" limits the peaks (the loudness lands within 0.1 LU of the
    target) and mode "reduce" lowers the gain until the peak sits at the ceiling (the loudness
    ends under the target). `circular` measures a loop's peaks across its wrap; use "reduce"
    for loops, a limiter's gain is not seamless at the wrap."""
    if mode not in ("limit", "reduce"):
        raise ValueError(f"unknown peak mode {mode!r}")
    x = as_2d(audio).astype(np.float32)
    before, peak, method = measure_level(x, rate, circular)
    notes: list[str] = []
    if method != INTEGRATED and before is not None:
        notes.append(_short_note(x, rate, method))
    gain_db = 0.0
    if target_lufs is not None:
        if before is None:
            notes.append(_undefined_note())
        else:
            gain_db = target_lufs - before
    ceiling = None if ceiling_dbtp is None else _gain(ceiling_dbtp)
    predicted = peak * _gain(gain_db)
    action = "gain" if gain_db else "none"
    reduction = 0.0
    if ceiling is None or predicted <= ceiling:
        out = x * np.float32(_gain(gain_db))
        after = None if before is None else before + gain_db
        peak_after = predicted
    elif mode == "reduce":
        action = "reduced"
        gain_db = 20.0 * math.log10(ceiling / peak)
        out = x * np.float32(_gain(gain_db))
        after = None if before is None else before + gain_db
        peak_after = true_peak(out, circular)
    else:
        action = "limited"
        out, reduction, after, gain_db = _limit_to_target(x, rate, gain_db, ceiling,
                                                           None if before is None
                                                           else target_lufs, method)
        peak_after = true_peak(out, circular)
    if ceiling is not None and peak_after > ceiling:
        # The limiter's moving gain (or float rounding) left a peak a hair over: trim it.
        trim = ceiling / peak_after
        out *= np.float32(trim)
        gain_db += 20.0 * math.log10(trim)
        after = None if after is None else after + 20.0 * math.log10(trim)
        peak_after = true_peak(out, circular)
    if action in ("limited", "reduced"):
        notes.append(_over_ceiling_note(action, target_lufs, before, predicted, ceiling_dbtp,
                                        after, reduction))
    report = LoudnessReport(
        loudness_before_lufs=before, true_peak_before_dbtp=to_db(peak), target_lufs=target_lufs,
        ceiling_dbtp=ceiling_dbtp, mode=mode, action=action, gain_db=gain_db,
        limiter_reduction_db=reduction, loudness_after_lufs=after,
        true_peak_after_dbtp=to_db(peak_after), notes=notes, method=method)
    return out, report


def _limit_to_target(x: np.ndarray, rate: int, gain_db: float, ceiling: float,
                     target: float | None,
                     method: str) -> tuple[np.ndarray, float, float | None, float]:
    """Gain, then the limiter. Limiting lowers the loudness, by less than the gain adds, so
    measure and raise the gain again, stepping by the slope of the last two tries (secant),
    a few passes at most. Returns (audio, largest reduction dB, loudness after, gain dB)."""
    out, reduction, loudness = x, 0.0, None
    tried: list[tuple[float, float]] = []  # (gain dB, loudness LUFS)
    for _ in range(MAX_LIMIT_PASSES):
        out, reduction = limit_true_peak(x * np.float32(_gain(gain_db)), rate, ceiling)
        loudness = loudness_by(method, out, rate)
        if target is None or loudness is None:
            break
        shortfall = target - loudness
        if abs(shortfall) <= LOUDNESS_TOLERANCE_LU:
            break
        slope = 1.0
        if tried and gain_db != tried[-1][0]:
            slope = (loudness - tried[-1][1]) / (gain_db - tried[-1][0])
        tried.append((gain_db, loudness))
        # Loudness rises with gain at a slope of 1 at most; a flat slope means the limiter is
        # eating the gain, so cap each step rather than push the peaks into a wall.
        gain_db += min(shortfall / max(slope, 0.25), MAX_MAKEUP_STEP_DB)
    return out, reduction, loudness, gain_db


def _over_ceiling_note(action: str, target: float | None, before: float | None,
                       predicted: float, ceiling_dbtp: float | None, after: float | None,
                       reduction: float) -> str:
    over = (f"{20.0 * math.log10(predicted):+.1f} dBTP, over the {ceiling_dbtp:g} dBTP "
            "ceiling")
    if target is not None and before is not None:
        start = f"At {target:g} LUFS the true peak would be {over}"
    else:
        start = f"The true peak is {over}"
    if action == "reduced":
        landed = f"; it ends at {after:.1f} LUFS" if after is not None else ""
        return f"{start}, so the gain was reduced until the peak sat at the ceiling{landed}."
    text = f"{start}, so a true-peak limiter took up to {reduction:.1f} dB off the peaks."
    if reduction > LOUD_LIMITING_DB:
        text = text[:-1] + ("; that much limiting can be heard: choose 'reduce' or a lower "
                            "target.")
    return text
