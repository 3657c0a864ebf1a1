"""Fade in and out with a curve. Gains rise monotonically from exactly 0 at the take's edge.

Curves (t runs 0 -> 1 across the fade):
- linear: t. Its midpoint is -6 dB, which sounds like a dip on longer fades.
- equal-power: sin(t * pi/2), the quarter sine; its midpoint is -3 dB, so a fade-out paired with
  a fade-in of uncorrelated sound keeps the power constant.
- exponential: a straight line in dB from -60 dB to 0 dB (what the ear hears as even), shifted
  and rescaled so it starts at exact 0 instead of -60 dB (0.001), which would leave a click.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engines.finish.settings import FADE_CURVES

EXPONENTIAL_FLOOR_DB = -60.0


def fade_gains(n: int, curve: str) -> np.ndarray:
    """`n` rising float32 gains for a fade-in: gains[0] == 0, then up towards (not reaching) 1,
    which is the first sample after the fade."""
    if curve not in FADE_CURVES:
        raise ValueError(f"unknown fade curve {curve!r}")
    t = np.arange(n, dtype=np.float64) / max(n, 1)
    if curve == "linear":
        gains = t
    elif curve == "equal-power":
        gains = np.sin(t * (np.pi / 2.0))
    else:
        floor = 10.0 ** (EXPONENTIAL_FLOOR_DB / 20.0)
        gains = (10.0 ** (EXPONENTIAL_FLOOR_DB * (1.0 - t) / 20.0) - floor) / (1.0 - floor)
    return gains.astype(np.float32)


@dataclass(frozen=True)
class FadeReport:
    in_ms: float  # as applied (after clamping)
    out_ms: float
    curve: str
    clamped: bool  # the fades asked for were longer than the take and were shortened

    def to_dict(self) -> dict:
        return {"in_ms": self.in_ms, "out_ms": self.out_ms, "curve": self.curve,
                "clamped": self.clamped}


def apply_fades(audio: np.ndarray, rate: int, fade_in_ms: float, fade_out_ms: float,
                curve: str = "linear") -> tuple[np.ndarray, FadeReport]:
    """A faded copy of `audio` (N, channels). Fades that together are longer than the take are
    shortened in proportion so they meet without overlapping."""
    n = len(audio)
    n_in = round(fade_in_ms * rate / 1000.0)
    n_out = round(fade_out_ms * rate / 1000.0)
    clamped = n_in + n_out > n
    if clamped:
        scale = n / (n_in + n_out)
        n_in = int(n_in * scale)
        n_out = min(n - n_in, int(round(n_out * scale)))
    out = np.array(audio, dtype=np.float32, copy=True, order="C")
    if n_in:
        out[:n_in] *= fade_gains(n_in, curve)[:, None]
    if n_out:
        out[n - n_out:] *= fade_gains(n_out, curve)[::-1, None]
    report = FadeReport(in_ms=n_in * 1000.0 / rate, out_ms=n_out * 1000.0 / rate, curve=curve,
                        clamped=clamped)
    return out, report
