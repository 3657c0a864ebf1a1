"""Shared helpers for tests that run the demo model set (features a listener would notice)."""

from __future__ import annotations

import numpy as np

SR = 44100


def band_profile(pcm: np.ndarray, bands: int = 24) -> np.ndarray:
    """Log energy in log-spaced bands 40 Hz..16 kHz of the mono mix."""
    x = np.asarray(pcm, dtype=np.float64)
    x = x.mean(axis=1) if x.ndim == 2 else x
    spectrum = np.abs(np.fft.rfft(x)) ** 2
    freqs = np.fft.rfftfreq(len(x), 1 / SR)
    edges = np.geomspace(40, 16000, bands + 1)
    energy = [spectrum[(freqs >= lo) & (freqs < hi)].sum()
              for lo, hi in zip(edges[:-1], edges[1:], strict=True)]
    return np.log10(np.asarray(energy) + 1e-3)


def envelope(pcm: np.ndarray, points: int = 24) -> np.ndarray:
    """Log RMS over time, in `points` equal slices."""
    x = np.asarray(pcm, dtype=np.float64).mean(axis=1)
    slices = np.array_split(x, points)
    return np.log10(np.array([np.sqrt(np.mean(s**2)) for s in slices]) + 1.0)


def similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation of two feature vectors."""
    a = a - a.mean()
    b = b - b.mean()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-12))


def texture(pcm: np.ndarray) -> np.ndarray:
    """Spectral shape and time envelope, each standardised, side by side."""
    parts = [band_profile(pcm), envelope(pcm)]
    return np.concatenate([(p - p.mean()) / (p.std() + 1e-9) for p in parts])
