"""A sound list rendered on the GPU worker thread (issue 12: File > Render sound list...).

The same pieces as `python main.py batch LIST --out DIR` (engines.batch: the plan, the
renderer's engine-then-finishing, the writer, the library keeper, the manifest and the loop), so
the window writes the same files, sidecars and manifest.json, skips what an earlier run (from
either) made with the same parameters, and stops after the current take with a valid manifest.
The differences are where it runs and who hears about it: the takes are made by the GPU
worker's own Generator (engines load once, for the window's whole life), and what the command
line prints goes to `ListEvents` callbacks, which the controller turns into Qt signals.

No Qt here.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from engines.batch.plan import FinishingFor, Plan
from engines.batch.workers import InlineRenderer, Rendered, TakeRenderer
from engines.delivery.names import DEFAULT_TEMPLATE
from engines.errors import StudioError
from engines.failures import sentence, shown
from engines.paths import library_path

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ListRequest:
    """What the Render sound list dialog asks for (the command line's defaults otherwise)."""

    list_path: Path
    out_dir: Path
    template: str = DEFAULT_TEMPLATE
    keep_in_library: bool = True
    force: bool = False  # render the takes already made again


@dataclass(frozen=True)
class TakeMade:
    """One take rendered and written by this run, for the session."""

    file: Path
    result: Any  # GenerationResult (its step latents dropped, as the batch does)
    library_id: int | None
    variation: int
    finishing: Any  # FinishSettings or None (the file holds the raw take)
    loop: Any  # engines.finish.loop.LoopResult, when the finishing made a model loop
    display: dict = field(default_factory=dict)  # app.displaydata view data of the raw take
    init_path: Path | None = None  # the row's init audio, for audio-to-audio and inpainting


@dataclass(frozen=True)
class ListSummary:
    counts: dict[str, int]  # manifest statuses: ok, skipped, failed, pending
    items: int
    cancelled: bool
    manifest: Path
    manifest_error: str | None
    audio_seconds: float
    wall_s: float


class ListEvents(Protocol):
    """What the run tells the window; called on the worker thread."""

    def say(self, kind: str, message: str) -> None: ...  # warning, error, note
    def started(self, position: int, total: int, file: str) -> None: ...
    def done(self, position: int, total: int, file: str, status: str) -> None: ...
    def made(self, take: TakeMade) -> None: ...


def check_request(request: ListRequest) -> None:
    """The dialog's values, refused with one sentence (StudioError) before anything runs."""
    from engines.delivery.names import check_template
    from engines.errors import RequestError

    if not str(request.list_path).strip() or not request.list_path.is_file():
        raise StudioError(f"The sound list {shown(request.list_path)} was not found; choose a "
                          "CSV or JSON file.")
    if not str(request.out_dir).strip():
        raise StudioError("Choose the folder to write the takes to.")
    if request.out_dir.exists() and not request.out_dir.is_dir():
        raise StudioError(f"{shown(request.out_dir)} is a file, not a folder; choose a "
                          "folder for the takes.")
    try:
        check_template(request.template)
    except RequestError as exc:
        raise StudioError(f"The name template is refused: {exc}") from None


def render_list(request: ListRequest, generator: Any, cancel: threading.Event,
                events: ListEvents, display: Callable[[Any], dict] | None = None) -> ListSummary:
    """Plan, render, write and record the list; StudioError (one sentence) when the list or the
    folder cannot be used, before anything is written."""
    from engines.batch.items import RowDefaults
    from engines.batch.keeping import LibraryKeeper
    from engines.batch.manifest import Manifest, header_for, read_earlier
    from engines.batch.output import TakeWriter
    from engines.batch.plan import make_plan
    from engines.batch.runner import run_batch

    check_request(request)
    sound_list = _read(request.list_path)
    if sound_list.unknown_keys:
        events.say("warning", f"The list has columns this command does not know, which are "
                              f"ignored: {', '.join(sound_list.unknown_keys)}.")
    out = request.out_dir
    earlier, problem = read_earlier(out) if out.is_dir() else ([], None)
    if problem:
        events.say("warning", problem)
    plan = make_plan(sound_list, out, template=request.template, defaults=RowDefaults(),
                     finishing_for=finishing_for(), earlier=earlier, force=request.force,
                     library_root=library_path(), labels=_studio_labels(events))
    for item in plan.problems:
        events.say("error", item.reason)
    _make_folder(out)
    skipped = len(plan.takes) - len(plan.to_render)
    if skipped:
        events.say("note", f"Skipping {skipped} take(s) already made with the same parameters.")
    header = header_for(sound_list.path, out, {"name_template": request.template, "jobs": 1,
                                               "library": request.keep_in_library,
                                               "force": request.force})
    manifest = Manifest.for_plan(out, header, plan.entries)
    progress = _Progress(len(plan.to_render), events)
    keeper = LibraryKeeper(request.keep_in_library, lambda text: events.say("warning", text))
    writer = _SessionWriter(TakeWriter(out, sound_list.path, keeper), events, display)
    files = {take.index: take.file for take in plan.takes}
    renderer = InlineRenderer(None, renderer=_SharedGenerator(generator),
                              on_start=lambda job: progress.started(files[job.index]))
    try:
        outcome = run_batch(plan, manifest, renderer, writer, progress, _Stop(cancel),
                            _cannot_run(generator, plan))
    finally:
        keeper.close()
    return ListSummary(manifest.counts(), len(plan.entries), outcome.cancelled, manifest.path,
                       outcome.manifest_error, outcome.audio_seconds, outcome.wall_s)


def _studio_labels(events: Any) -> Any:
    """The studio's names from settings for every file of the list (engines.delivery.labels);
    a damaged UCS list is said, and the files carry no UCS labels."""
    from engines.delivery.labels import make_labels
    from engines.delivery.take import Labels
    from engines.errors import StudioError

    try:
        return make_labels()
    except StudioError as exc:
        events.say("warning", str(exc))
        return Labels()


def finishing_for() -> FinishingFor:
    """The command line's finishing with no finishing flags: the row's preset (from the data
    folder's presets) and loop, else the raw take as a 16-bit WAV (engines.cli batch)."""
    from engines.finish.presets import get_preset
    from engines.finish.settings import FinishSettings
    from engines.paths import data_dir

    cache: dict[tuple, tuple[Any, str]] = {}

    def finishing(preset: str | None, loop: bool | None,
                  method: str | None = None) -> tuple[Any, str]:
        if (preset, loop, method) not in cache:
            settings = get_preset(data_dir(), preset).validate() if preset is not None else None
            if loop is not None and (settings is not None or loop):
                settings = replace(settings or FinishSettings(), loop=loop).validate()
            if method is not None and settings is not None and settings.loop:
                settings = replace(settings, loop_method=method).validate()
            if settings is not None and settings.is_identity and not settings.preset \
                    and settings.format == "wav16":
                settings = None  # e.g. loop 0 and nothing else: the raw take
            cache[(preset, loop, method)] = (settings, settings.format if settings else "wav16")
        return cache[(preset, loop, method)]

    return finishing


def _read(path: Path) -> Any:
    from engines.batch.sound_list import ListError, read_list

    try:
        return read_list(path)
    except ListError as exc:
        raise StudioError(str(exc)) from None


def _make_folder(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StudioError(sentence(f"Could not create the folder {shown(out)}", exc)) from exc


def _cannot_run(generator: Any, plan: Plan) -> dict[int, str]:
    """Takes whose model cannot run here (index -> reason): failed without loading anything."""
    from engines.batch.devices import engine_key, unavailable

    catalog = getattr(generator, "catalog", None)
    if catalog is None:
        return {}
    to_render = plan.to_render
    reasons = unavailable(catalog, [take.spec for take in to_render])
    return {t.index: reasons[engine_key(t.spec)] for t in to_render
            if engine_key(t.spec) in reasons}


class _Stop:
    """engines.batch.runner's stop request, read from the worker's cancel flag."""

    def __init__(self, cancel: threading.Event) -> None:
        self._cancel = cancel

    @property
    def requested(self) -> bool:
        return self._cancel.is_set()


class _Progress:
    """engines.batch.progress.Progress's interface, told to the window."""

    def __init__(self, total: int, events: ListEvents) -> None:
        self.total = total
        self.events = events
        self.started_count = 0
        self.done_count = 0

    def started(self, file: str) -> None:
        self.started_count += 1
        self.events.started(self.started_count, self.total, file)

    def take_done(self, file: str, status: str, seconds: float) -> None:
        self.done_count += 1
        self.events.done(self.done_count, self.total, file, status)

    def say(self, kind: str, message: object) -> None:
        self.events.say(kind, str(message))

    def close(self) -> None:
        pass


class _SharedGenerator(TakeRenderer):
    """The batch's engine-then-finishing over the worker's Generator, which it never closes:
    the worker owns it for the window's whole life."""

    def __init__(self, generator: Any) -> None:  # no super().__init__: it makes a Generator
        self.generator = generator

    def close(self) -> None:
        pass


class _SessionWriter:
    """engines.batch.output.TakeWriter, and each take it wrote handed to the session."""

    def __init__(self, writer: Any, events: ListEvents,
                 display: Callable[[Any], dict] | None) -> None:
        self._writer = writer
        self._events = events
        self._display = display

    def write(self, take: Any, rendered: Rendered) -> dict[str, Any]:
        changes = self._writer.write(take, rendered)
        if changes.get("status") == "ok":
            finished = rendered.finished
            made = TakeMade(self._writer.out_dir / take.file, rendered.result,
                            changes.get("library_id"), take.variation, take.finishing,
                            finished.loop if finished is not None else None,
                            self._view_data(rendered.result), take.spec.init_audio)
            try:
                self._events.made(made)
            except Exception:  # noqa: BLE001 - the take is written and kept all the same
                log.warning("could not hand a list take to the session", exc_info=True)
        return changes

    def _view_data(self, result: Any) -> dict:
        if self._display is None:
            return {}
        try:
            return self._display(result)
        except Exception:  # noqa: BLE001 - the take is written; the views compute it later
            log.warning("could not prepare the view data of a list take", exc_info=True)
            return {}
