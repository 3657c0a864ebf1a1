"""The operating-system errors people actually meet with audio files, as words for the user."""

from __future__ import annotations

import errno


def os_reason(err: OSError) -> tuple[str, str]:
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
