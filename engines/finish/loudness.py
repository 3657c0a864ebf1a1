"""Loudness readings: ITU-R BS.1770-4 integrated LUFS, and true peak in dBTP beside it.

Integrated loudness uses pyloudnorm's K-weighting filters (its `IIRfilter` designs, the ones
`pyloudnorm.Meter` applies) with BS.1770-4 gating: 400 ms blocks every 100 ms, absolute gate
-70 LUFS, relative gate -10 LU. The gating is ours, vectorised: `Meter.integrated_loudness`
loops over blocks in Python (3.5 s for a 6:20 take on a 2-core machine); tests hold ours to it.
The true-peak meter itself is in true_peak.py; normalising to a target is in normalization.py.

A take shorter than one 400 ms block has no integrated loudness, so short sounds (UI clicks,
one-shots) are measured as BS.1770-4 with a single block: the take padded with silence to
400 ms (a loop: repeated, as it plays), K-weighted, its mean square over that one block. It is
what any BS.1770 meter reads for the padded take, and for a take under 400 ms it is the
momentary loudness (EBU Tech 3341: a sliding 400 ms window) of the window that holds the whole
take, its largest but for the filter's short tail. `measure_level` says which method it used.

The filters run in numpy (engines.finish.biquads, pyloudnorm's coefficients): `scipy.signal`
alone takes a second to import, and every take is measured for its file's metadata.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache, partial
from typing import Any

import numpy as np

from engines.finish.audio_shape import as_2d
from engines.finish.biquads import cookbook_biquad, sosfilt
from engines.finish.true_peak import true_peak

BLOCK_S = 0.4
HOP_S = 0.1
ABSOLUTE_GATE_LUFS = -70.0
RELATIVE_GATE_LU = -10.0
CHANNEL_WEIGHTS = (1.0, 1.0, 1.0, 1.41, 1.41)  # L, R, C, Ls, Rs (BS.1770-4 table 3)
PARALLEL_MIN_FRAMES = 1 << 16  # shorter audio is measured on one thread: threads cost more

# How a loudness was measured (finishing reports it with the figure).
INTEGRATED = "integrated"  # BS.1770-4 integrated loudness, gated 400 ms blocks
ONE_BLOCK = "one block"  # shorter than a block: one 400 ms block, padded with silence
ONE_BLOCK_LOOP = "one block, looped"  # a loop shorter than a block: as it plays, repeated
METHODS = {
    INTEGRATED: "BS.1770-4 integrated loudness",
    ONE_BLOCK: "BS.1770-4 loudness of one 400 ms block (the take padded with silence to 0.4 s)",
    ONE_BLOCK_LOOP: "BS.1770-4 loudness of the loop repeated over a 400 ms block",
}


def to_db(amplitude: float) -> float | None:
    """20 log10, or None for silence (JSON has no -inf)."""
    return 20.0 * math.log10(amplitude) if amplitude > 0 else None


@lru_cache(maxsize=8)
def k_weighting_sos(rate: int) -> np.ndarray:
    """pyloudnorm's two K-weighting stages (high shelf, high pass) as second-order sections."""
    shelf = cookbook_biquad("high_shelf", 4.0, 1.0 / math.sqrt(2.0), 1500.0, rate)
    high_pass = cookbook_biquad("high_pass", 0.0, 0.5, 38.0, rate)
    return np.array([[*shelf[0], *shelf[1]], [*high_pass[0], *high_pass[1]]], dtype=np.float64)


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
    weighted = sosfilt(k_weighting_sos(rate).astype(np.float32), channel)
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


def levelling_method(frames: int, rate: int, circular: bool = False) -> str:
    """INTEGRATED for a take of one 400 ms block or more, else ONE_BLOCK (ONE_BLOCK_LOOP for
    a loop)."""
    if frames >= round(BLOCK_S * rate):
        return INTEGRATED
    return ONE_BLOCK_LOOP if circular else ONE_BLOCK


def one_block_loudness(audio: np.ndarray, rate: int, circular: bool = False) -> float | None:
    """BS.1770-4 loudness of one 400 ms block holding the whole take: the take padded with
    silence to 400 ms, or for a loop (`circular`) its loudness as it plays, measured over
    whole repeats after a block of repeats has brought the filters to their steady state.
    None under the -70 LUFS gate (silence). For takes of up to 400 ms."""
    x = as_2d(audio).astype(np.float64)
    n, channels = x.shape
    block = round(BLOCK_S * rate)
    if n == 0:
        return None
    if circular:
        measured = n * -(-block // n)  # whole repeats, at least one block long
        repeats = -(-(block + measured) // n)
        x = np.tile(x, (repeats, 1))[-(block + measured):]
    else:
        measured = block
        x = np.concatenate([x, np.zeros((max(0, block - n), channels))])
    weighted = sosfilt(k_weighting_sos(rate), x, axis=0)[-measured:]
    power = float(np.asarray(CHANNEL_WEIGHTS[:channels])
                  @ np.einsum("nc,nc->c", weighted, weighted)) / measured
    if power <= 0.0:
        return None
    lufs = -0.691 + 10.0 * math.log10(power)
    return lufs if lufs >= ABSOLUTE_GATE_LUFS else None


def loudness_by(method: str, audio: np.ndarray, rate: int) -> float | None:
    """The loudness of `audio` in LUFS by `method` (one of METHODS), None when undefined."""
    if method == INTEGRATED:
        return integrated_loudness(audio, rate)
    return one_block_loudness(audio, rate, circular=method == ONE_BLOCK_LOOP)


def measure_level(audio: np.ndarray, rate: int,
                  circular: bool = False) -> tuple[float | None, float, str]:
    """(loudness in LUFS or None, linear true peak, method): `measure`, but a take shorter
    than one block is measured by ONE_BLOCK (ONE_BLOCK_LOOP when `circular`), not left
    undefined; what finishing levels by and reports."""
    method = levelling_method(len(audio), rate, circular)
    if method == INTEGRATED:
        lufs, peak = measure(audio, rate, circular)
        return lufs, peak, method
    return loudness_by(method, audio, rate), true_peak(audio, circular), method


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
