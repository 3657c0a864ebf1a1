"""One batch session, the same for both front ends (`python main.py batch` in engines.cli.batch,
File > Render sound list... in app.batch.run): a sound list planned, rendered, written, kept in
the library and recorded in DIR/manifest.json.

    session = BatchSession(options, events)
    plan = session.plan()          # the list and the earlier run's manifest read; takes planned
    session.make_folder(check)     # the output folder created (and tested by the front end)
    summary = session.render(...)  # every take rendered, written, kept and recorded

The front ends differ only in what they hand in: the row defaults, finishing and labels
(BatchOptions: the flags on the command line; the presets and the studio's settings in the
window), where takes are rendered (worker processes, or a Generator the window owns) and how a
stop is asked for (Ctrl+C, or a cancel flag). What happens is told through BatchEvents; the
front ends word the rest (the plan, the skipped takes, the summary).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engines.batch.devices import (
    cuda_devices_per_worker,
    engine_key,
    unavailable,
    uses_tensorrt,
    visible_gpu_count,
)
from engines.batch.items import RowDefaults
from engines.batch.library_keeper import LibraryKeeper
from engines.batch.manifest import Manifest, header_for, read_earlier
from engines.batch.output import TakeWriter
from engines.batch.plan import FinishingFor, Plan, PlannedTake, make_plan
from engines.batch.resume import verified
from engines.batch.runner import RenderQueue, StopRequest, run_batch
from engines.batch.sound_list import ListError, read_list
from engines.batch.workers import InlineRenderer, RenderedTake, TakeJob, TakeRenderer, WorkerPool
from engines.delivery.delivery_take import Labels
from engines.delivery.labels import make_labels, unchecked_catid
from engines.delivery.names import DEFAULT_TEMPLATE
from engines.error_sentences import sentence, shown
from engines.errors import StudioError
from engines.finish.presets import get_preset
from engines.finish.settings import FinishSettings
from engines.paths import data_dir, library_path

if TYPE_CHECKING:
    from engines.catalog import Catalog
    from engines.generator import Generator

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BatchOptions:
    """What a session renders, and how. The defaults are those of no flags at all."""

    list_path: Path
    out_dir: Path
    template: str = DEFAULT_TEMPLATE
    defaults: RowDefaults = field(default_factory=RowDefaults)  # for rows that give none
    finishing_for: FinishingFor | None = None  # None: preset_finishing()
    labels: Labels | None = None  # None: the studio's labels from settings (studio_labels)
    keep_in_library: bool = True
    force: bool = False  # render the takes already made again


@dataclass(frozen=True)
class BatchSummary:
    counts: dict[str, int]  # manifest statuses: ok, skipped, failed, pending
    items: int  # takes and bad rows
    cancelled: bool
    manifest: Path
    manifest_error: str | None  # why the manifest could not be written (already said)
    audio_seconds: float
    wall_s: float


class BatchEvents:
    """What a session tells its front end, on the thread that runs it. Each does nothing here:
    a front end overrides what it shows."""

    def say(self, kind: str, message: object) -> None:
        """One sentence: kind warning, error or cancelled."""

    def begin(self, total: int) -> None:
        """Rendering starts: `total` takes to render."""

    def started(self, file: str) -> None:
        """A take starts rendering (told when takes render in this process)."""

    def take_done(self, file: str, status: str, seconds: float) -> None:
        """A take is recorded in the manifest: status ok or failed."""

    def written(self, path: Path, take: PlannedTake, rendered: RenderedTake,
                library_id: int | None) -> None:
        """A take's file is in place (and kept in the library as `library_id`)."""

    def end(self) -> None:
        """Rendering is over, however it ended."""


