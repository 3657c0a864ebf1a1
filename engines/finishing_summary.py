"""A take's stored finishing and quality flags in words, for `library show` and `library
export` (the dicts are what engines.finish.finished_take.FinishedTake.record() makes and the library
keeps; a damaged one is shown as far as it can be read, never refused here)."""

from __future__ import annotations

import math
from typing import Any

from engines.finish.quality import describe_flag
from engines.finish.report_words import method_words, trim_words


def _number(value: Any, digits: int = 1) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "?"
    if math.isinf(value):
        return "-inf" if value < 0 else "inf"
    return f"{value:.{digits}f}"


def _plain(value: Any) -> str:
    """A setting as people write it: -18, -0.5, 2.25."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return str(value)
    return f"{value:.2f}".rstrip("0").rstrip(".")


def chain_summary(chain: dict) -> str:
    """What a chain does, in order, e.g. "trim below -60 dBFS, fades 2 / 30 ms (equal-power),
    -18 LUFS, true peak at most -1 dBTP, 48000 Hz, mono, wav24"."""
    steps = []
    if chain.get("loop"):
        steps.append(f"loop (seam {_plain(chain.get('loop_seam_s'))} s)")
    cut_in, cut_out = chain.get("trim_in_s"), chain.get("trim_out_s")
    if cut_in is not None or cut_out is not None:
        end = "the end" if cut_out is None else f"{_plain(cut_out)} s"
        steps.append(f"cut {_plain(cut_in or 0)} s to {end}")
    if chain.get("trim"):
        steps.append(f"trim below {_plain(chain.get('trim_db'))} dBFS")
    fade_in, fade_out = chain.get("fade_in_ms") or 0, chain.get("fade_out_ms") or 0
    if fade_in or fade_out:
        steps.append(f"fades {_plain(fade_in)} / {_plain(fade_out)} ms "
                     f"({chain.get('fade_curve', 'linear')})")
    if chain.get("mono"):
        steps.append("mono")
    if chain.get("loudness_lufs") is not None:
        steps.append(f"{_plain(chain['loudness_lufs'])} LUFS")
    if chain.get("true_peak_dbtp") is not None:
        steps.append(f"true peak at most {_plain(chain['true_peak_dbtp'])} dBTP")
    steps.append(f"{chain.get('rate', '?')} Hz")
    steps.append(str(chain.get("format", "?")))
    return ", ".join(steps)


def measured(finishing: dict) -> str:
    """The figures measured after the chain, e.g. "-18.0 LUFS, -1.2 dBTP, 48000 Hz, 2 ch,
    0.25 s"; a short take's loudness names its method ("-18.0 LUFS (one 400 ms block, padded
    with silence)"), and a trim its lengths ("; trim 3.00 s -> 3.00 s, nothing below -60
    dBFS")."""
    report = finishing.get("report")
    final = report.get("final") if isinstance(report, dict) else None
    if not isinstance(final, dict):
        return "not measured"
    method = method_words(final)
    trim = trim_words(report)
    return (f"{_number(final.get('loudness_lufs'))} LUFS{f' ({method})' if method else ''}, "
            f"{_number(final.get('true_peak_dbtp'))} dBTP, {final.get('rate', '?')} Hz, "
            f"{final.get('channels', '?')} ch, {_number(final.get('seconds'), 2)} s"
            + (f"; {trim}" if trim else ""))


def loop_text(finishing: dict) -> str | None:
    loop = finishing.get("loop")
    if not isinstance(loop, dict):
        return None
    method = loop.get("method")
    text = ("by the model" + (f" (seed {loop['seed']})" if loop.get("seed") is not None
                              else "")) if method == "model" else f"by {method}"
    points = finishing.get("loop_points")
    if isinstance(points, list) and len(points) == 2:
        text += f", loop points {points[0]}..{points[1]}"
    return text


def finishing_lines(finishing: dict | None) -> list[str]:
    """`library show`'s lines about a stored finishing chain."""
    if not finishing:
        return ["  finishing    - (exports are the raw take)"]
    chain = finishing.get("chain") if isinstance(finishing.get("chain"), dict) else {}
    preset = chain.get("preset") or ""
    lines = [f"  finishing    {f'preset {preset!r}: ' if preset else ''}{chain_summary(chain)}",
             f"  after it     {measured(finishing)}"]
    loop = loop_text(finishing)
    if loop is not None:
        lines.append(f"  loop         {loop}")
    return lines


def quality_lines(codes: list[str]) -> list[str]:
    """`library show`'s lines about the quality flags: one a flag, in words."""
    if not codes:
        return ["  quality      no flags"]
    return [f"  quality      {describe_flag(code)}" for code in codes]
