"""The finishing flags `generate` and `library export` share (issue 11): trim, fades,
loudness, true peak, loop, delivery rate, mono, format and presets, turned into one
FinishSettings. A preset gives the starting values; flags given on the command line win.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from engines.audio_io.formats import FORMATS
from engines.finish.presets import get_preset
from engines.finish.settings import FinishSettings

# flag dest -> FinishSettings field, for the flags whose value is copied as given.
_VALUE_FLAGS = {"trim_db": "trim_db", "fade_in": "fade_in_ms", "fade_out": "fade_out_ms",
                "fade_curve": "fade_curve", "loudness": "loudness_lufs",
                "true_peak": "true_peak_dbtp", "loop_seam": "loop_seam_s",
                "loop_method": "loop_method", "rate": "rate"}


def add_finish_arguments(parser: argparse.ArgumentParser, *, with_format: bool = True) -> None:
    """The finishing flags, all defaulting to "not given" so a preset's values show through."""
    group = parser.add_argument_group("finishing (the raw take is always kept)")
    group.add_argument("--preset", metavar="NAME",
                       help="a finishing preset, e.g. \"Game SFX one-shot\"; flags override it")
    group.add_argument("--trim", action="store_true", default=None,
                       help="cut leading and trailing silence (a short pad is kept)")
    group.add_argument("--trim-db", type=float, metavar="DB",
                       help="silence threshold for --trim in dBFS (default -60)")
    group.add_argument("--fade-in", type=float, metavar="MS", help="fade-in length, 0..10000 ms")
    group.add_argument("--fade-out", type=float, metavar="MS",
                       help="fade-out length, 0..10000 ms")
    group.add_argument("--fade-curve", choices=("linear", "equal-power", "exponential"),
                       help="fade shape (default linear)")
    group.add_argument("--loudness", type=float, metavar="LUFS",
                       help="loudness target, -60..-5 LUFS (BS.1770 integrated; a take "
                            "under 0.4 s: the loudness of one 400 ms block)")
    group.add_argument("--true-peak", type=float, metavar="DBTP",
                       help="true-peak ceiling, -20..0 dBTP")
    group.add_argument("--loop", action="store_true", default=None,
                       help="make a seamless loop (the model rewrites the seam) with loop points")
    group.add_argument("--loop-seam", type=float, metavar="SECONDS",
                       help="seam width the model rewrites (default 0.5, on the latent grid)")
    group.add_argument("--loop-method", choices=("model", "crossfade"),
                       help="who makes the loop's seam: the take's model (default), or an "
                            "equal-power crossfade (no model needed; the loop is shorter by "
                            "the seam)")
    group.add_argument("--rate", type=int, choices=(44100, 48000), help="delivery sample rate")
    group.add_argument("--mono", action="store_true", default=None, help="fold down to mono")
    if with_format:
        group.add_argument("--format", choices=tuple(FORMATS),
                           help="default: from the file name (.wav is 16-bit)")


def finish_settings(args: argparse.Namespace,
                    data_dir_fn: Callable[[], Path]) -> FinishSettings | None:
    """The FinishSettings the flags ask for, or None when no finishing flag (and no preset) was
    given. `data_dir_fn` gives the data folder (user presets live in its settings file).
    Raises RequestError (one sentence) for an unknown preset or a value out of range."""
    given = {dest: getattr(args, dest, None) for dest in (*_VALUE_FLAGS, "trim", "loop", "mono")}
    if args.preset is None and all(value is None for value in given.values()):
        return None
    if args.preset is not None:
        settings = get_preset(data_dir_fn(), args.preset)
    else:
        settings = FinishSettings()
    changes: dict[str, Any] = {field: given[dest] for dest, field in _VALUE_FLAGS.items()
                               if given[dest] is not None}
    for flag in ("trim", "loop", "mono"):
        if given[flag]:
            changes[flag] = True
    if "loudness_lufs" in changes and changes["loudness_lufs"] is not None:
        changes["loudness_lufs"] = float(changes["loudness_lufs"])
    fmt = getattr(args, "format", None)
    if fmt is not None:
        changes["format"] = fmt
    return replace(settings, **changes).validate()