class BatchSession:
    def __init__(self, options: BatchOptions, events: BatchEvents | None = None) -> None:
        self.options = options
        self.events = events if events is not None else BatchEvents()
        self.earlier: list[dict] = []  # the earlier run's manifest entries, as trusted
        self._plan: Plan | None = None
        self._list_path = options.list_path  # as read (engines.batch.sound_list)

    def plan(self) -> Plan:
        """Read the list and what an earlier run made in the folder (only takes whose files
        check out count as made: engines.batch.resume), and plan every take; bad rows are said
        and planned as problems. StudioError (one sentence) when the list cannot be used."""
        options, say = self.options, self.events.say
        try:
            sound_list = read_list(options.list_path)
        except ListError as exc:
            raise StudioError(str(exc)) from None
        if sound_list.unknown_keys:
            say("warning", f"The list has columns that SA3 Studio does not know, which are "
                           f"ignored: {', '.join(sound_list.unknown_keys)}.")
        out = options.out_dir
        earlier, problem = read_earlier(out) if out.is_dir() else ([], None)
        if problem:
            say("warning", problem)
        if earlier and not options.force:
            earlier, doubtful = verified(out, earlier)
            if doubtful:
                say("warning", f"{doubtful} take(s) the manifest lists as made are missing, "
                               "damaged or not the takes it describes; they are rendered again.")
        labels = options.labels if options.labels is not None else studio_labels(say)
        plan = make_plan(sound_list, out, template=options.template, defaults=options.defaults,
                         finishing_for=options.finishing_for or preset_finishing(),
                         earlier=earlier, force=options.force, library_root=library_path(),
                         labels=labels)
        for item in plan.problems:
            say("error", item.reason)
        try:  # once for the whole list: CatIDs no UCS list could check
            unchecked = unchecked_catid(take.labels.catid for take in plan.takes)
        except StudioError:  # a damaged list: the rows' CatIDs were refused, and said
            unchecked = None
        if unchecked is not None:
            say("warning", unchecked)
        self.earlier, self._plan, self._list_path = earlier, plan, sound_list.path
        return plan

    def make_folder(self, check: Callable[[Path, Plan], None] | None = None) -> None:
        """Create the output folder; `check(folder, plan)` (the front end's own test that the
        takes can be written there) runs in it, and a folder made here is removed again when
        the check refuses it. StudioError when the folder cannot be created."""
        out = self.options.out_dir
        created = not out.exists()
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StudioError(sentence(f"Could not create the folder {shown(out)}", exc)) from exc
        if check is None:
            return
        try:
            check(out, self._planned())
        except Exception:
            if created:
                try:
                    out.rmdir()
                except OSError:
                    pass
            raise

    def render(self, *, catalog: Catalog | None = None, jobs: int = 1,
               cuda_devices: list[str | None] | None = None, models_dir: Path | None = None,
               generator: Generator | None = None,
               cancel: threading.Event | None = None) -> BatchSummary:
        """Render every planned take not made yet; each is written, kept and recorded (the
        manifest saved) as it comes back.

        catalog: what can run here; takes it cannot run fail without loading anything (None:
        every take is tried). jobs: worker processes over `models_dir`, worker i with
        CUDA_VISIBLE_DEVICES cuda_devices[i]; 1 renders in this process. generator: a
        Generator the caller owns and keeps (the window's GPU worker), rendered on here and
        never closed. cancel: a flag that asks to stop after the current take; None: Ctrl+C
        asks, and SIGTERM stops now (engines.batch.runner.StopRequest)."""
        if generator is not None and jobs != 1:
            raise ValueError("a caller's generator renders in this process: jobs must be 1")
        plan, options, events = self._planned(), self.options, self.events
        to_render = plan.to_render
        cannot_run = _cannot_run(catalog, to_render)
        header = header_for(self._list_path, options.out_dir,
                            {"name_template": options.template, "jobs": jobs,
                             "library": options.keep_in_library, "force": options.force})
        manifest = Manifest.for_plan(options.out_dir, header, plan.entries)
        keeper = LibraryKeeper(options.keep_in_library, lambda text: events.say("warning", text))
        events.begin(len(to_render))
        try:
            with _stop_request(cancel, events) as stop:
                if len(cannot_run) == len(to_render):
                    renderer: RenderQueue = _NothingToRender()
                else:
                    renderer = self._renderer(jobs, models_dir, catalog, cuda_devices, generator)
                writer = _TellingWriter(TakeWriter(options.out_dir, self._list_path, keeper),
                                        events)
                outcome = run_batch(plan, manifest, renderer, writer, events, stop, cannot_run)
        finally:
            events.end()
            keeper.close()
        return BatchSummary(manifest.counts(), len(plan.entries), outcome.cancelled,
                            manifest.path, outcome.manifest_error, outcome.audio_seconds,
                            outcome.wall_s)

    def _planned(self) -> Plan:
        if self._plan is None:
            raise RuntimeError("plan() comes first")
        return self._plan

    def _renderer(self, jobs: int, models_dir: Path | None, catalog: Catalog | None,
                  cuda_devices: list[str | None] | None,
                  generator: Generator | None) -> RenderQueue:
        files = {take.index: take.file for take in self._planned().to_render}

        def on_start(job: TakeJob) -> None:
            self.events.started(files[job.index])

        if generator is not None:
            return InlineRenderer(None, renderer=_SharedGenerator(generator), on_start=on_start)
        if jobs == 1:
            return InlineRenderer(models_dir, catalog, on_start=on_start)
        return WorkerPool(jobs, models_dir, list(cuda_devices or [None]))


