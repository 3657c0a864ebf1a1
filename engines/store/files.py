"""File chores of the library: hashing, atomic copies, directory syncs, checked audio arrays."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
from pathlib import Path

import numpy as np

from engines.constants import CHANNELS
from engines.store.records import LibraryError

_HASH_CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    """The file's SHA-256, read in 1 MiB chunks (engine files can be gigabytes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def content_sha256(audio: np.ndarray) -> str:
    """Hash of the samples as stored, to recognise a copy of a take wherever it ends up."""
    return hashlib.sha256(np.ascontiguousarray(audio).tobytes()).hexdigest()


def slug(text: str, limit: int = 40) -> str:
    """A file-name-safe version of a prompt or name: lower case words joined by hyphens."""
    words = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return words[:limit].rstrip("-") or "take"


def as_stereo(audio: np.ndarray, what: str) -> np.ndarray:
    """(N, 2) int16 or float32, C-contiguous; mono is doubled; anything else is refused."""
    audio = np.asarray(audio)
    if audio.ndim == 1:
        audio = np.stack([audio, audio], axis=1)
    if audio.ndim != 2 or audio.shape[1] != CHANNELS or audio.shape[0] == 0:
        raise LibraryError(f"{what} has shape {audio.shape}; the library keeps stereo audio "
                           "shaped (N, 2) with N > 0.")
    if audio.dtype == np.int16:
        return np.ascontiguousarray(audio)
    if np.issubdtype(audio.dtype, np.floating):
        return np.ascontiguousarray(audio, dtype=np.float32)
    raise LibraryError(f"{what} has dtype {audio.dtype}; the library keeps int16 or float audio.")


def fsync_dir(folder: Path) -> None:
    if os.name != "posix":
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def copy_atomic(source: Path, target: Path) -> Path:
    """Copy `source` to `target` through a temporary name beside it, so `target` is either the
    old file or the whole new one."""
    temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.partial")
    try:
        shutil.copyfile(source, temp)
        os.replace(temp, target)
    except BaseException:
        try:
            temp.unlink(missing_ok=True)
        except OSError:
            pass  # the original error is the one to report
        raise
    return target
