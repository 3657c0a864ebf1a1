"""The last steps of finishing before a file is written: sample rate, channel count and the
16-bit dither; and reading back the loop tags of a delivered file. The files themselves are
written by engines.delivery (writer, metadata) in the formats of engines.audio_io.formats.

Loop points travel as a WAV `smpl` chunk (engines.finish.smpl) or, in FLAC and Ogg, as the
Vorbis comments LOOPSTART and LOOPLENGTH (frames), the convention RPG Maker, GameMaker, many
trackers and players read. Godot does not read those tags: its Ogg importer takes the loop from
the import settings (loop, loop offset), so Godot users set it there. The JSON note goes where
engines.store.wavmeta puts it: WAV INFO ICMT/INAM, Vorbis COMMENT/TITLE.
"""

from __future__ import annotations

import logging
import math
import os
import struct
from pathlib import Path

import numpy as np
import soxr

from engines.error_sentences import sentence, shown
from engines.errors import AudioFileError
from engines.finish import vorbis_comments
from engines.finish.smpl import read_loop_points

logger = logging.getLogger(__name__)

RESAMPLE_QUALITY = "VHQ"
PCM16_FULL_SCALE = 32767  # symmetric, as engines.audio_io writes it
PCM24_FULL_SCALE = 2**23 - 1
# Input frames of the loop's own audio put before and after it for circular resampling: soxr's
# VHQ filter reaches about 150 samples either side at 44.1 <-> 48 kHz; 8192 leaves a wide margin
# for any rate pair without costing much.
CIRCULAR_PAD_FRAMES = 8192

Loop = tuple[int, int]  # (start frame, end frame INCLUSIVE), as in the smpl chunk


def _frames_channels(audio: np.ndarray, what: str) -> np.ndarray:
    audio = np.asarray(audio)
    if audio.ndim != 2 or audio.shape[0] == 0 or audio.shape[1] not in (1, 2):
        raise ValueError(f"{what} needs audio shaped (N, 1) or (N, 2) with N > 0, "
                         f"got {audio.shape}")
    return audio


# --------------------------------------------------------------------------------------------
# Rate and channels


def resample(audio: np.ndarray, from_rate: int, to_rate: int,
             circular: bool = False) -> np.ndarray:
    """float32 (M, C) at `to_rate`, M = round(N * to_rate / from_rate), soxr VHQ.

    circular=False treats the clip as having silence around it (a one-shot). circular=True
    treats it as one period of a loop: a copy padded with the loop's own end before it and its
    own start after it is resampled, and exactly M frames are cut out, so the filter sees the
    audio that really surrounds every sample, including those at the wrap, and the wrap stays
    as seamless as the loop was. When N * to / from is not a whole number the loop's length is
    rounded to M frames, and the resampling ratio is M / N instead of to / from, so one period
    is exactly M frames: the pitch moves by the rounding, at most 0.5 / M (0.0018 cent for a
    10 s loop at 48 kHz), and the loop starts up to half an output sample later. Either is far
    below hearing, whereas a loop one fractional sample too long would click at every wrap.
    (When N / gcd(N, M) is small, as for any whole number of 147-frame steps at 44.1 -> 48
    kHz, the start is exact: see circular_pad_frames.)
    """
    audio = _frames_channels(audio, "resample")
    frames = audio.shape[0]
    target = max(1, round(frames * to_rate / from_rate))
    work = np.ascontiguousarray(audio, dtype=np.float32)
    if from_rate == to_rate:
        return work.copy()
    if not circular:
        out = soxr.resample(work, from_rate, to_rate, quality=RESAMPLE_QUALITY)
        return _fit(out, target)
    out_rate = from_rate * target / frames  # the exact M / N ratio
    pad = circular_pad_frames(frames, target)
    padded = np.pad(work, ((pad, pad), (0, 0)), mode="wrap")  # tiles short loops as needed
    out = soxr.resample(padded, from_rate, out_rate, quality=RESAMPLE_QUALITY)
    start = round(pad * target / frames)
    return np.ascontiguousarray(out[start:start + target], dtype=np.float32)


