"""The one atomic audio writer: every audio file the app makes - a delivered take, a library
take, a drag-out copy - is written here, and nowhere else (tests/test_delivery_structure.py
holds the tree to that).

A file is written beside its target under a hidden temporary name (engines.audio_io.atomic),
with its metadata (INFO title and note, then the RIFF chunks bext, iXML, smpl and cue for WAV,
each of even size so that no reader needs the pad byte, or Vorbis comments for FLAC and Ogg),
read back to check that every frame arrived, synced, and only then moved over the target, so a
failure (full disk, no permission, a crash) leaves any existing file untouched and no temporary
behind. Every failure is one AudioFileError sentence.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

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
from engines.audio_io.formats import FORMATS, checked_format, format_for_path
from engines.constants import SAMPLE_RATE
from engines.delivery import riff
from engines.delivery.samples import DEFAULT_DITHER_SEED, frames_channels, samples_for
from engines.delivery.vorbis_fields import add_vorbis_fields
from engines.error_sentences import reason, sentence, shown
from engines.errors import AudioFileError
from engines.finish.smpl import SMPL_ID, smpl_payload
from engines.paths import APP_NAME  # the one name files and folders carry

logger = logging.getLogger(__name__)

Loop = tuple[int, int]  # (start frame, end frame INCLUSIVE), as in the smpl chunk


@dataclass(frozen=True)
class FileTags:
    """The metadata a file carries. `comment` is the app's short JSON note (INFO ICMT, Vorbis
    COMMENT); `wav_chunks` are whole RIFF chunks (bext, iXML) for WAV; `vorbis` the fields
    for FLAC and Ogg (engines.delivery.vorbis_fields keys, as Python values). Keep title +
    comment under about 2 KB: libsndfile silently drops every WAV INFO string past that
    (engines.delivery.note keeps the note short)."""

    title: str | None = None
    comment: str | None = None
    wav_chunks: tuple[tuple[bytes, bytes], ...] = ()
    vorbis: Mapping[str, object] = field(default_factory=dict)


NO_TAGS = FileTags()


def write_audio(path: str | os.PathLike[str], audio: np.ndarray, fmt: str | None = None,
                samplerate: int = SAMPLE_RATE, *, loop_points: Loop | None = None,
                tags: FileTags = NO_TAGS, dither_seed: int = DEFAULT_DITHER_SEED) -> Path:
    """Write (N, 1|2) int16 or float audio to `path` atomically and return the path. `fmt` is a
    FORMATS key (default: from the suffix)."""
    target = Path(path)
    temp = write_audio_temp(target, audio, fmt, samplerate, loop_points=loop_points, tags=tags,
                            dither_seed=dither_seed)
    try:
        os.replace(temp, target)
    except OSError as err:
        remove_quietly(temp)
        raise AudioFileError(sentence(f"Could not save {shown(target.name)}", err,
                                      "nothing was changed; check the folder and try again")
                             ) from err
    finally:
        release(temp)
    logger.info("Saved %s (%s, %d Hz)", target, fmt, samplerate)
    return target


def write_audio_temp(path: str | os.PathLike[str], audio: np.ndarray, fmt: str | None = None,
                     samplerate: int = SAMPLE_RATE, *, loop_points: Loop | None = None,
                     tags: FileTags = NO_TAGS,
                     dither_seed: int = DEFAULT_DITHER_SEED) -> Path:
    """The first half of `write_audio`: a complete, synced and checked temporary beside `path`
    with the permissions the target has (or the umask gives), for callers that move several
    files into place together. They os.replace it (then `atomic.release` it) or
    `atomic.remove_quietly` it. Every failure is one AudioFileError sentence, nothing left."""
    target = Path(path)
    what = f"Could not save {shown(target.name)}"
    spec = checked_format(target, fmt if fmt is not None else format_for_path(target))
    if samplerate <= 0:
        raise ValueError(f"samplerate must be positive, got {samplerate}")
    audio = frames_channels(audio)
    if loop_points is not None:
        start, end = loop_points
        if not 0 <= start <= end < audio.shape[0]:
            raise AudioFileError(f"{what}: the loop {start}..{end} lies outside its "
                                 f"{audio.shape[0]} frames; give frames from 0 to "
                                 f"{audio.shape[0] - 1}.")
    _check_target(target, what)
    data = samples_for(spec.subtype, audio, dither_seed)
    remove_stale_temps(target)
    try:
        temp = create_temp_beside(target, spec.suffix)
    except OSError as err:
        raise AudioFileError(sentence(what, err)) from err
    try:
        _write_samples(temp, data, samplerate, spec.format, spec.subtype, tags)
        _add_metadata(temp, spec.format, tags, loop_points)
        # libsndfile does not always report a short write (the Vorbis encoder can swallow
        # one): a file that came out short means the disk filled up.
        if sf.info(os.fsencode(temp)).frames != data.shape[0]:
            raise OSError(errno.ENOSPC, "No space left on device")
        fsync_file(temp)
        copy_mode_from(target, temp)
    except BaseException as err:
        remove_quietly(temp)
        if isinstance(err, AudioFileError):
            raise
        if isinstance(err, Exception):
            raise _write_failed(target, err, data.nbytes) from err
        raise  # KeyboardInterrupt and friends: cleaned up, but not ours to reword
    return temp


def write_into(path: Path, audio: np.ndarray, container: str, subtype: str, samplerate: int,
               tags: FileTags, encode: Callable[[np.ndarray], np.ndarray] | None = None,
               block_frames: int = 1 << 16) -> None:
    """Fill `path` (a temporary its caller created and will move) with `audio`, each block
    passed through `encode` (the samples to store, block by block so a long take needs no
    full-size copy), and `tags`; then check the frames and sync. The library keeps its takes
    this way (engines.store.placement), where the bytes must be exactly the samples it hashed."""
    with sf.SoundFile(_sf_name(path), "w", samplerate, audio.shape[1], subtype,
                      format=container) as handle:
        _set_info(handle, tags)
        for start in range(0, audio.shape[0], block_frames):
            block = audio[start:start + block_frames]
            handle.write(encode(block) if encode is not None else block)
    written = sf.info(_sf_name(path)).frames
    if written != audio.shape[0]:
        raise OSError(errno.ENOSPC, f"{path} holds {written} of {audio.shape[0]} frames")
    fsync_file(path)


def _check_target(target: Path, what: str) -> None:
    if not target.parent.is_dir():
        raise AudioFileError(f"{what}: the folder {shown(target.parent)} does not exist; "
                             "choose an existing folder.")
    if target.is_dir():
        raise AudioFileError(f"{what}: a folder with that name is in the way, so nothing was "
                             "changed; choose another file name.")
    if target.exists() and not target.is_file():  # a device, FIFO or socket is not replaced
        raise AudioFileError(f"{what}: it is a device or special file, not an audio file, so "
                             "nothing was changed; choose a file name.")


def _sf_name(path: Path) -> str | bytes:
    # bytes on POSIX: soundfile encodes a str strictly, and a name may hold non-UTF-8 bytes.
    return os.fspath(path) if os.name == "nt" else os.fsencode(path)


def _set_info(handle: sf.SoundFile, tags: FileTags) -> None:
    # Before the first write: FLAC and Ogg write their comments with the stream header.
    if tags.title:
        handle.title = tags.title
    if tags.comment:
        handle.comment = tags.comment
    handle.software = APP_NAME


def _write_samples(temp: Path, data: np.ndarray, rate: int, container: str, subtype: str,
                   tags: FileTags) -> None:
    with sf.SoundFile(_sf_name(temp), "w", rate, data.shape[1], subtype,
                      format=container) as handle:
        _set_info(handle, tags)
        handle.write(data)


def _add_metadata(temp: Path, container: str, tags: FileTags, loop: Loop | None) -> None:
    """The chunks and comments libsndfile does not write: bext, iXML, smpl and cue in a WAV;
    loop tags and the extra comments in FLAC and Ogg (in one rewrite)."""
    if container == "WAV":
        chunks = list(tags.wav_chunks)
        if loop is not None:
            rate = sf.info(_sf_name(temp)).samplerate
            chunks += [(SMPL_ID, smpl_payload([loop], rate)),
                       (b"cue ", riff.cue_payload([loop[0]]))]
        if chunks:
            # Every body even, filled out inside its chunk: no reader may depend on the pad
            # byte (Godot 3's importer does not skip it, see engines.delivery.riff).
            chunks = [(chunk_id, riff.padded_inside(chunk_id, payload))
                      for chunk_id, payload in chunks]
            riff.set_wav_chunks(temp, chunks)  # looked up at call time: a test fills the disk there
        return
    fields = dict(tags.vorbis)
    if loop is not None:
        fields.update(loop_start=loop[0], loop_length=loop[1] - loop[0] + 1)
    if fields:
        add_vorbis_fields(temp, fields)


def _write_failed(target: Path, err: BaseException, expected_bytes: int) -> AudioFileError:
    what = f"Could not save {shown(target.name)}"
    if isinstance(err, sf.LibsndfileError):
        # libsndfile reports OS failures as "System error" (or, for FLAC, as an encoder that
        # failed to start); free space tells the likely one.
        if _disk_looks_full(target.parent, expected_bytes):
            err = OSError(errno.ENOSPC, "No space left on device")
        else:
            return AudioFileError(f"{what}: the audio library reported "
                                  f"'{err.error_string.rstrip('.')}', so nothing was changed; "
                                  "check the folder and try again.")
    return AudioFileError(_with_nothing_changed(what, err))


def _with_nothing_changed(what: str, err: BaseException) -> str:
    happened, todo = reason(err)
    return f"{what}: {happened}, so nothing was changed; {todo}."


def _disk_looks_full(folder: Path, expected_bytes: int) -> bool:
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return False
    return free < max(expected_bytes, 1 << 20)


__all__ = ["APP_NAME", "FORMATS", "FileTags", "NO_TAGS", "write_audio", "write_audio_temp",
           "write_into"]
