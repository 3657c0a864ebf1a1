"""Finishing timings (issue 11 figures; benchmarks, not tests).

    python bench/bench_finish.py [--repeats N]

Prints medians (and the best run) of:
- finishing a 30 s stereo take: trim + fades + loudness + true peak + 48 kHz, the "Game SFX
  one-shot" chain without its format (goal < 50 ms), and its steps one by one;
- loudness and true peak of a 6:20 stereo take, the longest the DiT makes (goal < 300 ms).
The load average is printed too: on a shared 2-core machine other work inflates every figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engines.constants import SAMPLE_RATE  # noqa: E402
from engines.finish import loudness  # noqa: E402
from engines.finish.chain import finish  # noqa: E402
from engines.finish.settings import FinishSettings  # noqa: E402

FINISH_GOAL_MS = 50.0
MEASURE_GOAL_MS = 300.0
LONG_SECONDS = 380.0


def make_take(seconds: float, seed: int = 0, silence_s: float = 0.0) -> np.ndarray:
    """Stereo float32: a 220 Hz swell under noise (as bench_waveform), with silence around."""
    n = int(seconds * SAMPLE_RATE)
    t = np.arange(n, dtype=np.float32) / SAMPLE_RATE
    swell = 0.5 + 0.4 * np.sin(2 * np.pi * t / 30.0, dtype=np.float32)
    tone = swell * np.sin(2 * np.pi * 220.0 * t, dtype=np.float32)
    noise = np.random.default_rng(seed).standard_normal((n, 2), dtype=np.float32) * 0.1
    take = np.clip(noise + tone[:, None] * 0.6, -1.0, 1.0)
    pad = int(silence_s * SAMPLE_RATE)
    if pad:
        take[:pad] = 0.0
        take[-pad:] = 0.0
    return np.ascontiguousarray(take, dtype=np.float32)


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """(median ms, best ms) over `repeats` runs after one warm-up."""
    fn()
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(runs), min(runs)


def line(label: str, figures: tuple[float, float], goal: float | None = None) -> None:
    median, best = figures
    verdict = ""
    if goal is not None:
        verdict = f"  (goal < {goal:.0f} ms: {'met' if median < goal else 'NOT met'})"
    print(f"  {label:<44} median {median:8.1f} ms   best {best:8.1f} ms{verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    if hasattr(os, "getloadavg"):
        one, five, fifteen = os.getloadavg()
        print(f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs")

    take = make_take(30.0, silence_s=0.5)
    settings = FinishSettings(trim=True, fade_in_ms=2.0, fade_out_ms=30.0,
                              fade_curve="equal-power", loudness_lufs=-18.0,
                              true_peak_dbtp=-1.0, rate=48000)
    done = finish(take, settings)
    final = done.report["final"]
    print(f"30 s stereo take -> {final['seconds']:.2f} s at {done.rate} Hz, "
          f"{final['loudness_lufs']:.2f} LUFS, {final['true_peak_dbtp']:.2f} dBTP, "
          f"steps {done.report['done']}")
    line("finish (trim, fades, loudness, TP, 48 kHz)", timed(lambda: finish(take, settings),
                                                            args.repeats), FINISH_GOAL_MS)
    line("  integrated loudness", timed(lambda: loudness.integrated_loudness(take, 44100),
                                        args.repeats))
    line("  true peak", timed(lambda: loudness.true_peak(take), args.repeats))
    line("  finish at 44.1 kHz (no resampling)",
         timed(lambda: finish(take, FinishSettings(**{**settings.to_dict(), "rate": 44100})),
               args.repeats))

    long_take = make_take(LONG_SECONDS, seed=1)
    repeats = max(3, args.repeats // 2)
    lufs = loudness.integrated_loudness(long_take, SAMPLE_RATE)
    peak = loudness.true_peak_dbtp(long_take)
    print(f"6:20 stereo take: {lufs:.2f} LUFS, {peak:.2f} dBTP")
    line("loudness + true peak (measure, side by side)",
         timed(lambda: loudness.measure(long_take, SAMPLE_RATE), repeats), MEASURE_GOAL_MS)
    line("  one after the other",
         timed(lambda: (loudness.integrated_loudness(long_take, SAMPLE_RATE),
                        loudness.true_peak(long_take)), repeats))
    line("  integrated loudness",
         timed(lambda: loudness.integrated_loudness(long_take, SAMPLE_RATE), repeats))
    line("  true peak", timed(lambda: loudness.true_peak(long_take), repeats))
    quiet_tail = long_take.copy()
    quiet_tail[len(quiet_tail) // 4:] *= np.float32(0.05)  # a decaying take: most is quiet
    line("  true peak, loud first quarter only",
         timed(lambda: loudness.true_peak(quiet_tail), repeats))


if __name__ == "__main__":
    main()
