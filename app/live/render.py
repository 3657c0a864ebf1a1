"""One live audition render, as the GPU worker makes it (on its thread) and the window receives
it: the take, the waveform's view data, and the library lineage of the init audio it used."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.widgets.wave_data import prepare_waveform

if TYPE_CHECKING:
    from collections.abc import Callable

    from engines.generation_result import GenerationResult
    from engines.generator import Generator
    from engines.request import GenerationRequest


@dataclass(frozen=True)
class LiveAsk:
    """One change to render: the panel as a request, and where its init audio came from (the
    library row and file Keep records as the kept take's parent)."""

    request: GenerationRequest
    parent_id: int | None = None
    init_source: str | None = None


@dataclass(frozen=True)
class LiveRender:
    """A finished live render: what plays and what the waveform shows. The spectrogram is made
    afterwards, off the worker: a live render's sound comes first."""

    ask: LiveAsk
    result: GenerationResult
    waveform: object  # app.widgets.wave_data.prepare_waveform of its audio


def render_live(generator: Generator, ask: LiveAsk, cancel: Callable[[], bool]) -> LiveRender:
    """On the GPU worker thread: render `ask` (stopping early once `cancel` says it went stale,
    where the backend can) and prepare its waveform."""
    result = generator.generate(ask.request, None, cancel)
    return LiveRender(ask, result, prepare_waveform(result.pcm))