def circular_pad_frames(frames: int, target: int) -> int:
    """Padding for a circular resample: at least CIRCULAR_PAD_FRAMES, and where it costs at
    most a few times that, a multiple of N / gcd(N, M), so the loop's first frame falls exactly
    on an output sample (otherwise it starts up to half a sample late)."""
    step = frames // math.gcd(frames, target)
    if step <= 4 * CIRCULAR_PAD_FRAMES:
        return -(-CIRCULAR_PAD_FRAMES // step) * step
    return CIRCULAR_PAD_FRAMES


def _fit(audio: np.ndarray, frames: int) -> np.ndarray:
    out = np.zeros((frames, audio.shape[1]), dtype=np.float32)
    keep = min(frames, audio.shape[0])
    out[:keep] = audio[:keep]
    return out


def fold_to_mono(audio: np.ndarray) -> np.ndarray:
    """(N, 1): the mean of the channels, (L + R) * 0.5.

    Half the sum keeps centred (correlated) content - most of a generated take - at its level
    and can never clip (|L + R| / 2 <= max(|L|, |R|)); uncorrelated content drops 3 dB. A -3 dB
    fold ((L + R) * 0.707) would keep the power of uncorrelated content but push centred
    content 3 dB up, over full scale for a take normalised to a true-peak ceiling.
    """
    audio = _frames_channels(audio, "fold_to_mono")
    mono = audio.astype(np.float32).mean(axis=1, keepdims=True, dtype=np.float64)
    return np.ascontiguousarray(mono, dtype=np.float32)


# --------------------------------------------------------------------------------------------
# Bit depth


def tpdf_dither_to_int16(audio: np.ndarray,
                         rng: np.random.Generator | int | None = None) -> np.ndarray:
    """int16 from float audio in [-1, 1], with TPDF dither before rounding.

    The dither is the sum of two independent uniform values of +-0.5 LSB each: triangular over
    +-1 LSB, which makes the rounding error independent of the signal (no distortion on quiet
    fades or tails, only a steady noise floor near -101 dBFS). The error is zero-mean and at
    most 1.5 LSB (1 of dither plus 0.5 of rounding). Full scale is +-32767, as everywhere in
    the app. `rng`: a Generator or a seed, for reproducible files.
    """
    rng = np.random.default_rng(rng)
    x = np.nan_to_num(np.asarray(audio, dtype=np.float64), nan=0.0, posinf=1.0, neginf=-1.0)
    scaled = x * PCM16_FULL_SCALE
    scaled += rng.random(x.shape) - rng.random(x.shape)  # u1 - u2: triangular on (-1, 1)
    np.rint(scaled, out=scaled)
    np.clip(scaled, -PCM16_FULL_SCALE, PCM16_FULL_SCALE, out=scaled)
    return scaled.astype(np.int16)


def read_loop_tags(path: str | os.PathLike[str]) -> Loop | None:
    """The (start, end inclusive) loop of a delivered file: `smpl` for WAV, LOOPSTART and
    LOOPLENGTH for FLAC and Ogg; None when it has none."""
    file = Path(path)
    if file.suffix.lower() == ".wav":
        loops = read_loop_points(file)
        return loops[0] if loops else None
    try:
        data = file.read_bytes()
        tags = (vorbis_comments.flac_tags(data) if data[:4] == vorbis_comments.FLAC_MAGIC
                else vorbis_comments.ogg_tags(data))
    except OSError as err:
        raise AudioFileError(sentence(f"Could not read {shown(file)}", err)) from err
    except (ValueError, IndexError, struct.error) as err:
        raise AudioFileError(f"Could not read the tags of {shown(file)}: it is not a FLAC or "
                             f"Ogg Vorbis file we can parse; export it again.") from err
    if "LOOPSTART" not in tags or "LOOPLENGTH" not in tags:
        return None
    start = int(tags["LOOPSTART"])
    return start, start + int(tags["LOOPLENGTH"]) - 1


def delivery_tags(path: str | os.PathLike[str]) -> dict[str, str]:
    """Every Vorbis comment of a delivered FLAC or Ogg file (upper-case keys)."""
    data = Path(path).read_bytes()
    if data[:4] == vorbis_comments.FLAC_MAGIC:
        return vorbis_comments.flac_tags(data)
    return vorbis_comments.ogg_tags(data)
