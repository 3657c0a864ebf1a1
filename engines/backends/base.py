"""The backend protocol and the plain data every backend returns.

Progress and cancel: what each backend reports, and where it looks at cancel.

ONNX Runtime (and any backend driven by engines.backends.eager_pipeline.run_pipeline) runs
stage by stage:
  progress: ("text", 0, 1) and ("text", 1, 1) around the prompt; ("encode", 0, 1) and
  ("encode", 1, 1) around the init audio (audio-to-audio and inpainting only);
  ("sample", 0, steps), then ("sample", i, steps) after every step i; ("decode", 0, 1) and
  ("decode", 1, 1) around the decoder.
  cancel: before the prompt, before the init audio, after every sampler step and before the
  decoder: a cancel takes effect after the current step (or stage).

TensorRT enqueues the whole take at once: one CUDA graph replay (after the text encoder's own
small graph when a text is not cached), or (the first take of a shape, then captured and
checked; shapes that cannot be captured) every stage eagerly with one wait at the end:
  progress: ("sample", 0, steps) once, just before the take is enqueued; when it is done,
  ("text", 1, 1), ("encode", 1, 1) (audio-to-audio and inpainting only),
  ("sample", steps, steps) and ("decode", 1, 1), one after another. No report per step.
  cancel: before the engines load and again before the take is enqueued, never during it:
  a launched graph cannot be stopped part way, so a cancel takes effect after the take under
  way (the caller, e.g. the window's worker, then starts no further take).

Decode-only comparisons (Backend.decode_latents) report nothing and look at no cancel;
Generator.decode_with_tier looks at cancel once, before decoding.

Live audition (engines.live) renders the take again on every change and keeps at most one
render in flight; a newer change supersedes the one under way. On ONNX Runtime the superseded
render stops after its current step (the live scheduler's staleness is its cancel). On TensorRT
a replay cannot be interrupted: the superseded take runs to its end and superseding it means
dropping its result, never playing it; the next change waits for that replay (milliseconds).

Text encodings: every backend keeps the text encoder's output of the last few texts of its one
text encoder (engines.backends.text_cache), so a take that changes only the seed, length or
knobs skips the text encoder and gives the same bytes as one that ran it. On TensorRT the
captured graphs stay as they are: the hidden states are copied into the graph's buffer instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import numpy as np

from engines.generation_result import GenerationResult

if TYPE_CHECKING:
    from engines.catalog import EngineFiles
    from engines.request import ValidatedRequest

ProgressFn = Callable[[str, int, int], None]
"""progress(stage, done, total): stage is one of STAGES, done of total units of it. When it
is called depends on the backend (see the module docstring)."""
CancelFn = Callable[[], bool]
"""cancel() -> True when the user asked to stop; a backend that sees it raises
CancelledError. Where it is looked at depends on the backend (see the module docstring)."""

STAGES = ("text", "encode", "sample", "decode")


class Backend(Protocol):
    """Owns a loaded text encoder and DiT, and the codecs (decoder + encoder of a codec tier)
    asked for; reused across generations. `files` is the full set in use now."""

    name: str
    files: EngineFiles

    def use_codec(self, files: EngineFiles) -> None:
        """Generate (and decode) with the codec tier of `files` from now on; loads it once."""
        ...

    def generate(self, request: ValidatedRequest, progress: ProgressFn | None = None,
                 cancel: CancelFn | None = None) -> GenerationResult:
        """One take; progress and cancel as the module docstring says for this backend."""
        ...

    def decode_latents(self, latents: np.ndarray, request: ValidatedRequest,
                       files: EngineFiles) -> tuple[np.ndarray, float]:
        """Final latents (256, L) of a take made from `request`, decoded only (no sampling)
        through the codec of `files` as the take's own decode ran: (int16 PCM, decode ms)."""
        ...

    def close(self) -> None: ...
