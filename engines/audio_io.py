"""Reading and writing audio files, and the PCM conversions around them.

Everything the engines consume or produce is float32 stereo at SAMPLE_RATE, shape (N, 2). Files
in any format libsndfile reads are brought to that shape here (downmix, resample), and finished
clips are written atomically, so a failed export never leaves a half-written file or damages the
one it was meant to replace. Every failure becomes an AudioFileError with one sentence for the
user; soundfile and soxr exceptions never escape, they are chained as the cause.

Scaling conventions (one place, so the rest of the app never has to think about them):
- In memory, 16-bit PCM is symmetric: full scale is +-PCM_CLAMP (32767), never -32768, the same
  as the decoder contract. `pcm16_from_float` and `float_from_pcm16` use 32767 and invert each
  other exactly.
- Writing floats to N-bit PCM uses the same symmetric rule: +-(2**(N-1) - 1).
- Reading follows libsndfile: an N-bit sample is divided by 2**(N-1), so even a foreign file's
  most negative code (-32768) stays inside [-1, 1]. A file we wrote therefore reads back 32767/32768
  (-0.0003 dB) quieter than the floats that went in, which nobody can hear.
"""

from __future__ import annotations

import errno
import logging
import os
import secrets
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

import numpy as np
import soundfile as sf
import soxr

from engines.constants import CHANNELS, PCM_CLAMP, SAMPLE_RATE
from engines.errors import AudioFileError

logger = logging.getLogger(__name__)

PCM24_CLAMP = 2**23 - 1
RESAMPLE_QUALITY = "VHQ"
READABLE_FORMATS_HINT = "WAV, FLAC, OGG, AIFF"

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

# Errors soundfile/libsndfile and soxr raise for bad input; MemoryError covers a file (or a
# corrupt header claiming one) too large to load.
_DECODE_ERRORS: tuple[type[BaseException], ...] = (
    sf.SoundFileError,
    RuntimeError,
    TypeError,
    ValueError,
    MemoryError,
)


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


@dataclass(frozen=True, slots=True)
class AudioInfo:
    """What a file holds, read from its header without decoding the audio."""

    frames: int
    samplerate: int
    channels: int
    duration_seconds: float
    format: str
    subtype: str


# ---------------------------------------------------------------------------------------------
# PCM conversions


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


# ---------------------------------------------------------------------------------------------
# Reading


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

    Mono is duplicated to both sides, more channels are folded down (see `_downmix_matrix`), and
    other rates are resampled with soxr at very high quality to exactly
    round(N * SAMPLE_RATE / rate) frames. If resampling overshoot or an over-full-scale float
    file would put a peak above 1.0, the whole clip is turned down to peak at 1.0 rather than
    clipped, so the sound is kept and the engines and playback always see [-1, 1].
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
        stereo = _to_stereo(data)
        del data
        if rate != SAMPLE_RATE:
            stereo = _resample(stereo, int(rate))
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
        reason, advice = _os_reason(err)
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


def _downmix_matrix(channels: int) -> np.ndarray:
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


def _to_stereo(data: np.ndarray) -> np.ndarray:
    channels = data.shape[1]
    if channels == 2:
        return data
    if channels == 1:
        return np.repeat(data, 2, axis=1)
    logger.info("Folding %d channels down to stereo", channels)
    return data @ _downmix_matrix(channels).astype(np.float32)


