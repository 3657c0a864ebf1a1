"""File chores of an atomic save: a temporary file beside the target, synced to disk, given the
target's permissions, and removed again if the save fails."""

from __future__ import annotations

import errno
import logging
import os
import secrets
import shutil
from pathlib import Path

logger = logging.getLogger(__name__)


def create_temp_beside(target: Path, suffix: str) -> Path:
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


def fsync_file(temp: Path) -> None:
    # Without this a power cut right after os.replace can leave an empty target on some
    # filesystems; O_RDWR because Windows refuses to flush a read-only handle.
    fd = os.open(temp, os.O_RDWR | getattr(os, "O_BINARY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def copy_mode_from(target: Path, temp: Path) -> None:
    """Replacing a file should not change who may read it."""
    try:
        shutil.copymode(target, temp)
    except OSError:
        pass  # no existing target (the usual case), or a filesystem without modes


def remove_quietly(temp: Path) -> None:
    try:
        temp.unlink(missing_ok=True)
    except OSError:
        logger.warning("Could not remove the temporary file %s", temp, exc_info=True)
