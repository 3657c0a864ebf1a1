"""The one place that turns failures from the OS, libsndfile, SQLite, HTTP and text decoding
into words for the user: what happened, and what to do about it.

Every message a user reads is built as `sentence(what, err)`, e.g.
"Could not write 'clip.wav': the disk is full; free some space or choose another drive."
Nothing here raises: these run inside error handlers, and an error handler that raises turns a
clear sentence into a traceback.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

from engines.errors import StudioError
from engines.text_display import terminal_text

Reason = tuple[str, str]
"""(what happened, what to do): lower case, no final full stop."""

_DENIED: Reason = ("permission was denied",
                   "choose a folder you may write to, or close programs using the file")

_OS_REASONS: dict[int, Reason] = {
    errno.ENOSPC: ("the disk is full", "free some space or choose another drive"),
    errno.EACCES: _DENIED,
    errno.EPERM: ("the file or folder is protected (permission denied or immutable)",
                  "choose another place, or lift the protection"),
    errno.EROFS: ("the drive is read-only", "choose a folder on a writable drive"),
    errno.ENOENT: ("the file or folder does not exist", "check the path and try again"),
    errno.EISDIR: ("a folder with that name is in the way", "choose another file name"),
    errno.ENOTDIR: ("a file stands where a folder is needed", "check the path and try again"),
    errno.EEXIST: ("a file with that name is in the way", "choose another name or move it"),
    errno.ENAMETOOLONG: ("the name is too long for the file system",
                         "choose a shorter name"),
    errno.EIO: ("the drive reported an input/output error", "check the drive and try again"),
    errno.EMFILE: ("too many files are open", "close some programs and try again"),
    errno.ENOTEMPTY: ("the folder is not empty", "choose an empty folder"),
    errno.EXDEV: ("the move crosses drives", "choose a folder on the same drive"),
    errno.ELOOP: ("the path has a symbolic link loop", "check the path and try again"),
    errno.ETXTBSY: ("the file is in use", "close programs using it and try again"),
}
if hasattr(errno, "EDQUOT"):
    _OS_REASONS[errno.EDQUOT] = ("your disk quota is used up", "free some space and try again")
if hasattr(errno, "EFBIG"):
    _OS_REASONS[errno.EFBIG] = ("the file is too large for this file system",
                                "choose another drive")

# SQLite's primary result codes (sqlite3.Error.sqlite_errorcode & 0xFF).
_SQLITE_REASONS: dict[int, Reason] = {
    3: ("access to the library database was denied", "check the permissions of its folder"),
    5: ("the library database is busy", "wait for the other copy of SA3 Studio, then retry"),
    6: ("the library database is locked", "wait for the other copy of SA3 Studio, then retry"),
    7: ("the computer ran out of memory", "close other programs and try again"),
    8: ("the library is on a read-only drive or folder",
        "copy it to a writable place or point SA3_STUDIO_HOME there"),
    10: ("the drive reported an input/output error", "check the drive and try again"),
    11: ("the library database is damaged", "restart SA3 Studio to repair it"),
    13: ("the disk is full", "free some space and try again"),
    14: ("the library database cannot be opened", "check the folder and its permissions"),
    23: ("access to the library database was denied", "check the permissions of its folder"),
    26: ("the library database file is not a database", "restart SA3 Studio to repair it"),
}


def os_reason(err: OSError) -> Reason:
    """An OSError as (what happened, what to do)."""
    if err.errno in _OS_REASONS:
        return _OS_REASONS[err.errno]
    if isinstance(err, TimeoutError):
        return "the operation timed out", "check the connection and try again"
    if isinstance(err, ConnectionError):
        return "the connection failed", "check the network and try again"
    text = (err.strerror or str(err) or type(err).__name__).rstrip(".")
    return text[:1].lower() + text[1:], "check the folder and try again"


def reason(err: BaseException) -> Reason:
    """Any failure as (what happened, what to do); never raises."""
    try:
        return _reason(err)
    except Exception:  # a handler must never raise: fall back to the type's name
        return f"an unexpected {type(err).__name__} occurred", "try again"


def _reason(err: BaseException) -> Reason:
    if isinstance(err, StudioError):
        text = str(err).rstrip(".")
        return text[:1].lower() + text[1:], "see above"
    if isinstance(err, OSError):
        return os_reason(err)
    if isinstance(err, sqlite3.Error):
        code = getattr(err, "sqlite_errorcode", None)
        if code is not None and code & 0xFF in _SQLITE_REASONS:
            return _SQLITE_REASONS[code & 0xFF]
        text = str(err).lower()
        if "disk is full" in text:
            return _SQLITE_REASONS[13]
        if "readonly" in text or "read-only" in text:
            return _SQLITE_REASONS[8]
        if "locked" in text or "busy" in text:
            return _SQLITE_REASONS[5]
        if "malformed" in text or "not a database" in text:
            return _SQLITE_REASONS[11]
        return f"the library database failed ({text})", "restart SA3 Studio and try again"
    if isinstance(err, MemoryError):
        return "the computer ran out of memory", "close other programs or use a shorter clip"
    if isinstance(err, UnicodeError):
        return ("the data is not valid text (it holds bytes that are not UTF-8)",
                "check that it is the right file or server")
    if isinstance(err, OverflowError):
        return "a number is too large", "use a smaller number"
    if _is_libsndfile(err):
        return _libsndfile_reason(err)
    if _is_http(err):
        return _http_reason(err)
    text = str(err).strip().rstrip(".") or type(err).__name__
    return f"{text[:1].lower()}{text[1:]}", "try again"


def _is_libsndfile(err: BaseException) -> bool:
    module = type(err).__module__ or ""
    return module.startswith("soundfile") or type(err).__name__ == "LibsndfileError"


def _libsndfile_reason(err: BaseException) -> Reason:
    # libsndfile loses errno: its write errors all read "System error". The usual causes are
    # a full disk or a file that went away; say so rather than echo the library's words.
    text = str(getattr(err, "error_string", "") or err).strip().rstrip(".")
    if "system error" in text.lower() or "unspecified internal" in text.lower():
        return ("the file system refused the write (usually a full disk)",
                "free some space or choose another drive")
    if "format" in text.lower():
        return "the file is not in a format libsndfile understands", "convert it or choose another"
    return f"libsndfile said: {text[:1].lower()}{text[1:]}", "choose another file or place"


def _is_http(err: BaseException) -> bool:
    for cls in type(err).__mro__:
        module = cls.__module__ or ""
        if module.split(".")[0] in ("httpx", "httpx2", "httpcore", "requests", "urllib3",
                                    "huggingface_hub", "h11", "http"):
            return True
    return False


def _http_reason(err: BaseException) -> Reason:
    name = type(err).__name__
    if "Timeout" in name:
        return "the server did not answer in time", "check the connection and try again"
    if "Connect" in name:
        return "the server could not be reached", "check the network and HF_ENDPOINT"
    if "Protocol" in name or "Decoding" in name or "RemoteProtocol" in name:
        return ("the server answered with something that is not valid HTTP",
                "check HF_ENDPOINT points at a Hugging Face hub")
    response = getattr(err, "response", None)
    status = getattr(response, "status_code", None)
    if status:
        return f"the server answered HTTP {status}", "try again later"
    return "the network request failed", "check the network and try again"


def sentence(what: str, err: BaseException, advice: str | None = None) -> str:
    """`what` (e.g. "Could not write 'clip.wav'") with the reason and advice, as one
    sentence ending in a full stop."""
    happened, todo = reason(err)
    return f"{what}: {happened}; {advice or todo}."


# --------------------------------------------------------------------------------------------
# Text that goes to a terminal

def printable(text: object) -> str:
    """Text safe to print on a terminal: control characters (ESC, BEL, NUL, CR, ...),
    bidirectional and zero-width characters escaped (engines.text_display.terminal_text) so a
    prompt can never rewrite the user's screen or turn a line around, and bytes that are not
    UTF-8 (a file name or argument the OS gave us as surrogate escapes) shown as \\xff."""
    value = terminal_text(text)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        try:  # bytes the OS handed over as surrogate escapes: show them as the bytes they were
            value = value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # any other lone surrogate (from JSON, say): escape it
            value = value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def path_text(path: str | os.PathLike[str]) -> str:
    """A path as text any UTF-8 writer (JSON, SQLite, a log) accepts: bytes that are not UTF-8
    become \\xff; everything else is kept as it is."""
    try:
        return os.fsdecode(path).encode("utf-8", "surrogateescape").decode("utf-8",
                                                                          "backslashreplace")
    except (UnicodeError, TypeError, ValueError):
        return printable(path)


def shown(path: str | os.PathLike[str]) -> str:
    """A path quoted for a message: printable and in single quotes."""
    return f"'{printable(Path(path))}'"
