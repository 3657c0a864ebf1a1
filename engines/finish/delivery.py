"""The last step of finishing: sample rate, channel count, bit depth, container, loop points.

Audio arrives as float32 (N, C) (C = 1 or 2) and leaves as a file a game engine takes as is:
16-bit WAV (TPDF dithered), 24-bit WAV, 32-bit float WAV, 24-bit FLAC or Ogg Vorbis. Saves are
atomic (a synced temporary beside the target, then os.replace), so a failure never leaves a
partial file or damages the one it was meant to replace; every failure is one AudioFileError
sentence.

Loop points travel as a WAV `smpl` chunk (engines.finish.smpl) or, in FLAC and Ogg, as the
Vorbis comments LOOPSTART and LOOPLENGTH (frames), the convention RPG Maker, GameMaker, many
trackers and players read. Godot does not read those tags: its Ogg importer takes the loop from
the import settings (loop, loop offset), so Godot users set it there. The JSON note goes where
engines.store.wavmeta puts it: WAV INFO ICMT/INAM, Vorbis COMMENT/TITLE.
"""

from __future__ import annotations

import errno
import logging
import math
import os
import struct
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

from engines.audio_io.atomic import (
    copy_mode_from,
    create_temp_beside,
    fsync_file,
    release,
    remove_quietly,
    remove_stale_temps,
)
from engines.errors import AudioFileError
from engines.failures import sentence, shown
from engines.finish import vorbis_comments
from engines.finish.smpl import add_loop_points, read_loop_points

logger = logging.getLogger(__name__)

RESAMPLE_QUALITY = "VHQ"
DELIVERY_RATES = (44100, 48000)
APP_NAME = "SA3 Studio"
PCM16_FULL_SCALE = 32767  # symmetric, as engines.audio_io writes it
PCM24_FULL_SCALE = 2**23 - 1
# Input frames of the loop's own audio put before and after it for circular resampling: soxr's
# VHQ filter reaches about 150 samples either side at 44.1 <-> 48 kHz; 8192 leaves a wide margin
# for any rate pair without costing much.
CIRCULAR_PAD_FRAMES = 8192
DEFAULT_DITHER_SEED = 0  # fixed, so exporting the same take twice gives the same bytes

# fmt -> (libsndfile container, subtype, suffix)
DELIVERY_FORMATS: dict[str, tuple[str, str, str]] = {
    "wav16": ("WAV", "PCM_16", ".wav"),
    "wav24": ("WAV", "PCM_24", ".wav"),
    "wav32f": ("WAV", "FLOAT", ".wav"),
    "flac": ("FLAC", "PCM_24", ".flac"),
    "ogg": ("OGG", "VORBIS", ".ogg"),
}

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


def _samples_for(subtype: str, audio: np.ndarray, dither_seed: int) -> np.ndarray:
    """What libsndfile is handed, so that what lands in the file is decided here (libsndfile's
    own float scaling uses 2**(N-1) and would disagree with the symmetric full scale)."""
    if audio.dtype == np.int16:
        if subtype == "PCM_16":
            return np.ascontiguousarray(audio)
        audio = audio.astype(np.float32) / np.float32(PCM16_FULL_SCALE)
    if subtype == "PCM_16":
        return tpdf_dither_to_int16(audio, dither_seed)
    floats = np.nan_to_num(np.asarray(audio, dtype=np.float32), nan=0.0, posinf=1.0,
                           neginf=-1.0)
    if subtype == "PCM_24":
        # 24-bit needs no dither: its rounding error sits near -144 dBFS, under any playback.
        scaled = np.rint(np.clip(floats.astype(np.float64), -1.0, 1.0) * PCM24_FULL_SCALE)
        return np.left_shift(scaled.astype(np.int32), 8)  # libsndfile keeps the top 24 bits
    if subtype == "VORBIS":
        return np.clip(floats, -1.0, 1.0)
    return np.ascontiguousarray(floats)  # 32-bit float keeps overs: the user may want them


# --------------------------------------------------------------------------------------------
# Files


def write_delivery(path: str | os.PathLike[str], audio: np.ndarray, rate: int, fmt: str,
                   loop_points: Loop | None = None, note: str | None = None,
                   title: str | None = None, dither_seed: int = DEFAULT_DITHER_SEED) -> Path:
    """See `write_delivery_temp`; this moves the finished temporary over `path`."""
    target = Path(path)
    temp = write_delivery_temp(target, audio, rate, fmt, loop_points, note, title, dither_seed)
    try:
        os.replace(temp, target)
    except OSError as err:
        remove_quietly(temp)
        raise AudioFileError(sentence(f"Could not save {shown(target.name)}", err)) from err
    finally:
        release(temp)
    logger.info("Delivered %s (%s, %d Hz)", target, fmt, rate)
    return target


