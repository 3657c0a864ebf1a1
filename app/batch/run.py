"""A sound list rendered on the GPU worker thread (issue 12: File > Render sound list...).

The batch session of `python main.py batch LIST --out DIR` (engines.batch.session), so the
window writes the same files, sidecars and manifest.json, skips what an earlier run (from
either) made with the same parameters, and stops after the current take with a valid manifest.
What is the window's own: the dialog's values and their refusals, the takes rendered by the GPU
worker's own Generator (engines load once, for the window's whole life) and stopped by its
cancel flag, and what the session tells going to `ListEvents` callbacks, which the controller
turns into Qt signals.

No Qt here.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from engines.batch.plan import PlannedTake
from engines.batch.session import BatchEvents, BatchOptions, BatchSession, BatchSummary
from engines.batch.workers import RenderedTake
from engines.delivery.names import DEFAULT_TEMPLATE, check_template
from engines.error_sentences import shown
from engines.errors import RequestError, StudioError

if TYPE_CHECKING:
    from engines.finish.loop import LoopResult
    from engines.finish.settings import FinishSettings
    from engines.generation_result import GenerationResult
    from engines.generator import Generator

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
    result: GenerationResult  # its step latents dropped, as the batch does
    library_id: int | None
    variation: int
    finishing: FinishSettings | None  # None: the file holds the raw take
    loop: LoopResult | None  # when the finishing made a model loop
    display: dict = field(default_factory=dict)  # app.common.displaydata view data of the raw take
    init_path: Path | None = None  # the row's init audio, for audio-to-audio and inpainting


class ListEvents(Protocol):
    """What the run tells the window; called on the worker thread."""

    def say(self, kind: str, message: str) -> None: ...  # warning, error, note
    def started(self, position: int, total: int, file: str) -> None: ...
    def done(self, position: int, total: int, file: str, status: str) -> None: ...
    def made(self, take: TakeMade) -> None: ...


def check_request(request: ListRequest) -> None:
    """The dialog's values, refused with one sentence (StudioError) before anything runs."""
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


def render_list(request: ListRequest, generator: Generator, cancel: threading.Event,
                events: ListEvents,
                display: Callable[[GenerationResult], dict] | None = None) -> BatchSummary:
    """Plan, render, write and record the list with the worker's `generator` (the row
    defaults, the presets' finishing and the studio's labels of no flags; one take at a time);
    StudioError (one sentence) when the list or the folder cannot be used, before anything is
    written."""
    check_request(request)
    options = BatchOptions(request.list_path, request.out_dir, request.template,
                           keep_in_library=request.keep_in_library, force=request.force)
    session = BatchSession(options, _WindowEvents(events, display))
    plan = session.plan()
    session.make_folder()
    skipped = len(plan.takes) - len(plan.to_render)
    if skipped:
        events.say("note", f"Skipping {skipped} take(s) already made with the same parameters.")
    return session.render(catalog=getattr(generator, "catalog", None), generator=generator,
                          cancel=cancel)


class _WindowEvents(BatchEvents):
    """The session's events as ListEvents: takes counted as they start and finish, and each
    take written handed to the session with its view data."""

    def __init__(self, events: ListEvents,
                 display: Callable[[GenerationResult], dict] | None) -> None:
        self._events = events
        self._display = display
        self._total = self._started = self._done = 0

    def say(self, kind: str, message: object) -> None:
        self._events.say(kind, str(message))

    def begin(self, total: int) -> None:
        self._total = total

    def started(self, file: str) -> None:
        self._started += 1
        self._events.started(self._started, self._total, file)

    def take_done(self, file: str, status: str, seconds: float) -> None:
        self._done += 1
        self._events.done(self._done, self._total, file, status)

    def written(self, path: Path, take: PlannedTake, rendered: RenderedTake,
                library_id: int | None) -> None:
        finished = rendered.finished
        self._events.made(TakeMade(path, rendered.result, library_id, take.variation,
                                   take.finishing,
                                   finished.loop if finished is not None else None,
                                   self._view_data(rendered.result), take.spec.init_audio))

    def _view_data(self, result: GenerationResult) -> dict:
        if self._display is None:
            return {}
        try:
            return self._display(result)
        except Exception:  # noqa: BLE001 - the take is written; the views compute it later
            log.warning("could not prepare the view data of a list take", exc_info=True)
            return {}
