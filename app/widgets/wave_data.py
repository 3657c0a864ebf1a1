"""The waveform's data, without widgets: inpaint spans snapped to the latent grid, and a take's
float channels with their peak pyramids (the part of showing a take worth doing off the GUI
thread)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from app.widgets.peaks import PeakPyramid
from engines.constants import SAMPLE_RATE, SAMPLES_PER_LATENT

INT16_SCALE = 1.0 / 32768.0

Span = tuple[float, float]


def snap_spans(
    spans: Iterable[Sequence[float]],
    duration: float,
    grid: int = SAMPLES_PER_LATENT,
    sample_rate: int = SAMPLE_RATE,
) -> list[Span]:
    """Spans (seconds) snapped outward to the latent grid, clipped to the clip, merged.

    Each start is floored and each end ceiled to a multiple of `grid` samples (inpainting works
    on whole latents), then clipped to [0, duration]. Overlapping or touching spans merge into
    one (touching spans mask the same latents as their union). Empty results are dropped.
    Returns sorted (start, end) pairs in seconds; snapping an already-snapped list is a no-op.
    """
    total = max(int(round(duration * sample_rate)), 0)
    # Tolerance so a value that is already on the grid (after a seconds round trip) stays put.
    eps = 1e-6
    snapped: list[tuple[int, int]] = []
    for span in spans:
        a, b = sorted((float(span[0]), float(span[1])))
        start = math.floor(a * sample_rate / grid + eps) * grid
        end = math.ceil(b * sample_rate / grid - eps) * grid
        start, end = max(start, 0), min(end, total)
        if end > start:
            snapped.append((start, end))
    snapped.sort()
    merged: list[list[int]] = []
    for start, end in snapped:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start / sample_rate, end / sample_rate) for start, end in merged]


def prepare_waveform(pcm: np.ndarray) -> tuple[list[np.ndarray], list[PeakPyramid]]:
    """Float channels and their peak pyramids: the costly part of showing a take, done once
    (by the GPU worker for new takes, so the GUI thread only draws)."""
    channels = _to_float_channels(pcm)
    first = PeakPyramid(channels[0])
    second = first if channels[1] is channels[0] else PeakPyramid(channels[1])
    return channels, [first, second]


def _to_float_channels(pcm: np.ndarray) -> list[np.ndarray]:
    """Contiguous float32 copies of each channel; mono input is shown on both plots."""
    data = np.asarray(pcm)
    if data.ndim == 1:
        data = data[:, None]
    if data.ndim != 2 or data.shape[1] not in (1, 2):
        raise ValueError(f"audio must have shape (N, 2) or (N,), got {data.shape}")
    if data.dtype == np.int16:
        channels = [data[:, c].astype(np.float32) for c in range(data.shape[1])]
        for channel in channels:
            channel *= INT16_SCALE  # a power of two: exact in float32
    elif np.issubdtype(data.dtype, np.floating):
        channels = [np.array(data[:, c], dtype=np.float32) for c in range(data.shape[1])]
    else:
        raise ValueError(f"audio must be int16 or float, got {data.dtype}")
    if len(channels) == 1:
        channels.append(channels[0])
    return channels