def _resample(stereo: np.ndarray, rate: int) -> np.ndarray:
    """Resample to SAMPLE_RATE with a length fixed by arithmetic, not by the resampler's own
    rounding, so callers can predict it: round(N * SAMPLE_RATE / rate), at least one frame."""
    frames = stereo.shape[0]
    target = max(1, (frames * SAMPLE_RATE + rate // 2) // rate)
    logger.info("Resampling %d frames from %d Hz to %d Hz", frames, rate, SAMPLE_RATE)
    resampled = soxr.resample(stereo, rate, SAMPLE_RATE, quality=RESAMPLE_QUALITY)
    if resampled.shape[0] != target:
        resampled = fit_length(resampled, target)
    return np.ascontiguousarray(resampled, dtype=np.float32)


# ---------------------------------------------------------------------------------------------
# Writing


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
    if fmt is None:
        fmt = format_for_path(target)
    spec = _write_format(target, fmt)
    data = _encode_for(spec, audio)
    if samplerate <= 0:
        raise ValueError(f"samplerate must be positive, got {samplerate}")

    folder = target.parent
    if not folder.is_dir():
        raise AudioFileError(
            f"Could not save '{target.name}': the folder '{folder}' does not exist; "
            "choose an existing folder."
        )

    try:
        temp = _create_temp_beside(target, spec.suffix)
    except OSError as err:
        raise _write_failed(target, err) from err
    try:
        sf.write(str(temp), data, samplerate, format=spec.format, subtype=spec.subtype)
        _verify_written(temp, data.shape[0])
        _fsync(temp)
        _copy_mode_from(target, temp)
        os.replace(temp, target)
    except BaseException as err:
        _remove_quietly(temp)
        if isinstance(err, Exception):
            raise _write_failed(target, err, expected_bytes=data.nbytes) from err
        raise  # KeyboardInterrupt and friends: cleaned up, but not ours to reword
    logger.info("Saved %s (%s, %d frames)", target, fmt, data.shape[0])
    return target


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


def _create_temp_beside(target: Path, suffix: str) -> Path:
    """A new, hidden, empty file in the target's folder (same filesystem, so os.replace is
    atomic). Not tempfile.mkstemp: that creates mode 0600, which the finished file would keep;
    O_CREAT with 0o666 lets the user's umask decide, as for any other new file."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        temp = target.with_name(f".{target.stem}.{secrets.token_hex(4)}.partial{suffix}")
        try:
            fd = os.open(temp, flags, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return temp
    raise FileExistsError(errno.EEXIST, "could not find a free temporary name", str(target))


def _verify_written(temp: Path, frames: int) -> None:
    """libsndfile does not always report a short write (the Vorbis encoder can swallow one), so
    read the header back before the file replaces anything."""
    written = sf.info(str(temp)).frames
    if written != frames:
        raise _IncompleteWrite(f"{temp} holds {written} of {frames} frames")


def _fsync(temp: Path) -> None:
    # Without this a power cut right after os.replace can leave an empty target on some
    # filesystems; O_RDWR because Windows refuses to flush a read-only handle.
    fd = os.open(temp, os.O_RDWR | getattr(os, "O_BINARY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _copy_mode_from(target: Path, temp: Path) -> None:
    """Replacing a file should not change who may read it."""
    try:
        shutil.copymode(target, temp)
    except OSError:
        pass  # no existing target (the usual case), or a filesystem without modes


def _remove_quietly(temp: Path) -> None:
    try:
        temp.unlink(missing_ok=True)
    except OSError:
        logger.warning("Could not remove the temporary file %s", temp, exc_info=True)


class _IncompleteWrite(Exception):
    """The file on disk holds fewer frames than were handed to libsndfile."""


def _write_failed(
    target: Path, err: BaseException, expected_bytes: int | None = None
) -> AudioFileError:
    advice = "check the folder and try again"
    if isinstance(err, OSError):
        reason, advice = _os_reason(err)
    elif isinstance(err, _IncompleteWrite) or (
        isinstance(err, sf.LibsndfileError)
        and err.code == 2
        and _disk_looks_full(target.parent, expected_bytes)
    ):
        # libsndfile reports every OS failure as "System error"; free space tells the likely one.
        reason, advice = _os_reason(OSError(errno.ENOSPC, "No space left on device"))
    elif isinstance(err, sf.LibsndfileError):
        reason = f"the audio library reported '{err.error_string.rstrip('.')}'"
    else:
        reason = f"{type(err).__name__}: {err}".rstrip(".") if str(err) else type(err).__name__
    return AudioFileError(
        f"Could not save '{target.name}': {reason}, so nothing was changed; {advice}."
    )


def _disk_looks_full(folder: Path, expected_bytes: int | None) -> bool:
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return False
    return free < max(expected_bytes or 0, 1 << 20)


def _os_reason(err: OSError) -> tuple[str, str]:
    """What went wrong and what the user can do about it, for the errors people actually meet."""
    denied = (
        "permission was denied",
        "choose a folder you may write to, or close programs using the file",
    )
    reasons = {
        errno.ENOSPC: ("the disk is full", "free some space or choose another drive"),
        errno.EACCES: denied,
        errno.EPERM: denied,
        errno.EROFS: ("the drive is read-only", "choose a folder on another drive"),
        errno.ENOENT: ("the file or folder does not exist", "check the path and try again"),
        errno.EISDIR: ("a folder with that name already exists", "choose another file name"),
        errno.EIO: ("the drive reported an input/output error", "check the drive and try again"),
    }
    if hasattr(errno, "EDQUOT"):
        reasons[errno.EDQUOT] = ("your disk quota is used up", "free some space and try again")
    if err.errno in reasons:
        return reasons[err.errno]
    text = (err.strerror or str(err) or type(err).__name__).rstrip(".")
    return text[:1].lower() + text[1:], "check the folder and try again"
