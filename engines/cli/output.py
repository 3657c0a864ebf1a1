"""Writing what `generate` made to --out: the checks before the render, and the move of the
audio and its sidecar into place together (a failure leaves the user's files as they were).

`check_output` refuses what cannot be written before any work is done; `deliver` writes the
audio (by a `write_temp` the caller chooses: raw PCM, a copy of the library file, or the
finished delivery) and the sidecar to locked temporaries beside the target and moves both.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from engines.cli.finishing import SUFFIXES
from engines.cli.support import UsageError
from engines.failures import sentence, shown
from engines.provenance import sidecar_path

log = logging.getLogger(__name__)

WriteTemp = Callable[[Path], Path]
"""write_temp(target) -> a complete temporary file beside target holding the audio."""


def check_output(out: Path | None, fmt: str | None) -> tuple[Path, str]:
    """(the path to write, its format), after making sure the file and its sidecar can be
    written there, so a refusal comes before the render, not after it. A symbolic link is
    followed: the file it points at is the one replaced, the link stays."""
    from engines.audio_io import AudioFileError, format_for_path
    from engines.audio_io.atomic import NAME_MAX_BYTES

    if out is None:
        raise UsageError("--out is required; give the file to write, e.g. --out clip.wav.")
    for name in (out.name, sidecar_path(out).name):
        if len(os.fsencode(name)) > NAME_MAX_BYTES:
            raise UsageError(f"The name {shown(name)} is too long for the file system (more "
                             f"than {NAME_MAX_BYTES} bytes), so nothing was written; choose a "
                             "shorter --out.")
    try:
        chosen = format_for_path(out, default="wav16")
    except AudioFileError as exc:
        raise UsageError(str(exc)) from exc
    if fmt:  # wav24 and wav32f share .wav with wav16: the suffix only has to fit
        if SUFFIXES.get(fmt) != SUFFIXES[chosen]:
            raise UsageError(f"--format {fmt} does not match the file name "
                             f"{shown(out.name)}; use a matching suffix.")
        chosen = fmt
    try:
        if out.is_symlink():
            out = out.resolve()
        folder_ok = out.parent.is_dir()
    except (OSError, RuntimeError) as exc:  # a link loop, a path the OS refuses
        raise UsageError(sentence(f"Could not use --out {shown(out)}", exc)) from exc
    if not folder_ok:
        raise UsageError(f"The folder {shown(out.parent)} does not exist; create it or choose "
                         f"another --out.")
    for target in (out, sidecar_path(out)):
        if target.is_dir():
            raise UsageError(f"Could not write {shown(target)}: a folder with that name is in "
                             "the way, so nothing was written; choose another --out.")
        if target.exists() and not target.is_file():
            raise UsageError(f"Could not write {shown(target)}: it is a device or special "
                             "file, so nothing was written; choose a file name for --out.")
    _probe_writable(out)
    return out, chosen


def _probe_writable(out: Path) -> None:
    """Create (and remove) a temporary beside `out` and its sidecar: a read-only or protected
    folder is refused now rather than after the render. Also removes temporaries a killed
    earlier run left for these targets."""
    from engines.audio_io.atomic import create_temp_beside, remove_quietly, remove_stale_temps

    for target in (out, sidecar_path(out)):
        remove_stale_temps(target)
        try:
            probe = create_temp_beside(target, target.suffix)
        except OSError as exc:
            raise UsageError(sentence(f"Could not write {shown(target)}", exc,
                                      "nothing was written; choose another --out")) from exc
        remove_quietly(probe)


def deliver(out: Path, write_temp: WriteTemp, sidecar: dict) -> None:
    """Write the audio and its sidecar to hidden temporaries beside `out` and move them into
    place only when both are complete. The sidecar goes first (the likelier to fail); if the
    audio then cannot be moved, the old sidecar is put back (or the new one removed), so a
    failure leaves the user's files exactly as they were."""
    from engines.audio_io.atomic import release, remove_quietly
    from engines.errors import AudioFileError
    from engines.provenance import write_json_temp

    json_target = sidecar_path(out)
    temps: list[Path] = []
    writing = out  # what a failure is reported as: the user's name, never a temporary one
    try:
        temps.append(write_temp(out))
        writing = json_target
        temps.append(write_json_temp(json_target, sidecar))
        temps.append(_keep_old(json_target))
        os.replace(temps[1], json_target)
        writing = out
        try:
            os.replace(temps[0], out)
        except OSError:
            _put_back(json_target, temps[2])
            raise
    except AudioFileError as exc:
        raise UsageError(str(exc)) from exc
    except OSError as exc:
        raise UsageError(sentence(f"Could not write {shown(writing)}", exc,
                                  "no file was changed; choose another --out or make room "
                                  "there")) from exc
    finally:
        for temp in temps:
            if temp is not None:
                remove_quietly(temp)  # a no-op for one already moved into place
                release(temp)


def _keep_old(target: Path) -> Path | None:
    """A hard link to the file at `target` (None when there is none), so it can be put back."""
    from engines.audio_io.atomic import create_temp_beside, remove_quietly

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


def copy_temp(source: Path, target: Path) -> Path:
    from engines.audio_io.atomic import create_temp_beside, fsync_file, remove_quietly

    temp = create_temp_beside(target, target.suffix)
    try:
        shutil.copyfile(source, temp)
        fsync_file(temp)
    except BaseException:
        remove_quietly(temp)
        raise
    return temp


