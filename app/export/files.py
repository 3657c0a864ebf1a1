"""A session take as a file - drag-out, Copy, Save As - through the one delivery layer
(engines.delivery): the same bytes, name rule, sidecar and embedded metadata as `generate`,
`batch` and `library export`. No Qt widgets here.

A take the library holds is described from its library row (so its file is byte for byte what
`library export` writes for the same chain); a take made in this session but not kept, from its
generation; imported audio, as what it is. A take with a finishing chain leaves finished.
Drag-out and Copy files are named by the export name template and never replace anything (the
first free name, `_2`, `_3` ...); they are written once per take and chain and reused. Save As
writes where the user chose (the dialog asked before replacing a file there). Every failure
raises a StudioError whose text is one sentence for the user.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from app.common.session_take import Take
from engines.audio_io.formats import FORMATS, format_for_path, suffix_for
from engines.delivery.deliver import deliver, deliver_new
from engines.delivery.delivery_take import (
    DeliveryTake,
    Labels,
    from_audio,
    from_record,
    from_result,
)
from engines.delivery.labels import make_labels, take_labels
from engines.delivery.names import take_stem
from engines.error_sentences import sentence, shown
from engines.errors import AudioFileError, StudioError
from engines.provenance import init_entry

log = logging.getLogger(__name__)


def finished_take(take: Take) -> Any | None:
    """The take's FinishedTake for its current chain, or None for a raw take (the caller has
    checked the chain's audio is ready: app.export.controller.finished_for)."""
    if take.finishing is None or take.finished is None:
        return None
    return take.finished.finished_take


def delivery_take(take: Take, library: Any) -> DeliveryTake:
    """What engines.delivery is given for a session take (see the module docstring)."""
    finished = finished_take(take)
    record = _library_record(take, library)
    if record is not None:
        base = from_record(record, take.pcm, finished)
    elif take.result is not None:
        init = init_entry(Path(take.init_path)) if take.init_path is not None else None
        base = from_result(take.result, init=init, name=take.name, finished=finished)
    else:
        generated = not take.imported
        base = from_audio(take.pcm, prompt=take.prompt, name=take.name,
                          seed=take.seed if generated else None,
                          model=take.model if generated else "").with_finished(finished)
    # The labels the library keeps with the take (the Library page's inspector, `library
    # label`, the batch or command that made it), over the studio's names from settings.
    stored = record.labels if record is not None else None
    return base.with_labels(take_labels(_studio_labels(), stored))


def variation_of(take: Take, library: Any) -> tuple[int, int]:
    """(n, of): the take's number in its set of variations, as the library knows it (kept
    when it was made, else from its family: engines.store.families), else the session's."""
    if take.library_id is not None and library is not None:
        try:
            return library.variation_number(take.library_id)
        except StudioError:  # deleted meanwhile, or the library is unavailable
            log.info("take #%s: variation number from the session", take.library_id)
    return take.variation, take.variation


def file_stem(take: Take, template: str, library: Any) -> str:
    """The take's file name (no suffix) by the one name rule."""
    rendered = take.finished if take.finishing is not None else None
    preset = rendered.settings.preset if rendered is not None else ""
    n, of = variation_of(take, library)
    return take_stem(template, delivery_take(take, library), n, preset, of=of)


def take_format(take: Take) -> str:
    rendered = take.finished if take.finishing is not None else None
    return rendered.settings.format if rendered is not None else "wav16"


def drag_file(take: Take, folder: Path, template: str, library: Any) -> Path:
    """The file for drag-out and Copy: written on first use, then reused while the take, its
    chain and its name stay the same (a renamed take, or a new name template, gets a new file
    named by the new name)."""
    rendered = take.finished if take.finishing is not None else None
    subject = delivery_take(take, library)
    preset = rendered.settings.preset if rendered is not None else ""
    n, of = variation_of(take, library)
    stem = take_stem(template, subject, n, preset, of=of)
    cached = rendered.file_path if rendered is not None else take.file_path
    if cached is not None and Path(cached).is_file() and _named_by(Path(cached), stem):
        return Path(cached)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise AudioFileError(sentence(f"Could not create the folder {shown(folder)} for "
                                      "dragged takes", err)) from err
    done = deliver_new(subject, folder, stem, fmt=take_format(take))
    if rendered is not None:
        rendered.file_path = done.path
    else:
        take.file_path = done.path
    return done.path


def _named_by(path: Path, stem: str) -> bool:
    """Whether `path` is the file engines.delivery.deliver_new names `stem` (stem, stem_2...)."""
    return path.stem == stem or re.fullmatch(re.escape(stem) + r"_\d+", path.stem) is not None


def save_take_as(take: Take, path: Path, fmt: str | None, library: Any) -> Path:
    """Save As: the take where the user chose, in `fmt` (default: from the chain, else from
    the name), with its sidecar; a file there is replaced only by the complete new one."""
    if fmt not in FORMATS:
        fmt = take_format(take) if take.finishing is not None else format_for_path(path)
    path = path.parent / f"{path.stem}{suffix_for(fmt)}"
    return deliver(delivery_take(take, library), path, fmt=fmt).path


def _library_record(take: Take, library: Any) -> Any | None:
    if take.library_id is None or library is None:
        return None
    try:
        return library.get(take.library_id)
    except StudioError:  # deleted meanwhile, or the library is unavailable
        log.info("take #%s is not in the library; delivered from the session", take.library_id)
        return None


def _studio_labels() -> Labels:
    try:
        return make_labels()
    except StudioError:  # a damaged UCS list never stops a drag
        log.warning("could not read the studio's labels", exc_info=True)
        return Labels()
