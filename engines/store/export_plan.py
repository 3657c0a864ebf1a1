"""What an export writes for each take: its file name (the usual `door-creak-12`, or a name
template) and its audio (the take's own file, or the take finished by a chain).

Which chain: the one the caller gives for every take (the command line's finishing flags), else,
when asked, the chain stored with the take (`use_stored`), else none. A delivery format alone
changes only the container: a stored chain is kept with that format, a raw take is converted.

Loops are remade here, because only the chain is stored, never finished audio: by the take's
model when the caller offers one (`generate`) and the take is a generation, with the stored
loop's seed when a stored model loop is remade (so the export is that loop again), else by
crossfade. A model that cannot run (not installed here, take too short) falls back to the
crossfade, and `warn` is told in one sentence.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from engines.errors import RequestError, StudioError
from engines.store.export import ExportItem, export_stem, raw_suffix
from engines.store.files import slug
from engines.store.records import LibraryError, TakeRecord

Generate = Callable[[Any], np.ndarray]
"""generate(request) -> float (N, 2) audio at 44.1 kHz (e.g. a Generator's pcm / 32767)."""

# How the library's stored files map onto delivery formats, to tell a real conversion from
# a copy: generated takes are 16-bit WAV, imports 24-bit FLAC or 32-bit float WAV.
_STORED_AS = {"wav16": "wav16", "flac": "flac", "wav": "wav32f"}


@dataclass(frozen=True)
class ExportOptions:
    template: str | None = None  # engines.finish.names template; None: `door-creak-12`
    category: str = ""  # the template's {category}
    settings: Any = None  # FinishSettings for every take (already validated), or None
    format: str | None = None  # a delivery format for takes `settings` does not finish
    use_stored: bool = False  # finish takes by their stored chain when `settings` is None
    generate: Generate | None = None  # runs a take's model set, for loops
    warn: Callable[[str], None] | None = None  # one sentence when a loop falls back
    overwrite: bool = False  # replace files of the same name instead of numbering
    written: Callable[[TakeRecord, Path, dict], None] | None = None  # see export.Written
    day: _dt.date | None = None  # the template's {date}; today when None


@dataclass(frozen=True)
class Chain:
    """How one take is finished: its settings, where they came from, the stored loop."""

    settings: Any  # FinishSettings
    stored: bool  # the take's own stored chain (rather than the caller's)
    loop: dict | None = None  # the stored loop's {"method", "seed"}, to make it again


def chain_for(record: TakeRecord, options: ExportOptions) -> Chain | None:
    """The chain that finishes `record` in this export; None: its own file is copied."""
    from engines.finish.settings import FinishSettings

    if options.settings is not None:
        return Chain(options.settings, stored=False)
    if options.use_stored and record.finishing is not None:
        try:
            settings = FinishSettings.from_dict(record.finishing.get("chain"))
        except RequestError as err:
            raise LibraryError(f"The stored finishing of take #{record.id} cannot be used "
                               f"({str(err).rstrip('.')}); finish the take again or export "
                               "it raw.") from err
        if options.format is not None:
            settings = replace(settings, format=options.format)
        loop = record.finishing.get("loop")
        return Chain(settings, stored=True, loop=loop if isinstance(loop, dict) else None)
    if options.format is not None and options.format != _STORED_AS.get(record.file_format):
        return Chain(FinishSettings(format=options.format), stored=False)
    return None


def file_stem(record: TakeRecord, options: ExportOptions, n: int, chain: Chain | None) -> str:
    """The file name (without suffix) of the n-th take (from 1) of this export."""
    if options.template is None:
        return export_stem(record)
    from engines.finish.names import render_name

    return render_name(
        options.template, name=record.name or slug(record.prompt or record.title()),
        prompt=record.prompt, seed=None if record.is_imported else record.seed, n=n,
        preset=chain.settings.preset if chain is not None else "",
        date=options.day, category=options.category)


def export_items(records: list[TakeRecord], options: ExportOptions,
                 audio_of: Callable[[int], np.ndarray]) -> list[ExportItem]:
    """One ExportItem a take; `audio_of(take_id)` gives a take's float (N, 2) audio, read
    only when the item is written (one take's audio in memory at a time)."""
    from engines.finish.delivery import DELIVERY_FORMATS

    if options.template is not None:
        from engines.finish.names import check_template

        check_template(options.template)
    items = []
    for n, record in enumerate(records, start=1):
        chain = chain_for(record, options)
        stem = file_stem(record, options, n, chain)
        if chain is None:
            items.append(ExportItem(record, stem, raw_suffix(record),
                                    overwrite=options.overwrite))
            continue
        render = partial(_render, record, chain, options, audio_of)
        suffix = DELIVERY_FORMATS[chain.settings.format][2]
        items.append(ExportItem(record, stem, suffix, render, options.overwrite))
    return items


def finish_record(record: TakeRecord, chain: Chain, audio: np.ndarray,
                  options: ExportOptions) -> Any:
    """The take's audio finished by `chain`: a FinishedTake (engines.finish.take)."""
    from engines.finish.chain import finish
    from engines.finish.take import FinishedTake, finish_take

    if not chain.settings.loop:
        return finish_take(audio, chain.settings)
    loop = _loop(record, chain, audio, options)
    return FinishedTake(finish(loop.audio, chain.settings), chain.settings, loop)


def _loop(record: TakeRecord, chain: Chain, audio: np.ndarray, options: ExportOptions) -> Any:
    from engines.finish.loop import make_loop

    seam_s = chain.settings.loop_seam_s
    stored = chain.loop or {}
    by_crossfade = stored.get("method") == "crossfade"  # made so, so remade so
    why = None
    if record.is_imported:
        why = "it is imported audio, which no model set made"
    elif options.generate is None:
        why = "no model set was offered for it"
    if not by_crossfade and why is None:
        seed = stored.get("seed") if type(stored.get("seed")) is int else None
        try:
            return make_loop(audio, record.request(), options.generate, seam_s, seed)
        except StudioError as err:
            text = str(err).rstrip(".")
            why = f"its model could not make it ({text[:1].lower()}{text[1:]})"
    if why is not None and options.warn is not None and not by_crossfade:
        options.warn(f"The loop of take #{record.id} was made by crossfade, because {why}.")
    return make_loop(audio, None, None, seam_s)


def _render(record: TakeRecord, chain: Chain, options: ExportOptions,
            audio_of: Callable[[int], np.ndarray], target: Path) -> tuple[Path, dict]:
    from engines.store.wavmeta import build_comment

    finished = finish_record(record, chain, audio_of(record.id), options)
    note = build_comment({"prompt": record.prompt, "seed": record.seed, "model": record.model,
                          "library_id": record.id, "finish": finished.note()})
    temp = finished.writer(note, record.title()[:120])(target)
    audio = finished.finished.audio
    output = {"format": chain.settings.format, "sample_rate": finished.finished.rate,
              "samples": int(audio.shape[0]), "channels": int(audio.shape[1]),
              "seconds": round(audio.shape[0] / finished.finished.rate, 6)}
    made = finished.record()
    made["source"] = "stored" if chain.stored else "given"
    return temp, {"finishing": made, "output": output}
