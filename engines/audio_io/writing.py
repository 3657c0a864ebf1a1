"""Writing finished clips: the export formats, the exact samples each one receives, and an
atomic save whose every failure is one AudioFileError sentence.

Floats written to N-bit PCM use the symmetric rule +-(2**(N-1) - 1), the same as
`pcm16_from_float`, so a file we wrote reads back 32767/32768 (-0.0003 dB) quieter than the
floats that went in, which nobody can hear.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

import numpy as np
import soundfile as sf

from engines.audio_io.atomic import (
    copy_mode_from,
    create_temp_beside,
    fsync_file,
    release,
    remove_quietly,
    remove_stale_temps,
)
from engines.audio_io.os_errors import os_reason
from engines.audio_io.pcm import pcm16_from_float
from engines.constants import CHANNELS, SAMPLE_RATE
from engines.errors import AudioFileError
from engines.failures import printable

logger = logging.getLogger(__name__)

PCM24_CLAMP = 2**23 - 1


class WriteFormat(NamedTuple):
    """How one export choice maps onto libsndfile: container, sample encoding, file suffix."""

    format: str
    subtype: str
    suffix: str


WRITE_FORMATS: Mapping[str, WriteFormat] = MappingProxyType(
    {
        "wav16": WriteFormat("WAV", "PCM_16", ".wav"),
        "wav24": WriteFormat("WAV", "PCM_24", ".wav"),
        "flac": WriteFormat("FLAC", "PCM_24", ".flac"),
        "ogg": WriteFormat("OGG", "VORBIS", ".ogg"),
    }
)


def format_for_path(path: str | os.PathLike[str], default: str = "wav16") -> str:
    """The WRITE_FORMATS key a file name asks for, from its suffix (case-insensitive).

    `default` settles suffixes several formats share: with default="wav24", a .wav name gives
    wav24 instead of wav16. A suffix no format uses is the user's to fix, so it raises.
    """
    file = Path(path)
    suffix = file.suffix.lower()
    if default in WRITE_FORMATS and WRITE_FORMATS[default].suffix == suffix:
        return default
    for name, spec in WRITE_FORMATS.items():
        if spec.suffix == suffix:
            return name
    raise AudioFileError(
        f"Cannot save '{file.name}': audio can only be saved as {_suffix_list()}; "
        "change the file name to end in one of those."
    )


def write_audio(
    path: str | os.PathLike[str],
    audio: np.ndarray,
    fmt: str | None = None,
    samplerate: int = SAMPLE_RATE,
) -> Path:
    """Write (N, 2) int16 or float audio to `path` atomically and return the path.

    The file is written beside the target under a hidden temporary name, synced, checked, and
    only then moved over the target, so a failure (full disk, no permission, a crash) leaves any
    existing file untouched and no temporary file behind. `fmt` is a WRITE_FORMATS key; by
    default it follows the suffix. int16 input is written bit-exactly to wav16 and placed in the
    top bits of 24-bit formats, so every format reads back the same floats (Vorbis within its
    loss); float input is clamped and scaled as the module docstring describes.
    """
    target = Path(path)
    temp = write_audio_temp(target, audio, fmt, samplerate)
    try:
        os.replace(temp, target)
    except OSError as err:
        remove_quietly(temp)
        raise _write_failed(target, err) from err
    finally:
        release(temp)
    logger.info("Saved %s (%s)", target, fmt)
    return target


def write_audio_temp(
    path: str | os.PathLike[str],
    audio: np.ndarray,
    fmt: str | None = None,
    samplerate: int = SAMPLE_RATE,
) -> Path:
    """The first half of `write_audio`: a complete, synced and checked temporary file beside
    `path`, with the permissions the target has (or the umask gives), for callers that move
    several files into place together. They os.replace it (then `atomic.release` it) or
    `atomic.remove_quietly` it. Every failure is one AudioFileError sentence, nothing left."""
    target = Path(path)
    if fmt is None:
        fmt = format_for_path(target)
    spec = _write_format(target, fmt)
    data = _encode_for(spec, audio)
    if samplerate <= 0:
        raise ValueError(f"samplerate must be positive, got {samplerate}")

    folder = target.parent
    if not folder.is_dir():
        raise AudioFileError(
            f"Could not save '{printable(target.name)}': the folder '{printable(folder)}' does "
            "not exist; choose an existing folder."
        )
    if target.is_dir():
        raise _write_failed(target, IsADirectoryError(errno.EISDIR, "Is a directory"))
    if target.exists() and not target.is_file():  # a device, FIFO or socket is not replaced
        raise AudioFileError(
            f"Could not save '{printable(target.name)}': it is a device or special file, not "
            "an audio file, so nothing was changed; choose a file name."
        )
    remove_stale_temps(target)
    try:
        temp = create_temp_beside(target, spec.suffix)
    except OSError as err:
        raise _write_failed(target, err) from err
    try:
        # bytes: soundfile encodes str paths strictly, and a name may hold non-UTF-8 bytes.
        sf.write(os.fsencode(temp), data, samplerate, format=spec.format, subtype=spec.subtype)
        _verify_written(temp, data.shape[0])
        fsync_file(temp)
        copy_mode_from(target, temp)
    except BaseException as err:
        remove_quietly(temp)
        if isinstance(err, Exception):
            raise _write_failed(target, err, expected_bytes=data.nbytes) from err
        raise  # KeyboardInterrupt and friends: cleaned up, but not ours to reword
    return temp


def _suffix_list() -> str:
    suffixes = sorted({spec.suffix for spec in WRITE_FORMATS.values()})
    return ", ".join(suffixes[:-1]) + " or " + suffixes[-1]


def _write_format(target: Path, fmt: str) -> WriteFormat:
    spec = WRITE_FORMATS.get(fmt)
    if spec is None:
        raise AudioFileError(
            f"Cannot save '{target.name}': '{fmt}' is not an export format; "
            f"choose one of {', '.join(WRITE_FORMATS)}."
        )
    # FLAC data inside a .wav name would confuse every other program that opens it.
    if target.suffix.lower() != spec.suffix:
        raise AudioFileError(
            f"Cannot save '{target.name}' as {fmt}: the name must end in {spec.suffix}; "
            "rename it or choose the matching format."
        )
    return spec


def _encode_for(spec: WriteFormat, audio: np.ndarray) -> np.ndarray:
    """The array to hand libsndfile, so that what lands in the file is decided here, not by
    libsndfile's own float scaling (which uses 2**(N-1) and would disagree with PCM_CLAMP)."""
    audio = np.asarray(audio)
    if audio.ndim != 2 or audio.shape[1] != CHANNELS:
        raise ValueError(f"write_audio needs audio shaped (N, {CHANNELS}), got {audio.shape}")
    if audio.shape[0] == 0:
        raise ValueError("write_audio got zero frames; there is nothing to save")
    is_pcm16 = audio.dtype == np.int16
    if not is_pcm16 and not np.issubdtype(audio.dtype, np.floating):
        raise TypeError(
            f"write_audio needs int16 or float audio, got {audio.dtype} "
            "(convert decoder int32 output with pcm16_from_int32 first)"
        )
    if not is_pcm16 and not np.all(np.isfinite(audio)):
        logger.warning("Audio to save holds NaN or infinite samples; NaN is written as silence")

    if spec.subtype == "PCM_16":
        return np.ascontiguousarray(audio if is_pcm16 else pcm16_from_float(audio))
    if spec.subtype == "PCM_24":
        # libsndfile keeps the top 24 bits of an int32 sample.
        if is_pcm16:
            return np.left_shift(audio.astype(np.int32), 16)
        scaled = np.multiply(audio, PCM24_CLAMP, dtype=np.float64)
        np.nan_to_num(scaled, copy=False, nan=0.0, posinf=PCM24_CLAMP, neginf=-PCM24_CLAMP)
        np.rint(scaled, out=scaled)
        np.clip(scaled, -PCM24_CLAMP, PCM24_CLAMP, out=scaled)
        return np.left_shift(scaled.astype(np.int32), 8)
    # Lossy codecs take floats; int16 is scaled the way libsndfile reads 16-bit files, so an
    # .ogg reads back at the same level as a .wav of the same samples.
    if is_pcm16:
        return audio.astype(np.float32) / np.float32(32768.0)
    floats = np.nan_to_num(audio.astype(np.float32), nan=0.0, posinf=1.0, neginf=-1.0)
    return np.clip(floats, -1.0, 1.0)


