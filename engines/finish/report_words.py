"""A finishing report's trim and loudness method in a few words, the same on every way a take
leaves (the `generate` line, `library show` and `library export`, the window's readout).

Plain measurement words only: no flag or control is named here (a remedy travels as an
engines.errors.Advice in the report's warnings)."""

from __future__ import annotations

import math
from typing import Any

from engines.finish.loudness import ONE_BLOCK, ONE_BLOCK_LOOP

# How a short take's loudness was measured, after its figure; integrated loudness, the usual
# meter reading, needs no words.
METHOD_SHORT_WORDS = {ONE_BLOCK: "one 400 ms block, padded with silence",
                      ONE_BLOCK_LOOP: "one 400 ms block of the loop repeating"}


def _seconds(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "?"
    return f"{value:.2f}"


def method_words(final: Any) -> str | None:
    """"one 400 ms block, padded with silence" for a short take's figures; None for
    integrated loudness (or a report from before the method was kept)."""
    if not isinstance(final, dict):
        return None
    return METHOD_SHORT_WORDS.get(final.get("loudness_method"))


def loudness_words(lufs: float | None, final: Any) -> str:
    """"-18.0 LUFS", or "-18.0 LUFS (one 400 ms block, padded with silence)"."""
    shown = "-inf LUFS" if lufs is None else f"{lufs:.1f} LUFS"
    method = method_words(final)
    return f"{shown} ({method})" if method and lufs is not None else shown


def trim_words(report: Any) -> str | None:
    """"trim 3.00 s -> 2.41 s", "trim 3.00 s -> 3.00 s, nothing below -60 dBFS" or "trim
    3.00 s -> 0.10 s, all below -60 dBFS"; None when the chain did not trim."""
    trim = report.get("trim") if isinstance(report, dict) else None
    if not isinstance(trim, dict) or "seconds_before" not in trim:
        return None
    lengths = f"{_seconds(trim.get('seconds_before'))} s -> {_seconds(trim.get('seconds_after'))} s"
    if not trim.get("silence_trim"):
        return f"cut {lengths}"
    threshold = trim.get("threshold_db")
    shown = f"{threshold:g}" if isinstance(threshold, (int, float)) else "?"
    if trim.get("nothing_cut"):
        return f"trim {lengths}, nothing below {shown} dBFS"
    if trim.get("all_silent"):
        return f"trim {lengths}, all below {shown} dBFS"
    return f"trim {lengths}"
