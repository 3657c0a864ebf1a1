"""The one shape the meters, the limiter and normalisation work on: (frames, channels)."""

from __future__ import annotations

import numpy as np


def as_2d(audio: np.ndarray) -> np.ndarray:
    """(frames, channels): mono (frames,) becomes one channel, a view, never a copy."""
    return audio[:, None] if audio.ndim == 1 else audio