def _verify_written(temp: Path, frames: int) -> None:
    """libsndfile does not always report a short write (the Vorbis encoder can swallow one), so
    read the header back before the file replaces anything."""
    written = sf.info(os.fsencode(temp)).frames
    if written != frames:
        raise _IncompleteWrite(f"{temp} holds {written} of {frames} frames")


class _IncompleteWrite(Exception):
    """The file on disk holds fewer frames than were handed to libsndfile."""


def _write_failed(
    target: Path, err: BaseException, expected_bytes: int | None = None
) -> AudioFileError:
    advice = "check the folder and try again"
    if isinstance(err, OSError):
        reason, advice = os_reason(err)
    elif isinstance(err, _IncompleteWrite) or (
        isinstance(err, sf.LibsndfileError)
        and _disk_looks_full(target.parent, expected_bytes)
    ):
        # libsndfile reports OS failures as "System error" (or, for FLAC, as an encoder that
        # failed to start); free space tells the likely one.
        reason, advice = os_reason(OSError(errno.ENOSPC, "No space left on device"))
    elif isinstance(err, sf.LibsndfileError):
        reason = f"the audio library reported '{err.error_string.rstrip('.')}'"
    else:
        from engines.failures import reason as failure_reason

        reason, advice = failure_reason(err)
    return AudioFileError(
        f"Could not save '{printable(target.name)}': {reason}, so nothing was changed; "
        f"{advice}."
    )


def _disk_looks_full(folder: Path, expected_bytes: int | None) -> bool:
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return False
    return free < max(expected_bytes or 0, 1 << 20)
