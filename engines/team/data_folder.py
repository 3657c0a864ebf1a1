"""What `team init --data DIR` checks before it changes anything: DIR is a folder that is empty
or holds only what `team init` makes there, the port is free, and a socket folder outside DIR
is this server's own. Each refusal is one sentence (TeamError: bad input, exit 2), and nothing
has been made, started, moved or re-moded when it comes."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no flock; one team init at a time is then the admin's to keep
    fcntl = None  # type: ignore[assignment]

from engines.error_sentences import os_reason, shown
from engines.errors import Advice, Remedy
from engines.team.errors import TeamError
from engines.team.login_store import LOGINS_FILE, is_ours

CLUSTER_DIR = "postgres"
PROGRAMS_COPY = "server-programs"  # the server programs, where the server's user can read them
TEMP_PREFIX = ".sa3-"  # what team init writes for a moment (removed when done)
DATA_SETTING = "data"


def check_data_folder(data: Path) -> None:
    """Refuse `data` when it is not a folder, cannot be read, or holds anything `team init`
    did not make there (an unrelated logins.json is never overwritten)."""
    try:
        info = os.stat(data)
    except FileNotFoundError:
        return _check_parent(data)
    except OSError as err:
        raise _refusal(data, f"cannot be used ({os_reason(err)[0]})") from err
    if not stat.S_ISDIR(info.st_mode):
        raise _refusal(data, "is a file, not a folder")
    try:
        names = sorted(os.listdir(data))
    except OSError as err:
        raise _refusal(data, f"cannot be read ({os_reason(err)[0]})") from err
    foreign = [name for name in names if not _ours(data / name)]
    if foreign:
        listed = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3
                                           else "")
        raise _refusal(data, f"holds files a team server did not put there ({listed}), which "
                             "are left as they are")


class InitLock:
    """One `team init` at a time in a data folder: an flock on the folder itself, so nothing
    is written for it and the kernel lets it go however the process ends. Two at once would
    each run initdb and keep a superuser password, and only one of them would be the
    cluster's. A context manager; `take()` locks (TeamError when another team init holds the
    lock), and does nothing while the folder does not exist yet."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None or fcntl is None

    def take(self) -> None:
        if self.held:
            return
        try:
            fd = os.open(self.data, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return  # no folder yet (or not one): check_data_folder says what is wrong
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(fd)
            raise TeamError(f"Another team init is setting up the team server folder "
                            f"{shown(self.data)} right now; let it finish, then run team init "
                            "again if you still need to.") from err
        self._fd = fd

    def __enter__(self) -> InitLock:
        self.take()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the last descriptor lets the lock go
            self._fd = None


def _check_parent(data: Path) -> None:
    parent = next((p for p in data.parents if os.path.lexists(p)), None)
    if parent is not None and not parent.is_dir():
        raise _refusal(data, f"cannot be made: {shown(parent)} is a file, not a folder")


def _ours(path: Path) -> bool:
    name = path.name
    if name.startswith(TEMP_PREFIX) or name == f".{LOGINS_FILE}.new":
        return True
    if name == LOGINS_FILE:
        return path.is_file() and not path.is_symlink() and is_ours(path)
    if name == PROGRAMS_COPY:
        return path.is_dir() and not path.is_symlink()
    if name == CLUSTER_DIR:
        if path.is_symlink() or not path.is_dir():
            return False
        try:  # a cluster (PG_VERSION), or the empty folder a failed initdb leaves
            return (path / "PG_VERSION").is_file() or not any(path.iterdir())
        except OSError:
            return False
    return False


def _refusal(data: Path, problem: str) -> TeamError:
    return TeamError(Advice(f"The team server folder {shown(data)} {problem}; give {{0}} a new "
                            "or empty folder, or the one team init made.",
                            Remedy.setting(DATA_SETTING)))


def check_port_free(port: int) -> None:
    """Refuse a port something else listens on (the server could not start there)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as err:
            raise TeamError(Advice(f"Port {port} is taken by another program "
                                   f"({os_reason(err)[0]}), so the team server cannot listen "
                                   "there; give {0} another port, or 0 for any free one.",
                                   Remedy.setting("port"))) from err


def check_private_folder(folder: Path, uid: int, *, outcome: str = "was not used") -> bool:
    """Whether `folder` exists (False: it does not); TeamError when it does but is not this
    server's own: a symbolic link, not a folder, another user's, or open to others (not
    0700). Anyone who could enter it could talk to the server's socket or put another there.
    `outcome`: what became of it, for the sentence."""
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        return False
    except OSError as err:
        raise _not_private(folder, f"cannot be checked ({os_reason(err)[0]})", outcome) from err
    check_private_stat(folder, info, uid, outcome=outcome)
    return True


def check_private_stat(folder: Path, info: os.stat_result, uid: int, *,
                       outcome: str = "was not used") -> None:
    """TeamError unless `info` (an lstat of `folder`, or an fstat of it opened without
    following links) is of a folder of `uid`'s alone."""
    mode = stat.S_IMODE(info.st_mode)
    problem = ("is a symbolic link" if stat.S_ISLNK(info.st_mode) else
               "is not a folder" if not stat.S_ISDIR(info.st_mode) else
               f"belongs to another user (uid {info.st_uid})" if info.st_uid != uid else
               f"is open to others (mode {mode:o})" if mode != 0o700 else None)
    if problem is not None:
        raise _not_private(folder, problem, outcome)


def _not_private(folder: Path, problem: str, outcome: str) -> TeamError:
    return TeamError(f"The team server's socket folder {shown(folder)} {problem}, so it is not "
                     f"the server's own and {outcome}; remove it (someone else may have "
                     "made it) and run team init again.")