def write_delivery_temp(path: str | os.PathLike[str], audio: np.ndarray, rate: int, fmt: str,
                        loop_points: Loop | None = None, note: str | None = None,
                        title: str | None = None,
                        dither_seed: int = DEFAULT_DITHER_SEED) -> Path:
    """Float (or int16) (N, 1|2) audio as `fmt` (a DELIVERY_FORMATS key) in a complete, synced
    temporary beside `path`, with optional loop points (start, end inclusive, in frames at
    `rate`), the JSON `note` (INFO ICMT / Vorbis COMMENT) and `title` (INAM / TITLE). The
    caller moves it into place with os.replace (then `atomic.release`), or removes it with
    `atomic.remove_quietly`; every failure is one AudioFileError sentence, nothing left.

    Keep the note short (engines.store.wavmeta.build_comment does): libsndfile silently drops
    every WAV INFO string once they add up to about 2 KB. 16-bit output from float is TPDF
    dithered with `dither_seed`, so the same audio always gives the same file."""
    target = Path(path)
    what = f"Could not save {shown(target.name)}"
    if fmt not in DELIVERY_FORMATS:
        raise AudioFileError(f"{what}: '{fmt}' is not a delivery format; choose one of "
                             f"{', '.join(DELIVERY_FORMATS)}.")
    container, subtype, suffix = DELIVERY_FORMATS[fmt]
    if target.suffix.lower() != suffix:
        raise AudioFileError(f"{what} as {fmt}: the name must end in {suffix}; rename it or "
                             f"choose the matching format.")
    audio = _frames_channels(audio, "write_delivery")
    if loop_points is not None:
        start, end = loop_points
        if not 0 <= start <= end < audio.shape[0]:
            raise AudioFileError(f"{what}: the loop {start}..{end} lies outside its "
                                 f"{audio.shape[0]} frames; give frames from 0 to "
                                 f"{audio.shape[0] - 1}.")
    if not target.parent.is_dir():
        raise AudioFileError(f"{what}: the folder {shown(target.parent)} does not exist; "
                             f"choose an existing folder.")
    if target.is_dir():
        raise AudioFileError(f"{what}: a folder with that name is in the way; choose another "
                             f"file name.")
    data = _samples_for(subtype, audio, dither_seed)
    remove_stale_temps(target)
    try:
        temp = create_temp_beside(target, suffix)
    except OSError as err:
        raise AudioFileError(sentence(what, err)) from err
    try:
        _write_file(temp, data, rate, container, subtype, note, title)
        if loop_points is not None:
            _add_loop(temp, container, loop_points)
        # libsndfile does not always report a short write (the Vorbis encoder can swallow
        # one); as in engines.audio_io, a file that came out short means the disk filled up.
        if sf.info(os.fsencode(temp)).frames != data.shape[0]:
            raise OSError(errno.ENOSPC, "No space left on device")
        fsync_file(temp)
        copy_mode_from(target, temp)
    except BaseException as err:
        remove_quietly(temp)
        if isinstance(err, AudioFileError):
            raise
        if isinstance(err, Exception):
            raise AudioFileError(sentence(what, err)) from err
        raise  # KeyboardInterrupt and friends: cleaned up, but not ours to reword
    return temp


def _write_file(temp: Path, data: np.ndarray, rate: int, container: str, subtype: str,
                note: str | None, title: str | None) -> None:
    # bytes: soundfile encodes str paths strictly, and a name may hold non-UTF-8 bytes.
    with sf.SoundFile(os.fsencode(temp), "w", rate, data.shape[1], subtype,
                      format=container) as f:
        # Before the first write: FLAC and Ogg write their comments with the stream header.
        if title:
            f.title = title
        if note:
            f.comment = note
        f.software = APP_NAME
        f.write(data)


def _add_loop(temp: Path, container: str, loop: Loop) -> None:
    start, end = loop
    if container == "WAV":
        add_loop_points(temp, [loop])
        return
    tags = {"LOOPSTART": str(start), "LOOPLENGTH": str(end - start + 1)}
    rewrite = (vorbis_comments.flac_with_tags if container == "FLAC"
               else vorbis_comments.ogg_with_tags)
    temp.write_bytes(rewrite(temp.read_bytes(), tags))


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
