"""Biquad filters in numpy: the RBJ cookbook designs pyloudnorm uses for K-weighting, and a
cascade of second-order sections run over audio (scipy.signal.sosfilt's results, zero initial
state).

Why not scipy: `import scipy.signal` takes about a second (it pulls scipy.stats), and every take
is measured for its file's loudness metadata, so a plain `generate` would wait for it. Signals
over SCIPY_FROM frames (about 87 s at 48 kHz) still go to scipy.signal.sosfilt: there its C loop
(about 9x faster than this) saves more than its import costs. Both agree to float rounding.

A recursive filter is sequential per sample, which numpy cannot vectorise directly. So the
signal is cut into B blocks of L samples: the recursion runs L steps, each one numpy operation
over all B blocks at once (every block starting from rest), and the state each block really
starts from is carried over afterwards. A section's output from a state (z1, z2) with no input
is z1 * g[n] + z2 * g[n - 1], with g the impulse response of 1/A(z); so each block gets its
zero-input part added in one broadcast, after a scalar scan over the blocks' end states. Every
step is exact arithmetic on the same recursion (float64), no truncated impulse responses.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from engines.lazy import lazy_import

signal = lazy_import("scipy.signal")

SCIPY_FROM = 1 << 22  # frames; measured: 226 ms here against scipy's 26 ms and 1 s import
_MIN_BLOCK = 64  # short signals: fewer, longer steps cost less than the block bookkeeping


def cookbook_biquad(kind: str, gain_db: float, q: float, centre_hz: float,
                    rate: float) -> tuple[np.ndarray, np.ndarray]:
    """(b, a), normalised so a[0] == 1, of an RBJ "Audio EQ Cookbook" 'high_shelf' or
    'high_pass': pyloudnorm.iirfilter.IIRfilter's coefficients for the same arguments."""
    amp = 10.0 ** (gain_db / 40.0)
    w0 = 2.0 * math.pi * (centre_hz / rate)
    alpha = math.sin(w0) / (2.0 * q)
    cos_w0 = math.cos(w0)
    if kind == "high_shelf":
        root = 2.0 * math.sqrt(amp) * alpha
        b = [amp * ((amp + 1) + (amp - 1) * cos_w0 + root),
             -2 * amp * ((amp - 1) + (amp + 1) * cos_w0),
             amp * ((amp + 1) + (amp - 1) * cos_w0 - root)]
        a = [(amp + 1) - (amp - 1) * cos_w0 + root,
             2 * ((amp - 1) - (amp + 1) * cos_w0),
             (amp + 1) - (amp - 1) * cos_w0 - root]
    elif kind == "high_pass":
        b = [(1 + cos_w0) / 2, -(1 + cos_w0), (1 + cos_w0) / 2]
        a = [1 + alpha, -2 * cos_w0, 1 - alpha]
    else:
        raise ValueError(f"unknown biquad kind {kind!r}")
    return np.array(b) / a[0], np.array(a) / a[0]


def sosfilt(sos: np.ndarray, x: np.ndarray, axis: int = -1) -> np.ndarray:
    """`x` filtered along `axis` by the second-order sections `sos` (rows b0 b1 b2 a0 a1 a2),
    from rest; float64 for float64 input, else float32 (as scipy.signal.sosfilt returns)."""
    x = np.asarray(x)
    if x.ndim and x.shape[axis] > SCIPY_FROM:
        return signal.sosfilt(sos, x, axis=axis)
    out_dtype = np.float64 if x.dtype == np.float64 else np.float32
    moved = np.moveaxis(x, axis, -1)
    rows = moved.reshape(-1, moved.shape[-1]).astype(np.float64)
    for section in np.asarray(sos, dtype=np.float64):
        b0, b1, b2, a0, a1, a2 = (float(v) for v in section)
        coefficients = (b0 / a0, b1 / a0, b2 / a0, a1 / a0, a2 / a0)
        rows = np.stack([_biquad(coefficients, row) for row in rows]) if len(rows) else rows
    return np.moveaxis(rows.reshape(moved.shape), -1, axis).astype(out_dtype, copy=False)


@lru_cache(maxsize=32)
def _all_pole_response(a1: float, a2: float, length: int) -> np.ndarray:
    """The first `length` samples of the impulse response of 1 / (1 + a1 z^-1 + a2 z^-2)."""
    g = np.zeros(length)
    previous, before = 0.0, 0.0
    for n in range(length):
        current = (1.0 if n == 0 else 0.0) - a1 * previous - a2 * before
        g[n] = current
        previous, before = current, previous
    g.setflags(write=False)
    return g


def _biquad(coefficients: tuple[float, float, float, float, float],
            x: np.ndarray) -> np.ndarray:
    """One section (transposed direct form II, a0 == 1) over the 1-D float64 signal `x`."""
    b0, b1, b2, a1, a2 = coefficients
    n = len(x)
    if n == 0:
        return x.copy()
    block = max(_MIN_BLOCK, math.isqrt(n) + 1)  # L steps of B-wide operations, B = n / L
    count = -(-n // block)
    padded = np.zeros(block * count)
    padded[:n] = x
    blocks = np.ascontiguousarray(padded.reshape(count, block).T)  # column k: block k, so
    del padded  # each step reads one contiguous row
    zero_state = np.empty_like(blocks)
    z1 = np.zeros(count)
    z2 = np.zeros(count)
    scratch = np.empty(count)
    for step in range(block):  # every block from rest, all at once
        xs, ys = blocks[step], zero_state[step]
        np.multiply(xs, b0, out=ys)
        ys += z1
        # z1 = b1 x - a1 y + z2; z2 = b2 x - a2 y
        np.multiply(xs, b1, out=z1)
        np.multiply(ys, a1, out=scratch)
        z1 -= scratch
        z1 += z2
        np.multiply(xs, b2, out=z2)
        np.multiply(ys, a2, out=scratch)
        z2 -= scratch
    # Carry the state over: block k starts from the end state of block k - 1, which is its own
    # from-rest end state (z1, z2 above) plus the decay of the state it started from.
    g = _all_pole_response(a1, a2, block + 1)
    g_last, g_before = g[block - 1], g[block - 2] if block >= 2 else 0.0
    # The end state of a block that started from (s1, s2) with no input: its last two outputs
    # from s1 * g[n] + s2 * g[n - 1], fed through the state update.
    y_last = (g_last, g_before)  # (of s1, of s2) at n = L - 1
    y_prior = (g_before, g[block - 3] if block >= 3 else 0.0)  # at n = L - 2
    m11 = -a1 * y_last[0] - a2 * y_prior[0]
    m12 = -a1 * y_last[1] - a2 * y_prior[1]
    m21, m22 = -a2 * y_last[0], -a2 * y_last[1]
    starts = np.zeros((2, count))
    s1 = s2 = 0.0
    for k in range(count - 1):
        s1, s2 = (z1[k] + m11 * s1 + m12 * s2, z2[k] + m21 * s1 + m22 * s2)
        starts[0, k + 1], starts[1, k + 1] = s1, s2
    shifted = np.concatenate([[0.0], g[:block - 1]])
    out = zero_state + g[:block, None] * starts[0] + shifted[:, None] * starts[1]
    return out.T.reshape(-1)[:n]
