"""Delivering a take: its audio file and its sidecar, written to hidden temporaries beside
the target and moved into place together, so a failure leaves the user's files exactly as they
were. Every way out - `generate --out`, batch, `library export`, the window's drag, Copy and
Save As, the Library tab's exports, zips - comes through here.

Two ways to place a file: `deliver` writes where the user named (Save As, --out: a file there
is replaced by the complete new one, as the user asked), and `deliver_new` finds a free name
in a folder by the one name rule (engines.delivery.names) and never replaces anything.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engines.audio_io.atomic import create_temp_beside, release, remove_quietly
from engines.audio_io.formats import suffix_for
from engines.delivery.delivery_take import DeliveryTake
from engines.delivery.guard import Protected
from engines.delivery.metadata import file_tags
from engines.delivery.names import free_name
from engines.delivery.render import Rendering, render
from engines.delivery.sidecar import build_sidecar, sidecar_path, write_json_temp
from engines.delivery.writer import write_audio_temp
from engines.error_sentences import sentence, shown
from engines.errors import AudioFileError, StudioError

log = logging.getLogger(__name__)

MAX_NAME_TRIES = 1000


@dataclass(frozen=True)
class Delivered:
    path: Path
    sidecar_path: Path
    sidecar: dict[str, Any]
    rendering: Rendering


def prepare(take: DeliveryTake, target: Path, fmt: str | None = None,
            extra: Mapping[str, Any] | None = None, shown_as: str | Path | None = None
            ) -> tuple[Path, dict[str, Any], Rendering]:
    """(a complete temporary beside `target` holding the file, its sidecar, the rendering).
    The caller moves the temporary into place (then `atomic.release`) or removes it."""
    rendering = render(take, fmt)
    temp = write_audio_temp(target, rendering.audio, rendering.fmt, rendering.rate,
                            loop_points=rendering.loop_points, tags=file_tags(take, rendering))
    try:
        sidecar = build_sidecar(take, rendering, temp, shown_as or target)
        sidecar.update(extra or {})
    except BaseException:
        remove_quietly(temp)
        raise
    return temp, sidecar, rendering


def deliver(take: DeliveryTake, target: Path, *, fmt: str | None = None,
            protected: Protected | None = None,
            extra: Mapping[str, Any] | None = None) -> Delivered:
    """The take at `target` (replacing a file there only by the complete new one) with its
    sidecar. AudioFileError / OutputRefused: one sentence, the user's files as they were."""
    target = Path(target)
    json_target = sidecar_path(target)
    if protected is not None:
        protected.check_all([target, json_target])
    temp, sidecar, rendering = prepare(take, target, fmt, extra)
    _commit(temp, target, sidecar, json_target, exclusive=False)
    log.info("Delivered %s (%s, %d Hz)", target, rendering.fmt, rendering.rate)
    return Delivered(target, json_target, sidecar, rendering)


def deliver_new(take: DeliveryTake, folder: Path, stem: str, *, fmt: str | None = None,
                protected: Protected | None = None, taken: set[str] | None = None,
                extra: Mapping[str, Any] | None = None) -> Delivered:
    """The take in `folder` as `stem` (or stem_2, stem_3 ... : the first name whose audio and
    sidecar are both free), never replacing a file, not even one another program creates
    while this one is written."""
    folder = Path(folder)
    if not folder.is_dir():
        raise AudioFileError(f"The folder {shown(folder)} does not exist; choose an existing "
                             "folder.")
    chosen_fmt = fmt or (take.finished.settings.format if take.finished is not None
                         else take.raw_format)
    suffix = suffix_for(chosen_fmt)
    target = free_name(folder, stem, suffix, taken)
    if protected is not None:
        protected.check_all([target, sidecar_path(target)])
    temp, sidecar, rendering = prepare(take, target, chosen_fmt, extra)
    try:
        for _ in range(MAX_NAME_TRIES):
            sidecar["output"]["path"] = str(target.resolve())
            try:
                _commit(temp, target, sidecar, sidecar_path(target), exclusive=True)
            except FileExistsError:  # taken meanwhile: the next free name
                target = free_name(folder, stem, suffix, taken)
                continue
            break
        else:
            raise AudioFileError(f"Could not find a free file name for {shown(stem)} in "
                                 f"{shown(folder)}; move some files out of that folder.")
    finally:
        remove_quietly(temp)  # a no-op once moved
    if taken is not None:
        taken.update({target.name.casefold(), sidecar_path(target).name.casefold()})
    log.info("Delivered %s (%s, %d Hz)", target, rendering.fmt, rendering.rate)
    return Delivered(target, sidecar_path(target), sidecar, rendering)


def _commit(audio_temp: Path, target: Path, sidecar: dict, json_target: Path,
            exclusive: bool) -> None:
    """Move the audio and its sidecar into place together. The sidecar goes first (the likelier
    to fail); if the audio then cannot be moved, the old sidecar is put back (or the new one
    removed). `exclusive`: FileExistsError when either name is taken, nothing changed."""
    temps: list[Path | None] = [audio_temp]
    writing = json_target  # what a failure is reported as: the user's name, never a temporary
    try:
        temps.append(write_json_temp(json_target, sidecar))
        if exclusive:
            _link_new(temps[1], json_target)
            writing = target
            try:
                _link_new(audio_temp, target)
            except BaseException:
                json_target.unlink(missing_ok=True)
                raise
            return
        temps.append(_keep_old(json_target))
        os.replace(temps[1], json_target)
        writing = target
        try:
            os.replace(audio_temp, target)
        except OSError:
            _put_back(json_target, temps[2])
            raise
    except FileExistsError:
        raise
    except StudioError:
        raise
    except OSError as exc:
        raise AudioFileError(sentence(f"Could not write {shown(writing)}", exc,
                                      "no file was changed; choose another place or make "
                                      "room there")) from exc
    finally:
        for temp in temps:
            if temp is not None:
                remove_quietly(temp)  # a no-op for one already moved into place
                release(temp)


def _link_new(temp: Path, target: Path) -> None:
    """Give `temp` the name `target` only if that name is free (FileExistsError otherwise):
    a hard link is an atomic exclusive create; where the file system has none, the name is
    reserved with O_EXCL and then replaced."""
    try:
        os.link(temp, target)
    except FileExistsError:
        raise
    except OSError:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                     0o666)
        os.close(fd)
        try:
            os.replace(temp, target)
        except BaseException:
            target.unlink(missing_ok=True)
            raise
        return
    remove_quietly(temp)


def _keep_old(target: Path) -> Path | None:
    """A hard link to the file at `target` (None when there is none), so it can be put back."""
    if not target.is_file():
        return None
    backup = create_temp_beside(target, ".old")
    remove_quietly(backup)  # only the free name is wanted: os.link will not overwrite
    try:
        os.link(target, backup)
    except OSError:  # a file system without hard links
        shutil.copyfile(target, backup)
    return backup


def _put_back(target: Path, backup: Path | None) -> None:
    try:
        if backup is None:
            target.unlink(missing_ok=True)
        else:
            os.replace(backup, target)
    except OSError:
        log.warning("could not restore %s", target, exc_info=True)
