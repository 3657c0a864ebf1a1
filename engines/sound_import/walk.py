"""The files under an imported folder, found by walking it: symlinked folders are followed,
each real folder once (by device and inode), so a link back up the tree ends the walk there
instead of looping; hidden entries (a leading '.') are left out, as file browsers do."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FoundFile:
    """A regular file found by the walk, with the stat a rescan compares."""

    path: str  # absolute
    size: int
    mtime_ns: int


def walk_folder(root: str, cancelled: Callable[[], bool] = lambda: False,
                unreadable: Callable[[str, OSError], None] | None = None
                ) -> Iterator[FoundFile]:
    """Every regular file under `root` (absolute); `unreadable(path, error)` hears of each
    folder that could not be listed (the walk goes on with the rest)."""
    seen: set[tuple[int, int]] = set()
    stack = [root]
    while stack and not cancelled():
        folder = stack.pop()
        try:
            info = os.stat(folder)
            key = (info.st_dev, info.st_ino)
            if key in seen:
                continue  # a symlink loop, or a second link to a folder already walked
            seen.add(key)
            with os.scandir(folder) as entries:
                listing = sorted(entries, key=lambda entry: entry.name)  # stable ids
        except OSError as err:
            if unreadable is not None:
                unreadable(folder, err)
            else:
                log.info("Could not list %s: %s", folder, err)
            continue
        subfolders = []
        for entry in listing:
            if entry.name.startswith("."):
                continue
            try:
                entry_stat = entry.stat()  # follows a symlink to its target
            except OSError:
                continue  # a dangling link
            if stat.S_ISDIR(entry_stat.st_mode):
                subfolders.append(entry.path)
            elif stat.S_ISREG(entry_stat.st_mode):
                yield FoundFile(entry.path, entry_stat.st_size, entry_stat.st_mtime_ns)
        stack.extend(reversed(subfolders))  # walked in name order