def choose_workers(catalog: Catalog, plan: Plan,
                   jobs: int | None) -> tuple[int, list[str | None]]:
    """(worker count, CUDA_VISIBLE_DEVICES per worker): `jobs` when given, else one per visible
    GPU when the takes run on TensorRT, else 1; never more than the takes to render."""
    specs = [take.spec for take in plan.to_render]
    tensorrt = bool(specs) and uses_tensorrt(catalog, specs)
    gpus = visible_gpu_count() if tensorrt else 0
    count = jobs if jobs is not None else (gpus if gpus > 1 else 1)
    count = max(1, min(count, len(specs)))
    return count, cuda_devices_per_worker(count, gpus if tensorrt else 0)


def with_row_loop(settings: FinishSettings | None, loop: bool | None,
                  method: str | None) -> FinishSettings | None:
    """A row's `loop` and `loop_method` columns on top of the finishing it starts from; None
    when nothing is left to do but a 16-bit WAV of the raw take (e.g. loop 0 and no more)."""
    if loop is not None and (settings is not None or loop):
        settings = replace(settings or FinishSettings(), loop=loop).validate()
    if method is not None and settings is not None and settings.loop:
        settings = replace(settings, loop_method=method).validate()
    if settings is not None and settings.is_identity and not settings.preset \
            and settings.format == "wav16":
        return None
    return settings


def preset_finishing() -> FinishingFor:
    """The finishing of no finishing flags: the row's preset (from the data folder's presets)
    and loop, else the raw take as a 16-bit WAV."""
    cache: dict[tuple, tuple[FinishSettings | None, str]] = {}

    def finishing(preset: str | None, loop: bool | None,
                  method: str | None = None) -> tuple[FinishSettings | None, str]:
        if (preset, loop, method) not in cache:
            settings = get_preset(data_dir(), preset).validate() if preset is not None else None
            settings = with_row_loop(settings, loop, method)
            cache[(preset, loop, method)] = (settings, settings.format if settings else "wav16")
        return cache[(preset, loop, method)]

    return finishing


def studio_labels(say: Callable[[str, object], None]) -> Labels:
    """The studio's names from settings for every file of the list (engines.delivery.labels);
    a damaged UCS list is said, and the files carry no UCS labels."""
    try:
        return make_labels()
    except StudioError as exc:
        say("warning", str(exc))
        return Labels()


def _cannot_run(catalog: Catalog | None, to_render: list[PlannedTake]) -> dict[int, str]:
    """Takes whose engines cannot run here (index -> reason)."""
    if catalog is None:
        return {}
    reasons = unavailable(catalog, [take.spec for take in to_render])
    return {t.index: reasons[engine_key(t.spec)] for t in to_render
            if engine_key(t.spec) in reasons}


def _stop_request(cancel: threading.Event | None,
                  events: BatchEvents) -> StopRequest | _CancelFlag:
    return StopRequest(events) if cancel is None else _CancelFlag(cancel)  # type: ignore[arg-type]


class _CancelFlag:
    """engines.batch.runner's stop request, read from a caller's cancel flag."""

    def __init__(self, cancel: threading.Event) -> None:
        self._cancel = cancel

    @property
    def requested(self) -> bool:
        return self._cancel.is_set()

    def __enter__(self) -> _CancelFlag:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class _NothingToRender:
    """The renderer when every take is skipped or cannot run: no engine is loaded."""

    def has_room(self) -> bool:
        return False

    def submit(self, job: TakeJob) -> None:
        raise RuntimeError("no take is to be rendered")

    def next_result(self) -> RenderedTake:
        raise RuntimeError("no take is to be rendered")

    def close(self, wait: bool = True) -> None:
        pass


class _SharedGenerator(TakeRenderer):
    """The batch's engine-then-finishing over a caller's Generator, which it never closes: the
    caller owns it (the window's GPU worker, for the window's whole life)."""

    def __init__(self, generator: Generator) -> None:  # no super().__init__: it makes one
        self.generator = generator

    def close(self) -> None:
        pass


class _TellingWriter:
    """engines.batch.output.TakeWriter, and each take it put in place told to the front end."""

    def __init__(self, writer: TakeWriter, events: BatchEvents) -> None:
        self._writer = writer
        self._events = events

    def write(self, take: PlannedTake, rendered: RenderedTake) -> dict[str, Any]:
        changes = self._writer.write(take, rendered)
        if changes.get("status") == "ok":
            try:
                self._events.written(self._writer.out_dir / take.file, take, rendered,
                                     changes.get("library_id"))
            except Exception:  # noqa: BLE001 - the take is written and kept all the same
                log.warning("could not hand a written take to the front end", exc_info=True)
        return changes


__all__ = ["BatchEvents", "BatchOptions", "BatchSession", "BatchSummary", "choose_workers",
           "preset_finishing", "studio_labels"]
