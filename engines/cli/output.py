"""Where `generate` writes: the checks of --out before the render, so a refusal comes before
any work is done. The writing itself is the delivery layer's (engines.delivery.deliver)."""

from __future__ import annotations

import os
from pathlib import Path

from engines.audio_io.atomic import (
    NAME_MAX_BYTES,
    create_temp_beside,
    remove_quietly,
    remove_stale_temps,
)
from engines.audio_io.formats import FORMATS, format_for_path
from engines.cli.support import UsageError
from engines.delivery.guard import Protected
from engines.delivery.sidecar import sidecar_path
from engines.error_sentences import sentence, shown
from engines.errors import AudioFileError


def check_output(out: Path | None, fmt: str | None,
                 protected: Protected | None = None) -> tuple[Path, str]:
    """(the path to write, its format), after making sure the file and its sidecar can be
    written there and replace none of the run's inputs nor the library's own files, so a
    refusal comes before the render, not after it. A symbolic link is followed: the file it
    points at is the one replaced, the link stays."""
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
        if FORMATS[fmt].suffix != FORMATS[chosen].suffix:
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
    if protected is not None:
        protected.check_all([out, sidecar_path(out)], "--out file")
    _probe_writable(out)
    return out, chosen


def _probe_writable(out: Path) -> None:
    """Create (and remove) a temporary beside `out` and its sidecar: a read-only or protected
    folder is refused now rather than after the render. Also removes temporaries a killed
    earlier run left for these targets."""
    for target in (out, sidecar_path(out)):
        remove_stale_temps(target)
        try:
            probe = create_temp_beside(target, target.suffix)
        except OSError as exc:
            raise UsageError(sentence(f"Could not write {shown(target)}", exc,
                                      "nothing was written; choose another --out")) from exc
        remove_quietly(probe)
