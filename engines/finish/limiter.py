"""A look-ahead true-peak limiter, for normalisation that must keep a loudness target under a
true-peak ceiling.

scipy is imported on first use (engines.lazy): `scipy.ndimage` is slow to import, and the
window imports the finishing chain while it opens.
"""

from __future__ import annotations

import numpy as np

from engines.finish.audio_shape import as_2d
from engines.finish.true_peak import frame_true_peaks
from engines.lazy import lazy_import

ndimage = lazy_import("scipy.ndimage")

LOOKAHEAD_S = 0.002  # the gain ramps down over this long before a peak
RELEASE_S = 0.1  # time constant of the exponential recovery, in dB
LIMITER_MARGIN_DB = 0.05  # aim this far under the ceiling: the gain itself moves the peaks


def limit_true_peak(audio: np.ndarray, rate: int, ceiling: float) -> tuple[np.ndarray, float]:
    """(limited copy, largest gain reduction in dB): a look-ahead true-peak limiter whose gain
    envelope is computed on the 4x oversampled signal, linked across channels.

    The reduction each frame needs, in dB, gets an instant attack and exponential release
    (peak hold with decay), then a centred max window and a moving average of the same width:
    the average covers the frame's own need (every window it averages contains the frame), so
    the gain reaches it in time, on a smooth ramp that starts LOOKAHEAD_S before the peak."""
    x = as_2d(audio)
    target = ceiling * 10.0 ** (-LIMITER_MARGIN_DB / 20.0)
    with np.errstate(divide="ignore"):
        need = np.maximum(20.0 * np.log10(frame_true_peaks(x, floor=target) / target), 0.0)
    if not need.any():
        return x.astype(np.float32, copy=True), 0.0
    # Peak hold with exponential decay, need[k] * exp(-(n - k) / tau) maximised over k <= n,
    # computed in the log domain as a running maximum instead of a per-sample loop.
    decay = 1.0 / (RELEASE_S * rate)
    ramp = np.arange(len(need), dtype=np.float64) * decay
    with np.errstate(divide="ignore"):
        held = np.exp(np.maximum.accumulate(np.log(need) + ramp) - ramp)
    half = max(1, round(LOOKAHEAD_S * rate / 2))
    width = 2 * half + 1
    envelope = ndimage.uniform_filter1d(ndimage.maximum_filter1d(held, width), width)
    envelope = np.maximum(envelope, need)  # rounding in the average must not undercut a peak
    gain = (10.0 ** (-envelope / 20.0)).astype(np.float32)
    return x * gain[:, None], float(envelope.max())
