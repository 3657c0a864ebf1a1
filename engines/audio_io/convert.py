"""Bringing decoded audio to the engines' shape: any channel count folded to stereo, any rate
resampled to SAMPLE_RATE with a frame count callers can predict."""

from __future__ import annotations

import logging

import numpy as np
import soxr

from engines.audio_io.pcm import fit_length
from engines.constants import CHANNELS, SAMPLE_RATE

logger = logging.getLogger(__name__)

RESAMPLE_QUALITY = "VHQ"

# ITU-R BS.775 style fold-down gain for the centre and surround channels (-3 dB).
_MINUS_3_DB = 1.0 / np.sqrt(2.0)
# WAV/SMPTE channel order of a 6-channel file: L R C LFE Ls Rs.
_SMPTE_51_TO_STEREO = np.array(
    [
        [1.0, 0.0],  # L
        [0.0, 1.0],  # R
        [_MINUS_3_DB, _MINUS_3_DB],  # C
        [0.0, 0.0],  # LFE: dropped, as the ITU fold-down does
        [_MINUS_3_DB, 0.0],  # Ls
        [0.0, _MINUS_3_DB],  # Rs
    ]
)


def downmix_matrix(channels: int) -> np.ndarray:
    """(channels, 2) gains that fold a file's channels to stereo without gaining level.

    6 channels are taken as WAV/SMPTE 5.1 (L R C LFE Ls Rs) and folded ITU-style: centre and
    surrounds at -3 dB, LFE dropped. Other counts above 2 keep channels 0 and 1 as L and R and
    add every other channel to both sides at -3 dB. Either way each side is then scaled by the
    sum of its gains, so full-scale input on every channel still peaks at exactly 1.0.
    """
    if channels == 1:
        return np.ones((1, CHANNELS))
    if channels == 2:
        return np.eye(2)
    if channels == 6:
        matrix = _SMPTE_51_TO_STEREO.copy()
    else:
        matrix = np.full((channels, CHANNELS), _MINUS_3_DB)
        matrix[:2] = np.eye(2)
    return matrix / matrix.sum(axis=0, keepdims=True)


def to_stereo(data: np.ndarray) -> np.ndarray:
    channels = data.shape[1]
    if channels == 2:
        return data
    if channels == 1:
        return np.repeat(data, 2, axis=1)
    logger.info("Folding %d channels down to stereo", channels)
    return data @ downmix_matrix(channels).astype(np.float32)


def resample(stereo: np.ndarray, rate: int) -> np.ndarray:
    """Resample to SAMPLE_RATE with a length fixed by arithmetic, not by the resampler's own
    rounding, so callers can predict it: round(N * SAMPLE_RATE / rate), at least one frame."""
    frames = stereo.shape[0]
    target = max(1, (frames * SAMPLE_RATE + rate // 2) // rate)
    logger.info("Resampling %d frames from %d Hz to %d Hz", frames, rate, SAMPLE_RATE)
    resampled = soxr.resample(stereo, rate, SAMPLE_RATE, quality=RESAMPLE_QUALITY)
    if resampled.shape[0] != target:
        resampled = fit_length(resampled, target)
    return np.ascontiguousarray(resampled, dtype=np.float32)
