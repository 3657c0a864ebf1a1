"""Graph cache (LRU, explicit destruction) and the replay policy with its self-checks."""

from __future__ import annotations

import dataclasses
import logging
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from engines.backends.tensorrt.pipeline import GenerationPipeline
from engines.backends.tensorrt.pipeline_data import GraphKey, PipelineInputs, PipelineOutputs
from engines.errors import BackendError

log = logging.getLogger(__name__)

DEFAULT_CAPACITY = 4


class GraphCache:
    """Up to `capacity` pipelines (buffers + captured graph), least recently used evicted.

    Eviction frees the pipeline's graph exec and its device and pinned memory at once; the
    engines themselves stay resident in the backend.
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError("graph cache capacity must be at least 1")
        self.capacity = capacity
        self._items: OrderedDict[GraphKey, GenerationPipeline] = OrderedDict()

    def get(self, key: GraphKey) -> GenerationPipeline | None:
        pipe = self._items.get(key)
        if pipe is not None:
            self._items.move_to_end(key)
        return pipe

    def put(self, key: GraphKey, pipe: GenerationPipeline) -> None:
        self._items[key] = pipe
        self._items.move_to_end(key)
        while len(self._items) > self.capacity:
            old_key, old = self._items.popitem(last=False)
            log.info("evicting graph %s", old_key)
            old.free()

    def keys(self) -> list[GraphKey]:
        return list(self._items)

    def drop(self, which: Callable[[GraphKey], bool]) -> None:
        """Free the pipelines whose key `which` selects (those of an unloaded codec)."""
        for key in [k for k in self._items if which(k)]:
            self._items.pop(key).free()

    def clear(self) -> None:
        while self._items:
            _, pipe = self._items.popitem(last=False)
            pipe.free()

    def __len__(self) -> int:
        return len(self._items)


CAPTURE_FAILED = ("The CUDA graph could not be captured ({why}), so generations of this length "
                  "run stage by stage (slower but correct).")
DROPPED_STAGE = ("A captured stage gave identical audio for two different seeds (a stage "
                 "silently dropped out of the CUDA graph), so generations of this length run "
                 "stage by stage (slower but correct).")
REPLAY_MISMATCH = ("Replaying the CUDA graph did not reproduce the stage-by-stage result, so "
                   "generations of this length run stage by stage (slower but correct).")


def run_generation(cache: GraphCache, key: GraphKey,
                   factory: Callable[[GraphKey], GenerationPipeline], inputs: PipelineInputs
                   ) -> tuple[PipelineOutputs, str]:
    """Run one generation; returns (outputs, path) with path "replay", "capture" or "eager".

    The first generation of a key runs eagerly (every engine runs once uncaptured), is captured,
    replayed and checked: replay (the text graphs included) must reproduce the eager latents
    bit for bit, and a second replay with another seed must change the audio. A failed capture
    (an engine said False, or CUDA invalidated the capture) or a failed check pins the key to
    eager execution; the eager result is returned and the reason is told once per key.
    Non-finite latents are an error, never a WAV of noise.
    """
    pipe = cache.get(key)
    if pipe is None:
        pipe = factory(key)
        cache.put(key, pipe)
    if pipe.eager_only_reason is not None:
        return _eager(pipe, inputs), "eager"
    if pipe.graph is not None:
        return _checked(pipe.replay(inputs)), "replay"

    out = _checked(pipe.run_eager(inputs))
    if not pipe.capture():
        pipe.eager_only_reason = CAPTURE_FAILED.format(why=pipe.capture_failure)
    else:
        # The text graphs run too (over zeroed buffers), not the text cache the eager run
        # filled: a text graph that lost its work must show here.
        replayed = pipe.replay(inputs, fresh_text=True)
        if not np.array_equal(replayed.step_latents, out.step_latents):
            pipe.eager_only_reason = REPLAY_MISMATCH
        else:
            other = pipe.replay(dataclasses.replace(inputs, seed=(inputs.seed + 1) % 2**32))
            if np.array_equal(other.pcm, replayed.pcm):
                pipe.eager_only_reason = DROPPED_STAGE
    if pipe.eager_only_reason is not None:
        log.warning("%s (key %s)", pipe.eager_only_reason, key)
        pipe.drop_graphs()
        pipe.text.forget()  # a failed check may have left a text buffer wrong
        _tell_once(pipe, out)
        return out, "eager"
    return out, "capture"


def _eager(pipe: GenerationPipeline, inputs: PipelineInputs) -> PipelineOutputs:
    out = _checked(pipe.run_eager(inputs))
    _tell_once(pipe, out)
    return out


def _tell_once(pipe: GenerationPipeline, out: PipelineOutputs) -> None:
    """The user hears why a key runs stage by stage with its first result, not with every one."""
    if not pipe.eager_notice_given:
        out.warnings.append(pipe.eager_only_reason)
        pipe.eager_notice_given = True


class NonFiniteOutput(BackendError):
    """The take's latents came back NaN or Inf (a caller that knows why words it better)."""


def _checked(out: PipelineOutputs) -> PipelineOutputs:
    if out.nonfinite:
        raise NonFiniteOutput("The model produced invalid values (NaN or Inf), so no audio "
                              "was written; try another seed, fewer guidance or another "
                              "precision.")
    return out
