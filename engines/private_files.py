"""Files and folders for the user alone: the settings (they may hold the team's publisher line,
a password), the team's logins, the logs. Written 0600 from the moment they exist, and an older
release's copy that others could read made private when it is next met."""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path

log = logging.getLogger(__name__)

PRIVATE_FILE_MODE = 0o600
PRIVATE_FOLDER_MODE = 0o700


def make_private(path: Path, mode: int) -> None:
    """`path` (if ours) without rights for group and others, as `mode`; never raises (a
    file system without modes, or another user's file, is left as it is)."""
    try:
        info = path.stat()
        if info.st_mode & 0o077 and info.st_uid == os.geteuid():
            path.chmod(mode)
    except (OSError, AttributeError):  # AttributeError: no geteuid (Windows has no modes)
        log.info("could not make %s private", path, exc_info=True)


def write_private_text(path: Path, text: str) -> None:
    """Replace `path` with a complete file holding `text`, 0600 from the moment it exists (no
    other user of this computer may ever read it): a new temporary beside it of a name of its
    own (never a leftover's, whose mode O_CREAT would keep; never another writer's), synced,
    then renamed over it. Raises OSError; the temporary is gone then."""
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.partial")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        try:
            temp.unlink(missing_ok=True)
        except OSError:
            log.warning("could not remove %s", temp, exc_info=True)
        raise
