"""Waveform view timings for a 6 min 20 s stereo take (the longest the DiT makes).

    QT_QPA_PLATFORM=offscreen python bench/bench_waveform.py [--repeats N] [--width PX]

Prints the cost of `set_audio` (float conversion plus both peak pyramids) and the median and
worst redraw at full zoom-out, 10 s and 0.1 s visible: change the x range, let the view
recompute its envelope, then paint (`grab()` renders the whole widget). Each repeat pans to a
new position so every redraw does real work. For comparison it also times one envelope without
the pyramid (a scan of all samples). Goal: a redraw under 50 ms.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from PySide6.QtWidgets import QApplication  # noqa: E402

from app.widgets.peaks import peak_envelope  # noqa: E402
from app.widgets.waveform import WaveformView  # noqa: E402
from engines.constants import SAMPLE_RATE  # noqa: E402

SECONDS = 380.0
GOAL_MS = 50.0


def make_take(seconds: float = SECONDS, seed: int = 0) -> np.ndarray:
    """Stereo int16: a 220 Hz sine under noise, with a slow swell so the envelope varies."""
    n = int(seconds * SAMPLE_RATE)
    t = np.arange(n, dtype=np.float32) / SAMPLE_RATE
    swell = 0.5 + 0.4 * np.sin(2 * np.pi * t / 30.0, dtype=np.float32)
    tone = swell * np.sin(2 * np.pi * 220.0 * t, dtype=np.float32)
    noise = np.random.default_rng(seed).standard_normal((n, 2), dtype=np.float32) * 0.1
    mix = np.clip(noise + tone[:, None] * 0.6, -1.0, 1.0)
    return (mix * 32767).astype(np.int16)


def none_refcount_leak() -> bool:
    """True when void Qt calls drop a reference to None (PySide6 6.12.0 on Python < 3.12;
    bool results leak the same way).

    That binding bug aborts the interpreter ("deallocating None") after some thousands of
    paints; 6.11.x does not have it, and on Python 3.12+ None is immortal.
    """
    from PySide6.QtGui import QImage, QPainter

    image = QImage(8, 8, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    before = sys.getrefcount(None)
    for _ in range(100):
        painter.save()
        painter.restore()
    leaked = sys.getrefcount(None) < before - 50
    painter.end()
    return leaked


def time_ms(action) -> float:
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--width", type=int, default=1600, help="widget width in pixels")
    args = parser.parse_args()

    app = QApplication.instance() or QApplication(sys.argv)
    if none_refcount_leak():
        # Give None references that are never released, so this run outlives the bug (bench
        # only: CPython 3.11 keeps the count in the object's first field).
        for singleton in (None, True, False):
            ctypes.c_ssize_t.from_address(id(singleton)).value += 1 << 40
        print("warning: this PySide6 build leaks references to None on every void call and "
              "will crash a long-running app; use PySide6 6.11.x or Python 3.12+")
    view = WaveformView()
    view.resize(args.width, 420)
    view.show()
    app.processEvents()

    pcm = make_take()
    print(f"machine: {os.cpu_count()} cores, Qt platform {app.platformName()}; "
          f"take {SECONDS:.0f} s stereo ({len(pcm):,} samples/channel); widget {args.width} px")

    set_audio = [time_ms(lambda: view.set_audio(pcm)) for _ in range(3)]
    view.grab()
    print(f"set_audio (int16 -> float32 + 2 pyramids): median {statistics.median(set_audio):.0f} ms"
          f" (of {len(set_audio)}); plot width {view.plot_width_px()} px")

    rng = np.random.default_rng(1)
    worst = 0.0
    for label, visible in (("full zoom-out", SECONDS), ("10 s visible", 10.0),
                           ("0.1 s visible", 0.1)):
        redraw, compute = [], []
        for _ in range(args.repeats):
            if visible >= SECONDS:
                # Nudge the end so the range really changes (then it snaps back to the limits).
                start, end = 0.0, SECONDS - rng.uniform(0.0, 0.5)
            else:
                start = rng.uniform(0.0, SECONDS - visible)
                end = start + visible

            def draw(start: float = start, end: float = end) -> None:
                view.set_visible_range(start, end)
                app.processEvents()
                view.grab()

            redraw.append(time_ms(draw))
            compute.append(time_ms(view._redraw))
        points = len(view.curve_data(0)[0])
        median = statistics.median(redraw)
        worst = max(worst, median)
        print(f"redraw, {label:14s}: median {median:6.2f} ms, max {max(redraw):6.2f} ms "
              f"(envelope + setData only {statistics.median(compute):5.2f} ms; "
              f"{points} points/channel)")

    channel = view.samples()[:, 0]
    scan = time_ms(lambda: peak_envelope(channel, view.plot_width_px()))
    print(f"for comparison, one full-range envelope without the pyramid: {scan:.0f} ms/channel")
    verdict = "meets" if worst < GOAL_MS else "MISSES"
    print(f"{verdict} the {GOAL_MS:.0f} ms redraw goal (worst median {worst:.2f} ms)")
    return 0 if worst < GOAL_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
