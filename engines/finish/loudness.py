"""Loudness readings: ITU-R BS.1770-4 integrated LUFS, and true peak in dBTP beside it.

Integrated loudness uses pyloudnorm's K-weighting filters (its `IIRfilter` designs, the ones
`pyloudnorm.Meter` applies) with BS.1770-4 gating: 400 ms blocks every 100 ms, absolute gate
-70 LUFS, relative gate -10 LU. The gating is ours, vectorised: `Meter.integrated_loudness`
loops over blocks in Python (3.5 s for a 6:20 take on a 2-core machine); tests hold ours to it.
The true-peak meter itself is in true_peak.py; normalising to a target is in normalization.py.

scipy and pyloudnorm are imported on first use (engines.lazy): `scipy.signal` alone takes a
second to import, and the window imports this module while it opens.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache, partial
from typing import Any

import numpy as np

from engines.finish.audio_shape import as_2d
from engines.finish.true_peak import true_peak
from engines.lazy import lazy_import

iirfilter = lazy_import("pyloudnorm.iirfilter")
signal = lazy_import("scipy.signal")

BLOCK_S = 0.4
HOP_S = 0.1
ABSOLUTE_GATE_LUFS = -70.0
RELATIVE_GATE_LU = -10.0
CHANNEL_WEIGHTS = (1.0, 1.0, 1.0, 1.41, 1.41)  # L, R, C, Ls, Rs (BS.1770-4 table 3)
PARALLEL_MIN_FRAMES = 1 << 16  # shorter audio is measured on one thread: threads cost more


def to_db(amplitude: float) -> float | None:
    """20 log10, or None for silence (JSON has no -inf)."""
    return 20.0 * math.log10(amplitude) if amplitude > 0 else None


@lru_cache(maxsize=8)
def k_weighting_sos(rate: int) -> np.ndarray:
    """pyloudnorm's two K-weighting stages (high shelf, high pass) as second-order sections."""
    shelf = iirfilter.IIRfilter(4.0, 1.0 / math.sqrt(2.0), 1500.0, rate, "high_shelf")
    high_pass = iirfilter.IIRfilter(0.0, 0.5, 38.0, rate, "high_pass")
    return np.array([[*shelf.b, *shelf.a], [*high_pass.b, *high_pass.a]], dtype=np.float64)


def side_by_side(*jobs: Callable[[], Any]) -> list[Any]:
    """The jobs' results, the first job run on this thread and the others on worker threads:
    scipy's filters and BLAS release the GIL, so two cores measure two things at once."""
    if len(jobs) == 1:
        return [jobs[0]()]
    with ThreadPoolExecutor(max_workers=len(jobs) - 1, thread_name_prefix="finish") as pool:
        futures = [pool.submit(job) for job in jobs[1:]]
        first = jobs[0]()
        return [first, *(future.result() for future in futures)]


def _hop_energies(channel: np.ndarray, rate: int, hop: int, hops: int) -> np.ndarray:
    """Sum of squares of the K-weighted channel over each 100 ms hop, float64 (hops,)."""
    weighted = signal.sosfilt(k_weighting_sos(rate).astype(np.float32), channel)
    pieces = weighted[:hops * hop].reshape(hops, hop)
    return np.einsum("sh,sh->s", pieces, pieces).astype(np.float64)


def integrated_loudness(audio: np.ndarray, rate: int, parallel: bool = True) -> float | None:
    """BS.1770-4 integrated loudness in LUFS; None when it is undefined: shorter than one
    400 ms block, or every block below the -70 LUFS gate (silence). `parallel` filters the
    channels of a long take on threads of their own."""
    x = np.ascontiguousarray(as_2d(audio).T, dtype=np.float32)
    channels, n = x.shape
    block, hop = round(BLOCK_S * rate), round(HOP_S * rate)
    if n < block:
        return None
    hops = n // hop
    jobs = [partial(_hop_energies, channel, rate, hop, hops) for channel in x]
    if n < PARALLEL_MIN_FRAMES or not parallel:
        energy = np.stack([job() for job in jobs])
    else:
        energy = np.stack(side_by_side(*jobs))
    cumulative = np.concatenate([np.zeros((channels, 1)), np.cumsum(energy, axis=1)], axis=1)
    per_block = round(block / hop)
    mean_square = (cumulative[:, per_block:] - cumulative[:, :-per_block]) / block
    power = np.asarray(CHANNEL_WEIGHTS[:channels]) @ mean_square  # weighted sum over channels
    with np.errstate(divide="ignore"):
        block_lufs = -0.691 + 10.0 * np.log10(power)
    above_absolute = block_lufs >= ABSOLUTE_GATE_LUFS
    if not above_absolute.any():
        return None
    relative = -0.691 + 10.0 * math.log10(power[above_absolute].mean()) + RELATIVE_GATE_LU
    gated = power[(block_lufs > relative) & above_absolute]
    return -0.691 + 10.0 * math.log10(gated.mean())


def measure(audio: np.ndarray, rate: int, circular: bool = False) -> tuple[float | None, float]:
    """(integrated loudness in LUFS or None, linear true peak), measured side by side: the
    loudness filter on a worker thread, the oversampling here (two threads, not three: on a
    2-core machine a third only waits, measured 20 % slower)."""
    if len(audio) < PARALLEL_MIN_FRAMES:
        return integrated_loudness(audio, rate), true_peak(audio, circular)
    peak, lufs = side_by_side(partial(true_peak, audio, circular),
                               partial(integrated_loudness, audio, rate, parallel=False))
    return lufs, peak


def true_peak_dbtp(audio: np.ndarray, circular: bool = False) -> float | None:
    """True peak in dBTP; None for digital silence."""
    return to_db(true_peak(audio, circular))
