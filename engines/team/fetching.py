"""Copies of a team take's files in a folder of the user's: each copied from the shared store
into a hidden temporary beside its name while its SHA-256 is taken, compared with the name it
is stored under, and only then given its name - a free one, never a file already there (the
name rule of engines.delivery.names: name, name_2, ...), the audio and its sidecar keeping one
stem. A damaged or missing store file stops the fetch with one sentence; what was fetched
before it stays, no temporary is left.

These files were made by engines.delivery when they were published; a fetch only copies them,
byte for byte.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from engines.audio_io.atomic import create_temp_beside, remove_quietly
from engines.delivery.names import free_name
from engines.error_sentences import sentence, shown
from engines.team.content_store import ContentStore
from engines.team.entries import TeamFile
from engines.team.errors import TeamError

log = logging.getLogger(__name__)

MAX_NAME_TRIES = 1000
SIDECAR = "-sidecar"


def fetch_files(store: ContentStore, files: list[TeamFile], folder: Path) -> list[Path]:
    """Copy `files` (a team take's) into `folder`; the paths written, audio before sidecar."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise TeamError(sentence(f"Could not make the folder {shown(folder)}", err)) from err
    sidecars = {f.role.removesuffix(SIDECAR): f for f in files if f.role.endswith(SIDECAR)}
    written: list[Path] = []
    taken: set[str] = set()
    for audio in (f for f in files if not f.role.endswith(SIDECAR)):
        sidecar = sidecars.get(audio.role)
        name = Path(audio.name)
        for _ in range(MAX_NAME_TRIES):
            target = free_name(folder, name.stem, name.suffix, taken)
            try:
                written.append(_copy(store, audio, target))
            except FileExistsError:  # another program took the name meanwhile
                continue
            break
        else:
            raise TeamError(f"Could not find a free file name for {shown(name)} in "
                            f"{shown(folder)}; move some files out of that folder.")
        taken |= {target.name.casefold(), target.with_suffix(".json").name.casefold()}
        if sidecar is not None:
            try:
                written.append(_copy(store, sidecar, target.with_suffix(".json")))
            except FileExistsError:
                log.warning("Fetch: %s appeared meanwhile; its sidecar was not written",
                            target.with_suffix(".json"))
    return written


def cached_copy(store: ContentStore, file: TeamFile, cache: Path) -> Path:
    """A verified copy of `file` in the cache folder, named by its SHA-256 (so the same file
    is fetched once), for playing or dragging a team take without choosing a folder."""
    target = cache / f"{file.sha256}{Path(file.name).suffix.lower()}"
    try:
        if target.stat().st_size == file.size:
            return target
    except OSError:
        pass
    cache.mkdir(parents=True, exist_ok=True)
    temps = _TempsBeside(target)
    try:
        os.replace(store.copy_verified(file.sha256, temps.open), target)
    except OSError as err:
        raise TeamError(sentence(f"Could not keep a copy of {shown(file.name)} in "
                                 f"{shown(cache)}", err)) from err
    finally:
        temps.remove()
    return target


class _TempsBeside:
    """The temporaries one verified copy makes beside its target (the store's copy opens one
    per attempt), all removed afterwards whatever happened."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self.made: list[Path] = []

    def open(self) -> tuple[int, Path]:
        temp = create_temp_beside(self.target, self.target.suffix)
        self.made.append(temp)
        return os.open(temp, os.O_WRONLY | os.O_TRUNC | getattr(os, "O_BINARY", 0)), temp

    def remove(self) -> None:
        for temp in self.made:
            remove_quietly(temp)  # releases its lock too


def _copy(store: ContentStore, file: TeamFile, target: Path) -> Path:
    temps = _TempsBeside(target)
    try:
        temp = store.copy_verified(file.sha256, temps.open)
        _link_new(temp, target)
    except FileExistsError:
        raise
    except OSError as err:
        raise TeamError(sentence(f"Could not write {shown(target)}", err,
                                 "nothing was replaced; choose another folder")) from err
    finally:
        temps.remove()
    log.info("Fetched %s (%s)", target, file.sha256[:12])
    return target


def _link_new(temp: Path, target: Path) -> None:
    """Give `temp` the name `target` only if it is free (FileExistsError otherwise): a hard
    link is an exclusive create; without hard links the name is reserved with O_EXCL first."""
    try:
        os.link(temp, target)
    except FileExistsError:
        raise
    except OSError:
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        os.replace(temp, target)
