"""From checked rows to the takes a batch renders, decided before anything is rendered: every
take's file name, seed and parameters hash, in list order. Names and seeds come from the list
(random seeds are drawn here, once, in the parent), never from the order takes finish in, so the
output is the same whatever the number of workers.

A rerun looks each take up in the earlier manifest by (name, variation, parameters hash): a take
whose seed was random gets the seed it was given then, and one already rendered with the same
parameters, whose file is still there, is skipped.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engines.audio_io.formats import suffix_for
from engines.batch.items import LIST_WORDS, RowDefaults, RowError, RowSpec, parse_row
from engines.batch.sound_list import SoundList
from engines.delivery.delivery_take import Labels
from engines.delivery.guard import Protected
from engines.delivery.labels import make_labels
from engines.delivery.names import render_name
from engines.errors import Advice, RequestError
from engines.finish.loop_plan import check_loop_fits
from engines.finish.settings import FinishSettings
from engines.request import MAX_SEED

HASH_VERSION = 1
DONE = ("ok", "skipped")
MANIFEST_STEM = "manifest"
MANIFEST_NAME = "manifest.json"  # written by engines.batch.manifest

# finishing_for(row preset, row loop, row loop_method; each None when not given) -> (settings or
# None, format): the command line's finishing with the row's preset and loop applied
# (RequestError if refused).
FinishingFor = Callable[[str | None, bool | None, str | None], tuple[FinishSettings | None, str]]


@dataclass(frozen=True)
class PlannedTake:
    index: int  # its place in the manifest
    spec: RowSpec
    variation: int  # 1-based
    seed: int
    seed_was_random: bool
    seed_from_earlier: bool  # a random seed an earlier run drew (and recorded) for this take
    file: str  # file name inside the output folder
    params_hash: str
    finishing: FinishSettings | None  # None: the raw take
    fmt: str
    earlier: dict | None  # the earlier manifest's entry when the take is skipped, else None
    labels: Labels = field(default_factory=Labels)  # UCS blocks and names for the file

    @property
    def skipped(self) -> bool:
        return self.earlier is not None

    @property
    def where(self) -> str:
        return self.spec.where


@dataclass(frozen=True)
class Problem:
    """A row (or one take of it) that cannot be rendered, with the sentence that says why."""

    index: int
    where: str
    name: str
    reason: str
    file: str | None = None


@dataclass(frozen=True)
class Plan:
    entries: list[PlannedTake | Problem]

    @property
    def takes(self) -> list[PlannedTake]:
        return [e for e in self.entries if isinstance(e, PlannedTake)]

    @property
    def to_render(self) -> list[PlannedTake]:
        return [e for e in self.entries if isinstance(e, PlannedTake) and not e.skipped]

    @property
    def problems(self) -> list[Problem]:
        return [e for e in self.entries if isinstance(e, Problem)]


def make_plan(sound_list: SoundList, out_dir: Path, *, template: str, defaults: RowDefaults,
              finishing_for: FinishingFor, earlier: list[dict], force: bool,
              library_root: Path | None = None, labels: Labels | None = None) -> Plan:
    """The takes of the list, and the rows that cannot be rendered. A take whose file or
    sidecar would land on an input of this run (the list, the manifest, any row's init audio)
    or inside the library folder `library_root` is refused here, before any render."""
    protected = Protected(library_root=library_root)
    protected.add_input(sound_list.path, "the sound list")
    protected.add_input(out_dir / MANIFEST_NAME, "the manifest of this folder")
    for row in sound_list.rows:  # every row's init audio, before any name is given out
        init = row.values.get("init_audio")
        if isinstance(init, str) and init.strip():
            protected.add_input(sound_list.folder / Path(init.strip()).expanduser(),
                                f"the init audio of {row.where}")
    planner = _Planner(out_dir, template, force, earlier, protected, labels or Labels())
    for row in sound_list.rows:
        name = row.values.get("name")
        name = name.strip() if isinstance(name, str) else ""
        if row.problem is not None:
            planner.problem(row.where, name, f"{row.where}: {row.problem}.")
            continue
        try:
            spec = parse_row(row.where, row.values, sound_list.folder, defaults)
            finishing, fmt = finishing_for(spec.preset, spec.loop, spec.loop_method)
        except RowError as exc:
            planner.problem(row.where, name, str(exc))
        except RequestError as exc:
            planner.problem(row.where, name, f"{row.where}: {exc}")
        else:
            planner.add_row(spec, finishing, fmt)
    return Plan(planner.entries)


class _Planner:
    def __init__(self, out_dir: Path, template: str, force: bool, earlier: list[dict],
                 protected: Protected, labels: Labels) -> None:
        self.out_dir = out_dir
        self.protected = protected
        self.labels = labels
        self.template = template
        self.force = force
        self.earlier = {_key(e.get("name"), e.get("variation"), e.get("params_hash")): e
                        for e in earlier if isinstance(e, dict)}
        self.entries: list[PlannedTake | Problem] = []
        self.used: dict[str, str] = {}  # name_key(stem) -> where it was first used

    def problem(self, where: str, name: str, reason: str, file: str | None = None) -> None:
        self.entries.append(Problem(len(self.entries), where, name, reason, file))

    def add_row(self, spec: RowSpec, finishing: FinishSettings | None, fmt: str) -> None:
        if not self._loop_fits(spec, finishing):
            return
        labels = self._row_labels(spec)
        if labels is None:
            return
        hashes = [params_hash(spec, k, finishing, fmt) for k in range(1, spec.variations + 1)]
        found = [self.earlier.get(_key(spec.name, k, h)) for k, h in enumerate(hashes, 1)]
        seeds, reused = _row_seeds(spec, found)
        preset = (finishing.preset if finishing is not None else "") or ""
        for k, (seed, digest, before) in enumerate(zip(seeds, hashes, found, strict=True), 1):
            file = self._file(spec, k, seed, preset, fmt, labels)
            if file is None:
                continue
            skip = (not self.force and before is not None and before.get("status") in DONE
                    and before.get("file") == file and (self.out_dir / file).is_file())
            self.entries.append(PlannedTake(len(self.entries), spec, k, seed, spec.seed is None,
                                     reused, file, digest, finishing, fmt,
                                     before if skip else None, labels))

    def _row_labels(self, spec: RowSpec) -> Labels | None:
        """The run's labels with the row's own (category as a UCS CatID, fx_name, creator,
        source) on top; None after recording why a row's CatID is refused (checked against
        the user's UCS list before any render)."""
        run = self.labels
        if not (spec.category or spec.fx_name or spec.creator or spec.source):
            return run
        try:
            return make_labels(spec.category or run.catid, spec.fx_name or run.fx_name,
                               spec.creator or run.creator, spec.source or run.source)
        except RequestError as exc:
            self.problem(spec.where, spec.name, f"{spec.where}: the category column: {exc}")
            return None

    def _loop_fits(self, spec: RowSpec, finishing: FinishSettings | None) -> bool:
        """A row whose loop cannot fit its length is refused before any render."""
        if finishing is None or not finishing.loop or spec.seconds is None:
            return True
        try:
            check_loop_fits(spec.seconds, finishing.loop_seam_s, finishing.loop_method)
        except RequestError as exc:
            text = exc.args[0]
            said = text.worded(LIST_WORDS) if isinstance(text, Advice) else str(exc)
            self.problem(spec.where, spec.name, f"{spec.where}: {said}")
            return False
        return True

    def _file(self, spec: RowSpec, variation: int, seed: int, preset: str, fmt: str,
              labels: Labels) -> str | None:
        """The take's file name, or None after recording why it cannot have one."""
        where = spec.where
        try:
            stem = render_name(self.template, name=spec.name, prompt=spec.prompt, seed=seed,
                               n=variation, preset=preset, category=spec.category,
                               catid=labels.catid, fxname=labels.fx_name or spec.name,
                               creator=labels.creator, source=labels.source,
                               of=spec.variations)
        except RequestError as exc:
            self.problem(where, spec.name, f"{where}: {exc}")
            return None
        file = stem + suffix_for(fmt)
        key = name_key(stem)  # the sidecar is stem.json whatever the audio's suffix
        if key == MANIFEST_STEM:
            self.problem(where, spec.name, f"{where}: the file name {file} would put its "
                         "sidecar over manifest.json; change the name or the name template.")
            return None
        if key in self.used:
            self.problem(where, spec.name, f"{where}: {file} is already the name of a take "
                         f"from {self.used[key]}; give this sound another name.", file)
            return None
        try:
            self.protected.check(self.out_dir / file, "file")
            self.protected.check(self.out_dir / f"{stem}.json", "sidecar")
        except RequestError as exc:
            self.problem(where, spec.name, f"{where}: {exc}", file)
            return None
        self.used[key] = where
        return file


def _row_seeds(spec: RowSpec, found: list[dict | None]) -> tuple[list[int], bool]:
    """Variation k's seed: the row's seed + k - 1. A random row seed is drawn once, or taken
    back from the earlier run (then True), so a rerun renders the same takes."""
    if spec.seed is not None:
        return [spec.seed + k for k in range(spec.variations)], False
    top = MAX_SEED - (spec.variations - 1)
    base = None
    for k, before in enumerate(found):
        seed = before.get("seed") if before is not None else None
        if isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed - k <= top:
            base = seed - k
            break
    reused = base is not None
    if base is None:
        base = secrets.randbelow(top + 1)
    return [base + k for k in range(spec.variations)], reused


def params_hash(spec: RowSpec, variation: int, finishing: FinishSettings | None,
                fmt: str) -> str:
    """SHA-256 of everything that decides a take's audio. A random seed counts as "random"
    (plus the variation), so a rerun finds the take whatever seed it was given. The backend is
    left out: the same take on another backend is the same sound, within rounding."""
    seed: Any = (spec.seed + variation - 1 if spec.seed is not None
                 else f"random:{variation}")
    payload = {
        "version": HASH_VERSION, "prompt": spec.prompt, "negative_prompt": spec.negative_prompt,
        "model": spec.model, "decoder": spec.decoder, "precision": spec.precision,
        "seconds": spec.seconds, "steps": spec.steps, "seed": seed, "cfg": spec.cfg,
        "apg": spec.apg,
        "init_sha256": spec.init_entry["sha256"] if spec.init_entry else None,
        "init_noise_level": spec.init_noise_level, "inpaint": [list(s) for s in spec.inpaint],
        "finishing": finishing.to_dict() if finishing is not None else None, "format": fmt,
    }
    if spec.codec_tier is not None:  # only then: the takes of earlier manifests keep their hash
        payload["codec_tier"] = spec.codec_tier
    if spec.adapters:  # likewise: a row without adapters keeps the hash it had
        payload["adapters"] = [[digest, choice.effective_strength] for digest, choice
                               in zip(spec.adapter_sha256, spec.adapters, strict=False)]
    text = json.dumps(payload, sort_keys=True, ensure_ascii=True, allow_nan=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def name_key(stem: str) -> str:
    """Names that one file system would take for the same file (case-insensitive ones too)."""
    return unicodedata.normalize("NFC", stem).casefold()


def _key(name: Any, variation: Any, digest: Any) -> tuple:
    return (str(name).strip() if name is not None else "", variation, digest)
