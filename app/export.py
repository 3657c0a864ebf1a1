"""Writing takes to files: drag-out copies, Save As, the clipboard. No Qt widgets here.

The user's files are only ever replaced by a complete new file (write_audio writes a temporary
file and renames it), and a drag-out file is never replaced at all: projects point at those.
Every failure raises a StudioError whose text is one sentence for the user.
"""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path

import numpy as np

from app.take_names import slug, take_basename, unique_stem
from engines.audio_io import WRITE_FORMATS, write_audio
from engines.errors import AudioFileError
from engines.failures import printable, sentence, shown
from engines.provenance import build_sidecar, sidecar_path, write_json_atomic

__all__ = ["drag_file", "holds_audio", "release_name", "reserve_name", "save_take_as", "slug",
           "take_basename"]

log = logging.getLogger(__name__)

MAX_TRIES = 1000
# A file system that cannot store a name's characters says so in one of these ways.
_NAME_REFUSED = {errno.EILSEQ, errno.EINVAL, errno.ENAMETOOLONG}


# ---------------------------------------------------------------------------- Save As
def save_take_as(take, path: Path, fmt: str) -> Path:
    """Write a take where the user chose (replacing a file there, which the save dialog asked
    about), with its JSON sidecar; returns the audio path.

    The audio goes first: if it fails, the old audio and the old sidecar are both untouched.
    """
    if fmt in WRITE_FORMATS:  # the format chosen in the dialog decides the suffix
        path = path.parent / f"{path.stem}{WRITE_FORMATS[fmt].suffix}"
    sidecar = sidecar_path(path)
    if take.result is not None and sidecar.is_dir():
        raise AudioFileError(f"Could not save '{printable(path.name)}': a folder named "
                             f"'{printable(sidecar.name)}' is where its .json sidecar goes, so "
                             "nothing was changed; rename that folder or choose another name.")
    write_audio(path, take.pcm, fmt)
    _write_sidecar(take, path, fmt)
    return path


def _write_sidecar(take, path: Path, fmt: str) -> None:
    if take.result is None:
        return  # imported or library audio: no generation to describe
    sidecar = sidecar_path(path)
    try:
        write_json_atomic(sidecar, build_sidecar(take.result, path, fmt, take.init_path))
    except (OSError, ValueError) as err:
        raise AudioFileError(sentence(f"Saved '{printable(path.name)}', but its sidecar "
                                      f"{shown(sidecar.name)} could not be written", err)) \
            from err


# ---------------------------------------------------------------------------- drag-out
def drag_file(take, folder: Path) -> Path:
    """The WAV used for drag-out and Copy: one file per take, written once and kept.

    Its name is unique per take (see app.take_names); a file of that name holding other audio
    is never replaced, the next free name (`..-2`) is used instead.
    """
    if take.file_path is not None and holds_audio(take.file_path, take.pcm):
        return take.file_path
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise AudioFileError(sentence(f"Could not create the folder {shown(folder)} for "
                                      "dragged takes", err)) from err
    stem = unique_stem(take.prompt, take.seed, take.library_id, take.pcm)
    try:
        path = _place(take, folder, stem)
    except (UnicodeError, OSError) as err:
        ascii_stem = unique_stem(take.prompt, take.seed, take.library_id, take.pcm,
                                 ascii_only=True)
        refused = isinstance(err, UnicodeError) or err.errno in _NAME_REFUSED
        if ascii_stem == stem or not refused:
            raise AudioFileError(sentence(f"Could not write a file for the take into "
                                          f"{shown(folder)}", err)) from err
        log.info("the file system refused %r; using %r", stem, ascii_stem, exc_info=True)
        path = _place(take, folder, ascii_stem)
    take.file_path = path
    _write_missing_sidecar(take, path)
    return path


def _place(take, folder: Path, stem: str) -> Path:
    """Write the take under `stem` (or `stem-2`, ...), or find it already there."""
    for n in range(1, MAX_TRIES + 1):
        target = folder / (f"{stem}.wav" if n == 1 else f"{stem}-{n}.wav")
        if sidecar_path(target).exists() and not target.exists():
            continue  # a stray sidecar: its name belongs to someone else
        if reserve_name(target):
            try:
                write_audio(target, take.pcm, "wav16")  # atomically replaces our empty file
            except BaseException:
                release_name(target)
                raise
            return target
        if holds_audio(target, take.pcm):
            return target  # this take, dragged before (in this session or an earlier one)
    raise AudioFileError(f"Could not find a free file name for '{printable(stem)}' in "
                         f"{shown(folder)}; move some files out of that folder.")


def reserve_name(target: Path) -> bool:
    """Create `target` empty, only if no file of that name exists; False when one does.
    O_EXCL makes taking the name atomic, so another program's file is never overwritten."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(target, flags, 0o666)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def release_name(target: Path) -> None:
    try:
        if target.stat().st_size == 0:  # still our empty placeholder
            target.unlink()
    except OSError:
        log.warning("could not remove the empty file %s", target, exc_info=True)


def _write_missing_sidecar(take, path: Path) -> None:
    if take.result is not None and not sidecar_path(path).exists():
        _write_sidecar(take, path, "wav16")


def holds_audio(path: Path, pcm: np.ndarray) -> bool:
    """Whether the file at `path` holds exactly these 16-bit samples."""
    import soundfile as sf

    try:
        data, _ = sf.read(os.fsencode(path), dtype="int16", always_2d=True)
    except Exception:  # noqa: BLE001 - missing, a folder, not audio: not this take
        return False
    return data.shape == pcm.shape and np.array_equal(data, pcm)
