"""File chores of an atomic save: a temporary file beside the target, synced to disk, given the
target's permissions, and removed again if the save fails; and the clean-up of temporaries a
killed process left behind.

A temporary is named `.<target name>.<random>.partial<suffix>` and, on POSIX, holds an flock
for as long as its writer lives. The next save of the same target removes the temporaries whose
lock it can take: their writer is gone (killed, crashed), never one still writing.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import secrets
import shutil
import time
from pathlib import Path

logger = logging.getLogger(__name__)

TEMP_MARK = ".partial"
NAME_MAX_BYTES = 255
STALE_WITHOUT_LOCKS_S = 3600.0  # where flock does not exist: an hour-old temporary is stale

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

_held: dict[str, int] = {}  # temporary path -> the descriptor holding its lock (-1: no lock)


def _temp_prefix(target: Path) -> str:
    """`.<target name>.`, cut so that prefix + random + suffix stays within NAME_MAX."""
    name = target.name
    budget = NAME_MAX_BYTES - 40  # room for the dot, the random part and the suffix
    while len(os.fsencode(name)) > budget:
        name = name[:-1]
    return f".{name}."


def create_temp_beside(target: Path, suffix: str) -> Path:
    """A new, hidden, empty file in the target's folder (same filesystem, so os.replace is
    atomic), locked until `release`. Not tempfile.mkstemp: that creates mode 0600, which the
    finished file would keep; O_CREAT with 0o666 lets the user's umask decide."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    prefix = _temp_prefix(target)
    for _ in range(100):
        temp = target.with_name(f"{prefix}{secrets.token_hex(4)}{TEMP_MARK}{suffix}")
        try:
            fd = os.open(temp, flags, 0o666)
        except FileExistsError:
            continue
        if fcntl is None:
            # Windows: no flock to hold, and an open handle would make the os.replace that
            # moves the temporary into place fail (sharing violation); the age rule covers it.
            os.close(fd)
            fd = -1
        else:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                pass  # a filesystem without locks: the age rule covers it
        _held[str(temp)] = fd
        return temp
    raise FileExistsError(errno.EEXIST, "could not find a free temporary name", str(target))


def release(temp: Path) -> None:
    """Let go of a temporary's lock (after it was moved into place or removed)."""
    fd = _held.pop(str(temp), None)
    if fd is not None and fd >= 0:
        try:
            os.close(fd)
        except OSError:
            pass


def remove_stale_temps(target: Path) -> int:
    """Remove temporaries of `target` whose writer is gone; returns how many. Never raises."""
    pattern = _stale_pattern(target)
    removed = 0
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return 0
    for entry in entries:
        if not pattern.match(entry.name):
            continue
        if entry.path in _held or not _is_abandoned(entry):
            continue
        try:
            os.unlink(entry.path)
        except OSError:
            logger.warning("Could not remove the stale temporary file %s", entry.path,
                           exc_info=True)
            continue
        removed += 1
        logger.info("Removed %s, left by a save that did not finish", entry.path)
    return removed


def _stale_pattern(target: Path) -> re.Pattern[str]:
    """Names a save of `target` uses for its temporary: today's `.<name>.<hex>.partial<sfx>`
    and the `.<stem>.<random>.partial<sfx>` earlier versions of the app left behind."""
    own = re.escape(_temp_prefix(target))
    stem = re.escape(f".{target.stem}.")
    return re.compile(rf"^(?:{own}|{stem})[A-Za-z0-9_]{{6,16}}{re.escape(TEMP_MARK)}"
                      rf"(?:\.[A-Za-z0-9]+)?$")


def _is_abandoned(entry: os.DirEntry) -> bool:
    try:
        if not entry.is_file(follow_symlinks=False):
            return False
        if fcntl is None:
            return time.time() - entry.stat().st_mtime > STALE_WITHOUT_LOCKS_S
        fd = os.open(entry.path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # its writer still holds it
    finally:
        os.close(fd)
    return True


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
    release(temp)
    try:
        temp.unlink(missing_ok=True)
    except OSError:
        logger.warning("Could not remove the temporary file %s", temp, exc_info=True)
