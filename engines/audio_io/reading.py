"""Reading audio files: any format libsndfile reads, as float32 stereo at SAMPLE_RATE, and every
way a file can be wrong as one AudioFileError sentence.

Reading follows libsndfile's scaling: an N-bit sample is divided by 2**(N-1), so even a foreign
file's most negative code stays inside [-1, 1].

Memory follows the clip, not the file: with `max_seconds` only the frames needed (plus a short
margin for the resampler) are decoded, and files with other than two channels are folded down
block by block, so a 30-minute 5.1 file costs its stereo output and one block, never a
full-length copy per channel.
"""

from __future__ import annotations

import logging
import math
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from engines.audio_io.convert import resample, to_stereo
from engines.audio_io.os_errors import os_reason
from engines.constants import CHANNELS, SAMPLE_RATE
from engines.error_sentences import printable
from engines.errors import AudioFileError

logger = logging.getLogger(__name__)

READABLE_FORMATS_HINT = "WAV, FLAC, OGG, AIFF"

# Errors soundfile/libsndfile and soxr raise for bad input; MemoryError covers a file (or a
# corrupt header claiming one) too large to load.
_DECODE_ERRORS: tuple[type[BaseException], ...] = (
    sf.SoundFileError,
    RuntimeError,
    TypeError,
    ValueError,
    MemoryError,
    OverflowError,
)

_BLOCK_FRAMES = 1 << 16  # frames folded down at a time: about 1.5 MB for a 6-channel file
# soxr's very-high-quality filter looks ahead; with 50 ms of the file past the cut the frames
# kept are bit for bit those a whole-file read gives (measured at 8 to 96 kHz).
_RESAMPLE_MARGIN_SECONDS = 0.05
_RESAMPLE_MARGIN_MIN_FRAMES = 256


@dataclass(frozen=True, slots=True)
class AudioInfo:
    """What a file holds, read from its header without decoding the audio."""

    frames: int
    samplerate: int
    channels: int
    duration_seconds: float
    format: str
    subtype: str


def audio_info(path: str | os.PathLike[str]) -> AudioInfo:
    """Frames, rate, channels and encoding of an audio file, without decoding it."""
    file = Path(path)
    _check_readable(file)
    try:
        info = sf.info(_sf_name(file))
    except _DECODE_ERRORS as err:
        raise _unreadable(file, err) from err
    if info.frames <= 0:
        raise _no_audio(file)
    return AudioInfo(
        frames=int(info.frames),
        samplerate=int(info.samplerate),
        channels=int(info.channels),
        duration_seconds=float(info.frames) / float(info.samplerate),
        format=str(info.format),
        subtype=str(info.subtype),
    )


def read_audio(path: str | os.PathLike[str], max_seconds: float | None = None) -> np.ndarray:
    """Any file libsndfile reads, as float32 C-contiguous (N, 2) at SAMPLE_RATE.

    `max_seconds`: read only the start of the file, at most round(max_seconds * SAMPLE_RATE)
    frames; the frames returned are the same as the first frames of a whole-file read (unless
    the turn-down below differs, which looks only at what was read). None reads it all.

    Mono is duplicated to both sides, more channels are folded down (see
    `convert.downmix_matrix`), and other rates are resampled with soxr at very high quality to
    exactly round(N * SAMPLE_RATE / rate) frames. If resampling overshoot or an over-full-scale
    float file would put a peak above 1.0, the whole clip is turned down to peak at 1.0 rather
    than clipped, so the sound is kept and the engines and playback always see [-1, 1].
    """
    file = Path(path)
    limit = _frame_limit(max_seconds)
    _check_readable(file)
    try:
        with sf.SoundFile(_sf_name(file)) as handle:
            rate, channels = int(handle.samplerate), int(handle.channels)
            stereo, bad = _read_stereo(handle, _source_frames(int(handle.frames), rate, limit))
    except _DECODE_ERRORS as err:
        raise _unreadable(file, err) from err
    if stereo.shape[0] == 0:
        raise _no_audio(file)
    if bad:
        logger.warning("%s holds %d NaN or infinite samples; they are read as silence", file,
                       bad)
    if bad == stereo.shape[0] * channels:
        raise AudioFileError(
            f"Could not read '{_name(file)}': every sample in it is NaN or infinite, so it "
            "holds no sound; choose another file."
        )

    try:
        if rate != SAMPLE_RATE:
            stereo = resample(stereo, rate)
    except MemoryError as err:
        raise _too_large(file) from err
    except (RuntimeError, ValueError) as err:
        raise AudioFileError(
            f"Could not convert '{_name(file)}' from {rate} Hz to {SAMPLE_RATE} Hz; "
            "convert it to 44.1 kHz in an audio editor and try again."
        ) from err
    if limit is not None and stereo.shape[0] > limit:
        stereo = stereo[:limit]

    # max and -min rather than abs(): no temporary as large as the clip.
    peak = max(float(stereo.max()), -float(stereo.min()))
    if peak > 1.0:
        logger.info("%s peaks at %.4f after conversion; turned down to peak at 1.0", file, peak)
        stereo *= np.float32(1.0 / peak)  # in place: every buffer here is this call's own
        # float32 rounding of peak * (1 / peak) can land one ulp above 1.0.
        np.clip(stereo, -1.0, 1.0, out=stereo)
    return np.ascontiguousarray(stereo, dtype=np.float32)


