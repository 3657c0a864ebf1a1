"""What libsndfile is handed for each sample encoding, decided here rather than by libsndfile's
own float scaling (which uses 2**(N-1) and would disagree with the app's symmetric full scale).

- int16 input (a raw take) goes into 16-bit files bit for bit and into the top bits of 24-bit
  ones, so every format reads back the same floats (Vorbis within its loss).
- Float input to 16-bit is TPDF dithered with a fixed seed (engines.finish.output_format), so the
  same audio always gives the same file; to 24-bit it is rounded (its error sits near -144
  dBFS, under any playback); 32-bit float keeps overs (the user may want them).
"""

from __future__ import annotations

import numpy as np

from engines.finish.output_format import PCM16_FULL_SCALE, PCM24_FULL_SCALE, tpdf_dither_to_int16

DEFAULT_DITHER_SEED = 0  # fixed, so exporting the same take twice gives the same bytes


def frames_channels(audio: np.ndarray) -> np.ndarray:
    """`audio` checked to be (N, 1) or (N, 2) int16 or float with N > 0."""
    audio = np.asarray(audio)
    if audio.ndim != 2 or audio.shape[0] == 0 or audio.shape[1] not in (1, 2):
        raise ValueError(f"audio to save must be shaped (N, 1) or (N, 2) with N > 0, "
                         f"got {audio.shape}")
    if audio.dtype != np.int16 and not np.issubdtype(audio.dtype, np.floating):
        raise TypeError(f"audio to save must be int16 or float, got {audio.dtype} (convert "
                        "decoder int32 output with pcm16_from_int32 first)")
    return audio


def samples_for(subtype: str, audio: np.ndarray,
                dither_seed: int = DEFAULT_DITHER_SEED) -> np.ndarray:
    """The array to write for `subtype` (PCM_16, PCM_24, FLOAT, VORBIS)."""
    audio = frames_channels(audio)
    if audio.dtype == np.int16:
        if subtype == "PCM_16":
            return np.ascontiguousarray(audio)
        if subtype == "PCM_24":  # libsndfile keeps the top 24 bits of an int32 sample
            return np.left_shift(audio.astype(np.int32), 16)
        # Lossy and float files take floats; int16 scaled the way libsndfile reads a 16-bit
        # file, so an .ogg reads back at the level of a .wav of the same samples.
        return audio.astype(np.float32) / np.float32(32768.0)
    if subtype == "PCM_16":
        return tpdf_dither_to_int16(audio, dither_seed)
    floats = np.nan_to_num(np.asarray(audio, dtype=np.float32), nan=0.0, posinf=1.0,
                           neginf=-1.0)
    if subtype == "PCM_24":
        scaled = np.rint(np.clip(floats.astype(np.float64), -1.0, 1.0) * PCM24_FULL_SCALE)
        return np.left_shift(scaled.astype(np.int32), 8)
    if subtype == "VORBIS":
        return np.clip(floats, -1.0, 1.0)
    return np.ascontiguousarray(floats)


__all__ = ["DEFAULT_DITHER_SEED", "PCM16_FULL_SCALE", "frames_channels", "samples_for"]
