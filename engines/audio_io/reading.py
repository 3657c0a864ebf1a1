"""Reading audio files: any format libsndfile reads, as float32 stereo at SAMPLE_RATE, and every
way a file can be wrong as one AudioFileError sentence.

Reading follows libsndfile's scaling: an N-bit sample is divided by 2**(N-1), so even a foreign
file's most negative code stays inside [-1, 1].
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from engines.audio_io.convert import resample, to_stereo
from engines.audio_io.os_errors import os_reason
from engines.constants import SAMPLE_RATE
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
)


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
        info = sf.info(str(file))
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


def read_audio(path: str | os.PathLike[str]) -> np.ndarray:
    """Any file libsndfile reads, as float32 C-contiguous (N, 2) at SAMPLE_RATE.

    Mono is duplicated to both sides, more channels are folded down (see
    `convert.downmix_matrix`), and other rates are resampled with soxr at very high quality to
    exactly round(N * SAMPLE_RATE / rate) frames. If resampling overshoot or an over-full-scale
    float file would put a peak above 1.0, the whole clip is turned down to peak at 1.0 rather
    than clipped, so the sound is kept and the engines and playback always see [-1, 1].
    """
    file = Path(path)
    _check_readable(file)
    try:
        data, rate = sf.read(str(file), dtype="float32", always_2d=True)
    except _DECODE_ERRORS as err:
        raise _unreadable(file, err) from err
    if data.shape[0] == 0:
        raise _no_audio(file)

    if not np.all(np.isfinite(data)):
        # Only float files can hold these; treat them as dropouts rather than refuse the file.
        logger.warning("%s holds NaN or infinite samples; they are read as silence", file)
        np.nan_to_num(data, copy=False, nan=0.0, posinf=0.0, neginf=0.0)

    try:
        stereo = to_stereo(data)
        del data
        if rate != SAMPLE_RATE:
            stereo = resample(stereo, int(rate))
    except MemoryError as err:
        raise AudioFileError(
            f"Could not read '{file.name}': it is too large to load into memory; "
            "trim it in an audio editor or choose a shorter file."
        ) from err
    except (RuntimeError, ValueError) as err:
        raise AudioFileError(
            f"Could not convert '{file.name}' from {rate} Hz to {SAMPLE_RATE} Hz; "
            "convert it to 44.1 kHz in an audio editor and try again."
        ) from err

    peak = float(np.max(np.abs(stereo)))
    if peak > 1.0:
        logger.info("%s peaks at %.4f after conversion; turned down to peak at 1.0", file, peak)
        stereo *= np.float32(1.0 / peak)
        # float32 rounding of peak * (1 / peak) can land one ulp above 1.0.
        np.clip(stereo, -1.0, 1.0, out=stereo)
    return np.ascontiguousarray(stereo, dtype=np.float32)


def _check_readable(file: Path) -> None:
    """Turn the common path problems into sentences libsndfile could not give (it only says
    "System error" or "Format not recognised")."""
    if not file.exists():
        raise AudioFileError(
            f"Could not read '{file.name}': the file does not exist; "
            "check the name or choose another file."
        )
    if file.is_dir():
        raise AudioFileError(
            f"Could not read '{file.name}': it is a folder, not an audio file; "
            "choose a file inside it instead."
        )
    try:
        with file.open("rb") as handle:
            first = handle.read(1)
    except OSError as err:
        reason, advice = os_reason(err)
        raise AudioFileError(f"Could not read '{file.name}': {reason}; {advice}.") from err
    if not first:
        raise AudioFileError(
            f"Could not read '{file.name}': the file is empty (0 bytes); choose another file."
        )


def _unreadable(file: Path, err: BaseException) -> AudioFileError:
    if isinstance(err, MemoryError):
        return AudioFileError(
            f"Could not read '{file.name}': it is too large to load into memory; "
            "trim it in an audio editor or choose a shorter file."
        )
    return AudioFileError(
        f"Could not read '{file.name}' as audio: the file is damaged or not in a format "
        f"libsndfile understands ({READABLE_FORMATS_HINT}); convert it or choose another file."
    )


def _no_audio(file: Path) -> AudioFileError:
    return AudioFileError(
        f"Could not read '{file.name}': the file contains no audio (zero frames); "
        "choose another file."
    )
