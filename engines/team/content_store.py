"""The team's shared audio store: a folder on the team's drive where every published file lies
under the name of its SHA-256 (STORE/ab/abcdef...), written once and never modified.

A file arrives under a temporary name in STORE/incoming/, is synced and hashed there, and only
then gets its final name, by a hard link (an exclusive create: a name that exists already holds
the same bytes, published by someone else first) or, on a drive without hard links, a rename
when the name is free. So a reader never finds a half-written file under a hash name, and two
designers publishing the same file at once store it once. Files are made read-only. Reading a
file back (`copy_verified`) hashes it again: a file damaged on the drive is named, never used;
storing it again (a publish of the same take) finds the damage by its hash and puts a new
complete file in its place.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import re
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

from engines.audio_io.atomic import fsync_file, remove_quietly
from engines.error_sentences import sentence, shown
from engines.team.errors import TeamError, TeamRefused, TeamUnreachable

log = logging.getLogger(__name__)

INCOMING = "incoming"
CHUNK = 1 << 20
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
READ_ONLY = stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
_REFUSED = (errno.EACCES, errno.EPERM, errno.EROFS)
_FULL = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))


def sha256_of(path: Path) -> tuple[str, int]:
    """(SHA-256 hex, size) of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def copy_hashing(source: Path, target_fd: int) -> tuple[str, int]:
    """Copy `source` into the open file `target_fd`, hashing what was read; (sha, size)."""
    digest = hashlib.sha256()
    size = 0
    with open(source, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
            _write_all(target_fd, chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class ContentStore:
    """The store in `root` (a folder every designer's machine can reach)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path_of(self, sha256: str) -> Path:
        if not _SHA256.match(sha256):
            raise TeamError(f"'{sha256[:70]}' is not a SHA-256; the team library names files "
                            "by 64 hexadecimal digits.")
        return self.root / sha256[:2] / sha256

    def prepare(self) -> None:
        """Make the store's folder (for `team init`); TeamError when it cannot be."""
        try:
            (self.root / INCOMING).mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise TeamError(sentence(f"Could not make the team's audio store {shown(self.root)}",
                                     err, "choose a folder on a drive the team shares")) from err

    def reachable(self) -> bool:
        return (self.root / INCOMING).is_dir()

    def put(self, source: Path, sha256: str) -> Path:
        """Store the file `source`, which must hash to `sha256`; its path in the store. A file
        of that hash there already is kept when its bytes hash to its name; one damaged in
        place (any byte, not only its size) is replaced by a new complete file. TeamUnreachable
        when the store's drive is not there; TeamError when `source` does not hold what it
        should."""
        final = self.path_of(sha256)
        if not self.reachable():
            raise TeamUnreachable(f"The team's audio store {shown(self.root)} cannot be "
                                  "reached (is the shared drive mounted?); the publish waits "
                                  "in the outbox until it is.")
        try:
            damaged = final.is_file() and sha256_of(final)[0] != sha256
            if final.is_file() and not damaged:
                return final
            final.parent.mkdir(exist_ok=True)
            temp = self.root / INCOMING / f"{sha256}.{secrets.token_hex(6)}.partial"
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                try:
                    got, _ = copy_hashing(source, fd)
                finally:
                    os.close(fd)
                if got != sha256:
                    raise TeamError(f"The file {shown(source)} changed while it was published "
                                    "(its SHA-256 differs from the one taken before); publish "
                                    "the take again.")
                fsync_file(temp)
                os.chmod(temp, READ_ONLY)
                if damaged:  # the only change a stored file ever sees: its own bytes back
                    log.warning("Team store: %s did not hash to its name; replaced", final)
                    os.replace(temp, final)
                else:
                    _give_name(temp, final)
            finally:
                remove_quietly(temp)
        except OSError as err:
            raise _write_failure(self.root, err) from err
        return final

    def copy_verified(self, sha256: str, open_target: Callable[[], tuple[int, Path]]) -> Path:
        """Copy the stored file `sha256` into a new file that `open_target()` opens (fd, path),
        hashing it as it goes; TeamError when the stored bytes do not hash to their name
        (the partial copy is removed)."""
        source = self.path_of(sha256)
        if not source.is_file():
            if not self.root.is_dir():
                raise TeamUnreachable(f"The team's audio store {shown(self.root)} cannot be "
                                      "reached; mount the shared drive and fetch again.")
            raise TeamError(f"The team's audio store {shown(self.root)} has no file "
                            f"{sha256[:12]}...; publish the take again from the designer who "
                            "has it.")
        fd, target = open_target()
        try:
            try:
                got, _ = copy_hashing(source, fd)
                os.fsync(fd)
            finally:
                os.close(fd)
            if got != sha256:
                raise TeamError(f"The team's copy {shown(source)} is damaged (its SHA-256 is "
                                "not its name), so it was not fetched; publish the take again "
                                "from the designer who has it.")
        except BaseException:
            remove_quietly(target)
            raise
        return target


def _write_failure(root: Path, err: OSError) -> TeamError:
    """A failure to write the store, by its kind: a drive out of reach waits for the drive
    (TeamUnreachable); one that refuses this user, or is full, is said as that, since waiting
    changes nothing. The publish stays in the outbox whichever it is."""
    what = f"Could not write to the team's audio store {shown(root)}"
    if err.errno in _REFUSED:
        return TeamRefused(sentence(what, err, "ask whoever runs the team's drive to let you "
                                    "write there; the publish waits in the outbox"))
    if err.errno in _FULL:
        return TeamError(sentence(what, err, "make room on the team's drive; the publish waits "
                                  "in the outbox"))
    return TeamUnreachable(sentence(what, err, "the publish waits in the outbox; check the "
                                    "shared drive"))


def _give_name(temp: Path, final: Path) -> None:
    """The complete temporary under its hash name, unless that name exists (same bytes)."""
    try:
        os.link(temp, final)
    except FileExistsError:
        return
    except OSError:  # no hard links on this drive: a rename where the name is free
        if not final.exists():
            os.replace(temp, final)
    log.info("Team store: added %s", final.name)
