"""What an export writes for each take: its file name (the one name rule, engines.delivery.
names: the export name template in settings unless one is given) and its audio (the take as it
was made, or finished by a chain), as ExportItems and the DeliveryTake each one becomes.

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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from engines.audio_io import float_from_pcm16
from engines.delivery.delivery_take import DeliveryTake, Labels, from_record
from engines.delivery.guard import Protected
from engines.delivery.labels import take_labels
from engines.delivery.names import check_template, default_template, take_stem
from engines.errors import RequestError, StudioError
from engines.finish.chain import finish
from engines.finish.finished_take import FinishedTake, finish_take
from engines.finish.loop import Generate, LoopResult, make_loop
from engines.finish.settings import FinishSettings
from engines.store.export import ExportItem, export_to_folder, export_to_zip
from engines.store.lookup import TakeLookup
from engines.store.records import LibraryError, TakeRecord
from engines.store.take_audio import TakeAudio

"""generate(request) -> float (N, 2) audio at 44.1 kHz (e.g. a Generator's pcm / 32767)."""

# How the library's stored files map onto delivery formats, to tell a real conversion from
# a copy: generated takes are 16-bit WAV, imports 24-bit FLAC or 32-bit float WAV.
_STORED_AS = {"wav16": "wav16", "flac": "flac", "wav": "wav32f"}


@dataclass(frozen=True)
class ExportOptions:
    template: str | None = None  # engines.delivery.names template; None: the one in settings
    category: str = ""  # the template's {category} and the files' UCS CatID
    labels: Labels | None = None  # the studio's names (and defaults) for the files' metadata
    # Labels given again for this export (engines.delivery.labels.label_changes): they replace
    # only these fields of the labels each take keeps; the rest stay the take's own.
    given_labels: Mapping[str, str] | None = None
    settings: FinishSettings | None = None  # for every take (already validated), or None
    format: str | None = None  # a delivery format for takes `settings` does not finish
    use_stored: bool = False  # finish takes by their stored chain when `settings` is None
    generate: Generate | None = None  # runs a take's model set, for loops
    warn: Callable[[str], None] | None = None  # one sentence when a loop falls back
    overwrite: bool = False  # replace files of the same name instead of numbering
    written: Callable[[TakeRecord, Path, dict], None] | None = None  # see export.Written
    day: _dt.date | None = None  # the template's {date}; today when None
    protected: Protected | None = None  # outputs refused (inputs, the library's folders)


@dataclass(frozen=True)
class Chain:
    """How one take is finished: its settings, where they came from, the stored loop."""

    settings: FinishSettings
    stored: bool  # the take's own stored chain (rather than the caller's)
    loop: dict | None = None  # the stored loop's {"method", "seed"}, to make it again


def chain_for(record: TakeRecord, options: ExportOptions) -> Chain | None:
    """The chain that finishes `record` in this export; None: its own file is copied."""
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


def raw_format(record: TakeRecord) -> str:
    """The delivery format a take leaves in unfinished: what its stored file holds."""
    return _STORED_AS.get(record.file_format, "wav16")


def labels_for(options: ExportOptions, record: TakeRecord) -> Labels:
    """The labels `record`'s files carry: the take's own, with what this export gives again
    on top (engines.delivery.labels.take_labels)."""
    given = dict(options.given_labels or {})
    if options.category and not given.get("catid"):
        given["catid"] = options.category
    return take_labels(options.labels or Labels(), record.labels, given)


def export_items(records: list[TakeRecord], options: ExportOptions,
                 numbers: Mapping[int, tuple[int, int]] | None = None,
                 ) -> tuple[list[ExportItem], dict[int, Chain | None]]:
    """One ExportItem a take, and the chain each one is finished by (None: as made).
    `numbers`: each take's (variation number, set size) by id (engines.store.families), for
    {n} and UCS numbering; a take without one is a set of one."""
    template = options.template or default_template()
    check_template(template)
    items: list[ExportItem] = []
    chains: dict[int, Chain | None] = {}
    for record in records:
        chain = chain_for(record, options)
        chains[record.id] = chain
        take = from_record(record, np.zeros((1, 2), np.int16)).with_labels(
            labels_for(options, record))
        n, of = (numbers or {}).get(record.id, (1, 1))
        stem = take_stem(template, take, n, chain.settings.preset if chain else "",
                         options.day, of)
        fmt = chain.settings.format if chain is not None else raw_format(record)
        items.append(ExportItem(record, stem, fmt, options.overwrite))
    return items, chains


class TakeMaker:
    """take_of(item) for engines.store.export: the item's take with its verified audio
    (`load(take_id)`, engines.store's verified_audio), finished by its chain."""

    def __init__(self, options: ExportOptions, chains: dict[int, Chain | None],
                 load: Callable[[int], np.ndarray]) -> None:
        self._options = options
        self._chains = chains
        self._load = load

    def __call__(self, item: ExportItem) -> DeliveryTake:
        record = item.record
        audio = self._load(record.id)
        chain = self._chains.get(record.id)
        finished = None
        if chain is not None:
            floats = float_from_pcm16(audio) if audio.dtype == np.int16 else audio
            finished = finish_record(record, chain, floats, self._options)
        take = from_record(record, audio, finished).with_labels(
            labels_for(self._options, record))
        if chain is not None:
            take = take.with_finishing_source("stored" if chain.stored else "given")
        return take


def finish_record(record: TakeRecord, chain: Chain, audio: np.ndarray,
                  options: ExportOptions) -> FinishedTake:
    """The take's audio finished by `chain`."""
    if not chain.settings.loop:
        finished = finish_take(audio, chain.settings)
    else:
        loop = _loop(record, chain, audio, options)
        finished = FinishedTake(finish(loop.audio, chain.settings), chain.settings, loop)
    for warning in finished.warnings if options.warn is not None else []:
        options.warn(f"Take #{record.id}: {warning[:1].lower()}{warning[1:]}")
    return finished


def _loop(record: TakeRecord, chain: Chain, audio: np.ndarray,
          options: ExportOptions) -> LoopResult:
    seam_s = chain.settings.loop_seam_s
    stored = chain.loop or {}
    # made so, so remade so; or asked for
    by_crossfade = stored.get("method") == "crossfade" or chain.settings.loop_method == "crossfade"
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
    try:
        loop = make_loop(audio, None, None, seam_s)
    except StudioError as err:  # the crossfade cannot be made either: one sentence, no warning
        if by_crossfade or why is None:
            raise
        text = str(err).rstrip(".")
        raise LibraryError(f"Take #{record.id} cannot be made into a loop: {why}, and "
                           f"{text[:1].lower()}{text[1:]}.") from err
    if why is not None and options.warn is not None and not by_crossfade:
        options.warn(f"The loop of take #{record.id} was made by crossfade, because {why}.")
    return loop


class LibraryExport:
    """Takes out of one library, through the delivery layer: found through `lookup`, their
    audio verified through `audio`, nothing written inside the library folder `root`."""

    def __init__(self, lookup: TakeLookup, audio: TakeAudio, root: Path) -> None:
        self._lookup = lookup
        self._audio = audio
        self._root = root

    def export(self, ids: Iterable[int], folder: Path,
               options: ExportOptions | None = None) -> list[Path]:
        """Write takes and a JSON sidecar each into `folder`: as made, or finished as
        `options` ask. Returns the audio paths (each sidecar is the same name ending in .json).
        A name already in use gets a number (_2, ...) unless options.overwrite."""
        options = options or ExportOptions()
        items, take_of = self._plan(ids, options)
        return export_to_folder(items, folder, take_of, options.written,
                                self._protected(options))

    def export_zip(self, ids: Iterable[int], zip_path: Path,
                   options: ExportOptions | None = None) -> Path:
        """One zip with the takes (or finished files) and their sidecars, written atomically."""
        options = options or ExportOptions()
        items, take_of = self._plan(ids, options)
        return export_to_zip(items, zip_path, take_of, options.written,
                             self._protected(options))

    def _plan(self, ids: Iterable[int], options: ExportOptions
              ) -> tuple[list[ExportItem], TakeMaker]:
        records = self._lookup.records(ids)
        items, chains = export_items(records, options, self._lookup.variation_numbers(records))
        return items, TakeMaker(options, chains, self._audio.verified_audio)

    def _protected(self, options: ExportOptions) -> Protected:
        protected = options.protected or Protected()
        return Protected(dict(protected.inputs), self._root)
