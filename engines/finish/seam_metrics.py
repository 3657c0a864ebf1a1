"""How audible a join is: the same three measures at a loop's wrap point and at ordinary points
inside it, so "seamless" means "no worse than the audio's own moment-to-moment change".

- level step: dB difference of the RMS in the LEVEL_WINDOW frames before and after the point
  (a jump in loudness);
- spectral distance: RMS difference in dB of the band energies of the SPECTRUM_WINDOW frames
  before and after (a change of colour). Bands, not FFT bins: each bin of a noisy sound
  fluctuates by several dB from one window to the next, which would drown any real change;
- sample jump: |x[p] - x[p-1]| over the RMS of the neighbouring first differences (a click;
  about 1 for continuous audio, large for a step).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

LEVEL_WINDOW = 2048
SPECTRUM_WINDOW = 2048
JUMP_WINDOW = 1024  # first differences looked at on each side for the typical change
BANDS = 24
BAND_LOW_HZ = 50.0
FLOOR = 1e-10  # power floor (-100 dB): silence against silence is no step
METRICS = ("level_step_db", "spectral_distance_db", "sample_jump")
MARGIN = max(LEVEL_WINDOW, SPECTRUM_WINDOW, JUMP_WINDOW) + 1  # frames a point needs each side


class SeamTest(NamedTuple):
    """The wrap point's measures and the 95th percentile of the same at interior points."""

    wrap: dict[str, float]
    interior_p95: dict[str, float]

    @property
    def passed(self) -> bool:
        return all(self.wrap[m] <= self.interior_p95[m] for m in METRICS)


def _frames(audio: np.ndarray) -> np.ndarray:
    audio = np.asarray(audio, dtype=np.float64)
    return audio[:, None] if audio.ndim == 1 else audio


def _band_matrix(rate: int) -> np.ndarray:
    """(bins, BANDS) 0/1 matrix summing rfft bins into log-spaced bands up to 0.45 * rate."""
    freqs = np.fft.rfftfreq(SPECTRUM_WINDOW, 1.0 / rate)
    edges = np.geomspace(BAND_LOW_HZ, 0.45 * rate, BANDS + 1)
    matrix = np.zeros((freqs.size, BANDS))
    for band in range(BANDS):
        matrix[(freqs >= edges[band]) & (freqs < edges[band + 1]), band] = 1.0
    return matrix


def _window_sums(values: np.ndarray, points: np.ndarray, offset: int, size: int) -> np.ndarray:
    """Sum of values[p + offset : p + offset + size] for every p, from one cumulative sum."""
    total = np.concatenate([[0.0], np.cumsum(values)])
    return total[points + offset + size] - total[points + offset]


def _metrics_at(audio: np.ndarray, rate: int, points: np.ndarray) -> dict[str, np.ndarray]:
    """The three measures at every frame index in `points` (each >= MARGIN from both ends)."""
    points = np.asarray(points, dtype=np.int64)
    # Only the stretch the windows reach is converted and summed (a search looks at a few
    # hundred milliseconds of a long take).
    first = max(int(points.min()) - MARGIN - 1, 0)
    x = _frames(np.asarray(audio)[first:int(points.max()) + MARGIN + 1])
    points = points - first
    power = np.sum(x**2, axis=1)
    before = _window_sums(power, points, -LEVEL_WINDOW, LEVEL_WINDOW)
    after = _window_sums(power, points, 0, LEVEL_WINDOW)
    scale = 1.0 / (LEVEL_WINDOW * x.shape[1])
    level = np.abs(10.0 * np.log10((after * scale + FLOOR) / (before * scale + FLOOR)))

    # One gather covers both spectrum windows; float32 halves the memory traffic.
    index = points[:, None] + np.arange(-SPECTRUM_WINDOW, SPECTRUM_WINDOW)[None, :]
    windows = x.astype(np.float32)[index]  # (P, 2 * SPECTRUM_WINDOW, C)
    taper = np.hanning(SPECTRUM_WINDOW).astype(np.float32)[None, :, None]
    bands = _band_matrix(rate).astype(np.float32)

    def band_db(half: np.ndarray) -> np.ndarray:
        spectrum = np.fft.rfft(half * taper, axis=1)  # (P, bins, C)
        power = (spectrum.real**2 + spectrum.imag**2).sum(axis=2)
        return 10.0 * np.log10(power.astype(np.float64) @ bands + FLOOR)

    spectral = np.sqrt(np.mean((band_db(windows[:, SPECTRUM_WINDOW:])
                                - band_db(windows[:, :SPECTRUM_WINDOW])) ** 2, axis=1))

    # diffs[i] = x[i + 1] - x[i]; the join at p is diffs[p - 1].
    diffs = np.diff(x, axis=0)
    step = np.abs(diffs[points - 1])  # (P, C)
    squares = diffs**2
    around = np.stack([_window_sums(squares[:, c], points, -JUMP_WINDOW - 1,
                                    2 * JUMP_WINDOW + 1) for c in range(x.shape[1])], axis=1)
    around -= squares[points - 1]  # the join itself is not part of the typical change
    typical = np.sqrt(np.maximum(around, 0.0) / (2 * JUMP_WINDOW)) + 1e-9
    jump = np.max(step / typical, axis=1)
    return {"level_step_db": level, "spectral_distance_db": spectral, "sample_jump": jump}


def seam_metrics(audio: np.ndarray, rate: int, point: int) -> dict[str, float]:
    """The three measures of the join between frames point-1 and point of `audio`."""
    x = _frames(audio)
    if not MARGIN <= point <= x.shape[0] - MARGIN:
        raise ValueError(f"point {point} needs {MARGIN} frames on each side of it in "
                         f"{x.shape[0]} frames")
    return {k: float(v[0]) for k, v in _metrics_at(x, rate, np.array([point])).items()}


def wrap_view(audio: np.ndarray) -> tuple[np.ndarray, int]:
    """The loop's end followed by its start, and the index of the wrap point in it."""
    x = _frames(audio)
    if x.shape[0] < 2 * MARGIN:
        raise ValueError(f"a loop needs at least {2 * MARGIN} frames to measure its wrap")
    return np.concatenate([x[-MARGIN:], x[:MARGIN]]), MARGIN


def seam_test(loop_audio: np.ndarray, rate: int, n_random: int = 200,
              seed: int = 0) -> SeamTest:
    """The wrap point (end -> start) against `n_random` random interior points of the loop."""
    x = _frames(loop_audio)
    view, point = wrap_view(x)
    wrap = seam_metrics(view, rate, point)
    if x.shape[0] <= 2 * MARGIN + 1:
        raise ValueError("the loop is too short for interior points to compare with")
    points = np.random.default_rng(seed).integers(MARGIN, x.shape[0] - MARGIN, n_random)
    interior = _metrics_at(x, rate, points)
    p95 = {name: float(np.percentile(values, 95)) for name, values in interior.items()}
    return SeamTest(wrap, p95)


def steadiest_point(audio: np.ndarray, rate: int, candidates: np.ndarray) -> int:
    """The candidate frame whose join is least noticeable: smallest worst measure, each measure
    scaled by its median over the candidates (so no one unit dominates)."""
    values = _metrics_at(audio, rate, candidates)
    scaled = [v / (np.median(v) + 1e-12) for v in values.values()]
    return int(candidates[int(np.argmin(np.max(scaled, axis=0)))])
