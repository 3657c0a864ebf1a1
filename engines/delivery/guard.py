"""Outputs that would destroy what they were made from are refused before any render: a file
that is one of the run's inputs (a sound list, an init audio file, a batch manifest), and
anything inside the library's own folders (its audio, trash and database), which the library
would otherwise treat as its own - or lose.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from engines.error_sentences import shown
from engines.errors import RequestError
from engines.paths import library_path

# Inside the library folder everything is the library's own (its database, edit journal,
# audio/ and trash/) except the folders the window hands out drag-out files from.
DRAG_OUT_FOLDERS = ("takes", "finished")


class OutputRefused(RequestError):
    """An output path would land on an input of the run or inside the library."""


@dataclass
class Protected:
    """What a run must not write over: its inputs (with what each one is, for the sentence)
    and the library folder. `check` is called for every file about to be written."""

    inputs: dict[Path, str] = field(default_factory=dict)
    library_root: Path | None = None

    def add_input(self, path: Path | None, what: str) -> None:
        if path is not None:
            self.inputs[_resolved(path)] = what

    def check_folder(self, folder: Path, noun: str = "output folder") -> None:
        """OutputRefused when files written into `folder` would land in the library."""
        self.check(folder / "-", noun, shown_as=folder)

    def check(self, target: Path, noun: str = "output", shown_as: Path | None = None) -> None:
        """OutputRefused (one sentence) when writing `target` would replace an input or
        write into the library's own folders."""
        resolved = _resolved(target)
        for path, what in self.inputs.items():
            if resolved == path or _same_file(resolved, path):
                raise OutputRefused(
                    f"The {noun} {shown(target)} would replace {what} {shown(path)}, so "
                    "nothing was written; choose another output folder or name.")
        root = _resolved(self.library_root) if self.library_root is not None else None
        if root is not None and (resolved == root or root in resolved.parents):
            first = resolved.relative_to(root).parts[:1]
            if not first or first[0] not in DRAG_OUT_FOLDERS or len(resolved.relative_to(
                    root).parts) < 2:
                raise OutputRefused(
                    f"The {noun} {shown(shown_as or target)} is inside the sound library's "
                    "own folder "
                    f"{shown(root)}, where the library keeps its takes, so nothing was "
                    "written; choose a folder outside the library.")

    def check_all(self, targets: Iterable[Path], noun: str = "output") -> None:
        for target in targets:
            self.check(target, noun)


def default_protected(*inputs: tuple[Path | None, str]) -> Protected:
    """Protection with the user's library folder and the given (path, what) inputs."""
    protected = Protected(library_root=library_path())
    for path, what in inputs:
        protected.add_input(path, what)
    return protected


def _resolved(path: Path) -> Path:
    try:
        return Path(os.path.realpath(path))
    except (OSError, ValueError):
        return Path(os.path.abspath(path))


def _same_file(a: Path, b: Path) -> bool:
    """A hard link to an input is the input too."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False
