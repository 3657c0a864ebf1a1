"""The server's Unix socket folder when it cannot be the cluster folder (a socket path must fit
108 bytes): a folder of a random name under the temporary folder, the server user's alone.

Whatever stands at that name can change between a check and its use (in a temporary folder
that is not sticky, or by anyone allowed to rename there), so nothing here trusts a name
checked earlier: the folder is made and given to the server user through a descriptor that
never follows a link; after the server started, its socket must be in that folder, still
private, or the server is stopped; and a client connects through a descriptor of the folder,
checked when opened (/proc/self/fd/N, where there is /proc), never through the name again.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from engines.error_sentences import sentence, shown
from engines.team.data_folder import check_private_folder, check_private_stat
from engines.team.errors import TeamError, TeamUnreachable

_PROC_FDS = Path("/proc/self/fd")
_opened: dict[Path, int] = {}  # folder -> a descriptor of it, kept for the process's life


def make_private_folder(base: Path, owner: tuple[int, int] | None) -> Path:
    """A new folder of a random name in `base`, mode 0700, given to `owner` (uid, gid) when
    that is not us."""
    folder = Path(tempfile.mkdtemp(prefix="sa3-team-", dir=base))  # 0700, ours alone
    if owner is not None:
        try:  # still the one made, and never through a link put in its place
            fd = _open_private(folder, os.geteuid())
        except FileNotFoundError as err:
            raise TeamError(f"The team server's socket folder {shown(folder)} was removed as "
                            "soon as it was made; run team init again.") from err
        try:
            os.fchown(fd, owner[0], owner[1])
        finally:
            os.close(fd)
    return folder


def _open_private(folder: Path, uid: int) -> int:
    """A descriptor of `folder`, opened without following a link and checked to be `uid`'s
    alone; TeamError when it is not (FileNotFoundError when there is nothing there)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise
    except OSError as err:
        check_private_folder(folder, uid)  # says why (a link, not a folder)
        raise TeamError(sentence(f"Could not open the team server's socket folder "
                                 f"{shown(folder)}", err)) from err
    try:
        check_private_stat(folder, os.fstat(fd), uid)
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_listening(folder: Path, port: int, uid: int) -> None:
    """TeamError unless the server's socket for `port` is in `folder` and `folder` is still
    the server user's (`uid`) alone: for a server just started or restarted."""
    if not check_private_folder(folder, uid, outcome="the server was stopped"):
        raise TeamError(f"The team server's socket folder {shown(folder)} was removed while "
                        "the server started, so the server was stopped; run team init again.")
    try:
        info = os.lstat(folder / f".s.PGSQL.{port}")
    except OSError:
        info = None
    if info is None or not stat.S_ISSOCK(info.st_mode) or info.st_uid != uid:
        raise TeamError(f"The team server's socket is not in its folder {shown(folder)} (the "
                        "folder was replaced while the server started), so the server was "
                        "stopped; run team init again.")


def client_host(folder: Path, uid: int) -> str:
    """The host a client connects through to reach the socket in `folder`: a descriptor of it,
    opened without following links and checked to be `uid`'s alone (TeamError when it is not),
    so the folder cannot be swapped between the check and the connection. The folder's own
    name where there is no /proc (checked, as closely as that allows)."""
    try:
        fd = _open_private(folder, uid)
    except FileNotFoundError as err:  # never connect through a name someone may make now
        raise TeamUnreachable(f"The team server is not running: its socket folder "
                              f"{shown(folder)} is gone; start it with team init.") from err
    if not _PROC_FDS.is_dir():
        os.close(fd)
        return str(folder)
    # Kept open: a line handed out earlier may still be used to connect through it.
    _opened[folder] = fd
    return str(_PROC_FDS / str(fd))
