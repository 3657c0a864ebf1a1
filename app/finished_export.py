"""Writing a take's finished audio: the file a drag-out, Copy or Save As gives once the take
has a finishing chain (app.export writes the raw take otherwise). No Qt widgets here.

Drag-out and Copy files are named by the export name template (engines.delivery.names) and
never replace anything: the first free name (`_2`, `_3` ...) is taken with an exclusive
create, then filled atomically by engines.finish.delivery, loop points and note included.
The file is written once per chain and reused while the chain stays the same.
"""

from __future__ import annotations

import logging
from pathlib import Path

from app.export import release_name, reserve_name
from app.take_names import slug
from engines.delivery.names import render_name, unique_path
from engines.errors import AudioFileError
from engines.failures import printable, sentence, shown
from engines.finish.delivery import DELIVERY_FORMATS, write_delivery
from engines.provenance import build_sidecar, sidecar_path, write_json_atomic

log = logging.getLogger(__name__)

MAX_TRIES = 1000


def finished_name(take, rendered, template: str) -> str:
    """The template filled in for this take (RequestError, one sentence, for a bad one)."""
    return render_name(template, name=take.name or slug(take.prompt), prompt=take.prompt,
                       seed=take.seed, n=take.variation, preset=rendered.settings.preset)


def suffix_for(fmt: str) -> str:
    return DELIVERY_FORMATS[fmt][2]


def deliver_finished(take, rendered, folder: Path, template: str) -> Path:
    """The finished file for drag-out and Copy: written on first use, then reused."""
    if rendered.file_path is not None and rendered.file_path.is_file():
        return rendered.file_path
    fmt = rendered.settings.format
    name = finished_name(take, rendered, template)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise AudioFileError(sentence(f"Could not create the folder {shown(folder)} for "
                                      "finished takes", err)) from err
    for _ in range(MAX_TRIES):
        target = unique_path(folder, name, suffix_for(fmt))
        if reserve_name(target):  # atomic: another program's new file is never replaced
            break
    else:
        raise AudioFileError(f"Could not find a free file name for '{printable(name)}' in "
                             f"{shown(folder)}; move some files out of that folder.")
    try:
        write_finished(take, rendered, target, fmt)
    except BaseException:
        release_name(target)
        raise
    rendered.file_path = target
    return target


def save_finished_as(take, rendered, path: Path, fmt: str | None = None) -> Path:
    """Save As: the finished audio where the user chose (the dialog asked before replacing a
    file there), in `fmt` (default: the chain's format), with its sidecar."""
    fmt = fmt if fmt in DELIVERY_FORMATS else rendered.settings.format
    path = path.parent / f"{path.stem}{suffix_for(fmt)}"
    write_finished(take, rendered, path, fmt)
    return path


def write_finished(take, rendered, path: Path, fmt: str) -> None:
    """The audio (atomically, with loop points and the note), then the sidecar."""
    write_delivery(path, rendered.audio, rendered.rate, fmt, rendered.loop_points,
                   note=_note(take, rendered), title=take.prompt[:120] or None)
    if take.result is None:
        return  # imported or library audio: no generation to describe
    sidecar = sidecar_path(path)
    try:
        payload = build_sidecar(take.result, path, fmt, take.init_path)
        finished = rendered.finished_take.finished
        payload["output"].update(sample_rate=finished.rate, samples=int(len(finished.audio)),
                                 channels=int(finished.audio.shape[1]),
                                 seconds=round(len(finished.audio) / finished.rate, 6))
        payload["library_id"] = take.library_id
        payload["finishing"] = rendered.finished_take.record()
        write_json_atomic(sidecar, payload)
    except (OSError, ValueError) as err:
        raise AudioFileError(sentence(f"Saved '{printable(path.name)}', but its sidecar "
                                      f"{shown(sidecar.name)} could not be written", err)) \
            from err


def _note(take, rendered) -> str:
    from engines.store.wavmeta import build_comment

    return build_comment({"prompt": take.prompt, "seed": take.seed, "model": take.model,
                          "library_id": take.library_id,
                          "finish": rendered.finished_take.note()})