def _frame_limit(max_seconds: float | None) -> int | None:
    if max_seconds is None:
        return None
    if not math.isfinite(max_seconds) or max_seconds <= 0:
        raise ValueError(f"max_seconds must be a positive number of seconds, got {max_seconds}")
    return max(1, int(round(max_seconds * SAMPLE_RATE)))


def _source_frames(frames: int, rate: int, limit: int | None) -> int:
    """How many frames of a file at `rate` to decode for `limit` output frames (all: None)."""
    if limit is None or frames <= 0 or rate <= 0:
        return max(frames, 0)
    if rate == SAMPLE_RATE:
        return min(frames, limit)
    margin = max(_RESAMPLE_MARGIN_MIN_FRAMES, int(rate * _RESAMPLE_MARGIN_SECONDS))
    return min(frames, -(-limit * rate // SAMPLE_RATE) + margin)


def _read_stereo(handle: sf.SoundFile, frames: int) -> tuple[np.ndarray, int]:
    """The first `frames` frames as float32 stereo (fewer if the file ends early): stereo
    files straight into the result, others folded down one block at a time. Also returns how
    many samples were NaN or infinite (read as silence)."""
    out = np.empty((frames, CHANNELS), dtype=np.float32)
    if handle.channels == CHANNELS:
        got = handle.read(frames, dtype="float32", always_2d=True, out=out)
        return got, _silence_non_finite(got)
    block = np.empty((min(frames, _BLOCK_FRAMES), handle.channels), dtype=np.float32)
    done = bad = 0
    while done < frames:
        size = min(_BLOCK_FRAMES, frames - done)
        got = handle.read(size, dtype="float32", always_2d=True, out=block[:size])
        if got.shape[0] == 0:
            break
        bad += _silence_non_finite(got)
        out[done:done + got.shape[0]] = to_stereo(got)
        done += got.shape[0]
    return out[:done], bad


def _silence_non_finite(data: np.ndarray) -> int:
    """Only float files can hold NaN or infinity: read them as silence (dropouts) rather than
    refuse the file; returns how many there were."""
    finite = np.isfinite(data)
    if finite.all():
        return 0
    data[~finite] = 0.0
    return int(data.size - np.count_nonzero(finite))


def _sf_name(file: Path) -> str | bytes:
    """The path as soundfile should get it: bytes on POSIX, where it would encode a str
    strictly and fail on a name that is not UTF-8; str on Windows (its wide-character API)."""
    return str(file) if os.name == "nt" else os.fsencode(file)


def _name(file: Path) -> str:
    return printable(file.name)


def _check_readable(file: Path) -> None:
    """Turn the common path problems into sentences libsndfile could not give (it only says
    "System error" or "Format not recognised")."""
    try:
        mode = file.stat().st_mode
    except FileNotFoundError:
        raise AudioFileError(
            f"Could not read '{_name(file)}': the file does not exist; "
            "check the name or choose another file."
        ) from None
    except (OSError, ValueError) as err:  # ValueError: a NUL byte in the name
        reason, advice = os_reason(err) if isinstance(err, OSError) else (
            "the name cannot be used", "check the name or choose another file")
        raise AudioFileError(f"Could not read '{_name(file)}': {reason}; {advice}.") from err
    if stat.S_ISDIR(mode):
        raise AudioFileError(
            f"Could not read '{_name(file)}': it is a folder, not an audio file; "
            "choose a file inside it instead."
        )
    if not stat.S_ISREG(mode):  # opening a pipe with no writer would wait forever
        raise AudioFileError(
            f"Could not read '{_name(file)}': it is a pipe, socket or device, not an audio "
            "file; choose a file saved on disk."
        )
    try:
        with file.open("rb") as handle:
            first = handle.read(1)
    except OSError as err:
        reason, advice = os_reason(err)
        raise AudioFileError(f"Could not read '{_name(file)}': {reason}; {advice}.") from err
    if not first:
        raise AudioFileError(
            f"Could not read '{_name(file)}': the file is empty (0 bytes); choose another file."
        )


def _too_large(file: Path) -> AudioFileError:
    return AudioFileError(
        f"Could not read '{_name(file)}': it is too large to load into memory; "
        "trim it in an audio editor or choose a shorter file."
    )


def _unreadable(file: Path, err: BaseException) -> AudioFileError:
    if isinstance(err, MemoryError):
        return _too_large(file)
    return AudioFileError(
        f"Could not read '{_name(file)}' as audio: the file is damaged or not in a format "
        f"libsndfile understands ({READABLE_FORMATS_HINT}); convert it or choose another file."
    )


def _no_audio(file: Path) -> AudioFileError:
    return AudioFileError(
        f"Could not read '{_name(file)}': the file contains no audio (zero frames); "
        "choose another file."
    )
