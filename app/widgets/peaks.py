"""Min/max (peak) downsampling so a long take draws in time independent of its length.

The idea follows mne-qt-browser's peak mode: per screen column keep the lowest and the highest
sample, so every transient that exists in the data is visible. Columns here are blocks of
`block` samples aligned to multiples of `block` in absolute sample index, with `block` the
smallest power of two that yields at most `width_px` columns over the visible range. Aligned,
power-of-two columns have two benefits: panning does not make the trace shimmer (a sample
always falls into the same column at a given zoom), and a precomputed pyramid of per-2^k
min/max blocks answers any zoomed-out request by slicing, without touching the samples.

Output layout (both functions): `x` holds sample positions (float64, divide by the sample rate
for seconds), `y` the values in the samples' dtype. Downsampled output alternates
min, max per column, both at the column's centre; below about 2 * width_px visible samples the
raw samples come back unchanged.
"""

from __future__ import annotations

import numpy as np

# Levels below this block size are computed straight from the samples: the ranges that need
# them hold at most BASE_BLOCK * width_px samples, cheap to scan, and skipping them keeps the
# pyramid at about 1/32 of the samples' memory instead of twice it.
BASE_BLOCK = 64


def column_block(n_samples: int, width_px: int) -> int:
    """Samples per column: the smallest power of two giving at most `width_px` columns."""
    per_column = -(-max(n_samples, 1) // max(width_px, 1))  # ceil division
    return 1 << (per_column - 1).bit_length()


def _clamp_range(length: int, start: int, stop: int | None) -> tuple[int, int]:
    stop = length if stop is None else stop
    start = min(max(int(start), 0), length)
    stop = min(max(int(stop), start), length)
    return start, stop


def _interleave(
    mins: np.ndarray, maxs: np.ndarray, first_column: int, block: int, length: int
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (min, max) per column with x at each column's centre (clipped to the last sample)."""
    count = len(mins)
    y = np.empty(2 * count, dtype=mins.dtype)
    y[0::2] = mins
    y[1::2] = maxs
    centres = (np.arange(first_column, first_column + count, dtype=np.float64) * block
               + (block - 1) / 2.0)
    np.minimum(centres, length - 1, out=centres)
    return np.repeat(centres, 2), y


def _block_extrema(segment: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """Min and max of consecutive `block`-sample blocks; a short last block counts too."""
    full = len(segment) // block
    body = segment[: full * block].reshape(full, block)
    mins, maxs = body.min(axis=1), body.max(axis=1)
    tail = segment[full * block:]
    if len(tail):
        mins = np.append(mins, tail.min())
        maxs = np.append(maxs, tail.max())
    return mins, maxs


def _columns(start: int, stop: int, block: int) -> tuple[int, int]:
    """First and one-past-last column (aligned to multiples of `block`) touching [start, stop)."""
    return start // block, -(-stop // block)


def peak_envelope(
    samples: np.ndarray, width_px: int, start: int = 0, stop: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Min/max envelope of samples[start:stop] for a plot `width_px` pixels wide.

    Returns (x, y) as described in the module docstring: raw samples when the range holds at
    most 2 * width_px of them, else one (min, max) pair per aligned column. The first and last
    columns may reach a little outside [start, stop) so that the layout does not depend on
    where the range begins.
    """
    samples = np.asarray(samples)
    if samples.ndim != 1:
        raise ValueError(f"peak_envelope wants one channel (N,), got shape {samples.shape}")
    length = len(samples)
    start, stop = _clamp_range(length, start, stop)
    width_px = max(int(width_px), 1)
    if stop - start <= 2 * width_px:
        return np.arange(start, stop, dtype=np.float64), samples[start:stop]
    block = column_block(stop - start, width_px)
    first, last = _columns(start, stop, block)
    mins, maxs = _block_extrema(samples[first * block: min(last * block, length)], block)
    return _interleave(mins, maxs, first, block, length)


class PeakPyramid:
    """Per-2^k-sample min/max blocks of one channel, built once per take.

    `envelope()` returns exactly what `peak_envelope()` returns for the same arguments, but a
    zoomed-out request slices about `width_px` precomputed blocks instead of scanning samples.
    The pyramid keeps a reference to `samples`; do not modify them afterwards.
    """

    def __init__(self, samples: np.ndarray, base_block: int = BASE_BLOCK) -> None:
        samples = np.ascontiguousarray(samples)
        if samples.ndim != 1:
            raise ValueError(f"PeakPyramid wants one channel (N,), got shape {samples.shape}")
        if base_block < 2 or base_block & (base_block - 1):
            raise ValueError(f"base_block must be a power of two >= 2, got {base_block}")
        self._samples = samples
        self._base_block = base_block
        self._levels: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if len(samples) == 0:
            return
        block = base_block
        mins, maxs = _block_extrema(samples, block)
        self._levels[block] = (mins, maxs)
        while len(mins) > 1:
            if len(mins) % 2:  # repeating the last block leaves its pair's extrema unchanged
                mins, maxs = np.append(mins, mins[-1]), np.append(maxs, maxs[-1])
            mins = np.minimum(mins[0::2], mins[1::2])
            maxs = np.maximum(maxs[0::2], maxs[1::2])
            block *= 2
            self._levels[block] = (mins, maxs)
        self._top_block = block

    def __len__(self) -> int:
        return len(self._samples)

    @property
    def samples(self) -> np.ndarray:
        return self._samples

    @property
    def nbytes(self) -> int:
        """Memory held by the pyramid levels (not counting the samples)."""
        return sum(lo.nbytes + hi.nbytes for lo, hi in self._levels.values())

    def envelope(
        self, start: int = 0, stop: int | None = None, width_px: int = 1000
    ) -> tuple[np.ndarray, np.ndarray]:
        """Same result as `peak_envelope(samples, width_px, start, stop)`, from the pyramid."""
        length = len(self._samples)
        start, stop = _clamp_range(length, start, stop)
        width_px = max(int(width_px), 1)
        if stop - start <= 2 * width_px:
            return peak_envelope(self._samples, width_px, start, stop)
        block = column_block(stop - start, width_px)
        if block < self._base_block:
            return peak_envelope(self._samples, width_px, start, stop)
        first, last = _columns(start, stop, block)
        # A block wider than the clip is one column holding the global extrema: the top level.
        mins, maxs = self._levels[min(block, self._top_block)]
        return _interleave(mins[first:last], maxs[first:last], first, block, length)
