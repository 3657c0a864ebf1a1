"""PCM sample conversions and frame-count fitting, with the scaling rules of engines.audio_io.

In memory, 16-bit PCM is symmetric: full scale is +-PCM_CLAMP (32767), never -32768, so
`pcm16_from_float` and `float_from_pcm16` invert each other exactly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from engines.constants import CHANNELS, PCM_CLAMP
from engines.errors import AudioFileError

if TYPE_CHECKING:
    from engines.generation_result import GenerationResult


def pcm16_from_float(x: np.ndarray) -> np.ndarray:
    """Float audio in [-1, 1] to int16, rounded to nearest and clamped to +-32767.

    Clamping before narrowing is what keeps an over-full-scale sample from wrapping into a loud
    click. NaN becomes silence and +-inf full scale, for the same reason.
    """
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        raise TypeError(f"pcm16_from_float needs float samples, got {x.dtype}")
    work_dtype = np.float64 if x.dtype == np.float64 else np.float32
    scaled = np.multiply(x, PCM_CLAMP, dtype=work_dtype)
    np.nan_to_num(scaled, copy=False, nan=0.0, posinf=PCM_CLAMP, neginf=-PCM_CLAMP)
    np.rint(scaled, out=scaled)
    np.clip(scaled, -PCM_CLAMP, PCM_CLAMP, out=scaled)
    return scaled.astype(np.int16)


def pcm16_from_int32(x: np.ndarray) -> np.ndarray:
    """int32 PCM already at int16 scale (the TensorRT decoder's `pcm` output) to int16.

    The decoder may emit 32768 or -32768; a plain cast would wrap 32768 to -32768, so clamp to
    +-32767 first.
    """
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.integer):
        raise TypeError(f"pcm16_from_int32 needs integer samples, got {x.dtype}")
    return np.clip(x, -PCM_CLAMP, PCM_CLAMP).astype(np.int16)


def float_from_pcm16(x: np.ndarray) -> np.ndarray:
    """int16 PCM to float32, dividing by 32767 so it exactly inverts `pcm16_from_float`.

    Only -32768, which our own writers never produce, maps slightly outside [-1, 1].
    """
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.integer):
        raise TypeError(f"float_from_pcm16 needs integer samples, got {x.dtype}")
    return x.astype(np.float32) / np.float32(PCM_CLAMP)


def fit_length(audio: np.ndarray, n: int) -> np.ndarray:
    """A new array with exactly `n` frames: `audio` trimmed, or padded at the end with silence.

    Always a copy, so the caller may keep writing to the result without touching the source.
    """
    if n < 0:
        raise ValueError(f"fit_length needs n >= 0, got {n}")
    audio = np.asarray(audio)
    if audio.ndim < 1:
        raise ValueError("fit_length needs an array with a frame axis")
    out = np.zeros((n, *audio.shape[1:]), dtype=audio.dtype)
    keep = min(n, audio.shape[0])
    out[:keep] = audio[:keep]
    return out


def result_pcm16(result: GenerationResult) -> np.ndarray:
    """A generated take's audio as the library keeps it and every file is written from: int16
    (N, 2), C-contiguous. Backends hand over int16 stereo; mono is doubled and floats are
    converted (through float32, as the library always did), anything else is refused."""
    audio = np.asarray(result.pcm)
    if audio.ndim == 1:
        audio = np.stack([audio, audio], axis=1)
    if audio.ndim != 2 or audio.shape[1] != CHANNELS or audio.shape[0] == 0:
        raise AudioFileError(f"The take's audio has shape {audio.shape}; a take is stereo audio "
                             "shaped (N, 2) with N > 0.")
    if audio.dtype == np.int16:
        return np.ascontiguousarray(audio)
    if np.issubdtype(audio.dtype, np.floating):
        return pcm16_from_float(np.ascontiguousarray(audio, dtype=np.float32))
    raise AudioFileError(f"The take's audio has dtype {audio.dtype}; a take is int16 or float "
                         "audio.")
