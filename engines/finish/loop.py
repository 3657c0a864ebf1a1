"""Seamless loops from a take. The model does the hard part (engines.finish.loop_plan says how
the take is cut open and which span is regenerated); `assemble_loop` puts the answer in place,
`make_loop` runs the whole thing with any generate callable.

Outside the regenerated span the loop is the rotated take sample for sample; inside it, the
backends crossfade 1024 frames at each span edge into the model's audio
(engines.backends.eager_pipeline.paste_original), so the span's edges need nothing more here.

Without a model (busy backend, or the user's choice for an imported take), `crossfade_loop`
makes an equal-power crossfade loop, shorter than the take by the seam.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from engines.constants import SAMPLE_RATE
from engines.errors import RequestError
from engines.finish.loop_plan import (
    DEFAULT_CONTEXT_S,
    DEFAULT_SEAM_S,
    DEFAULT_SEARCH_S,
    LoopPlan,
    TakeRequest,
    loop_request,
    stereo_take,
    wrap_candidates,
)
from engines.finish.seam_metrics import MARGIN, seam_metrics, seam_test, steadiest_point
from engines.request import GenerationRequest


@dataclass
class LoopResult:
    audio: np.ndarray  # float32 (frames, 2); the model loop keeps N, the crossfade loses seam
    method: str  # "model" | "crossfade"
    seam_span_s: tuple[float, float]  # the part of the loop that is new audio (or blended)
    seed: int | None  # the inpainting seed (None for a crossfade)
    report: dict = field(default_factory=dict)  # figures for logs and the UI


def assemble_loop(take: np.ndarray, generated: np.ndarray, plan: LoopPlan) -> np.ndarray:
    """The loop: the take rotated by plan.rotation_frames, with the span taken from the
    inpainting answer `generated` (float (window, 2), as the request's audio is laid out)."""
    rotated = np.roll(stereo_take(take), -plan.rotation_frames, axis=0)
    generated = stereo_take(generated)
    if generated.shape[0] != plan.window_frames or rotated.shape[0] != plan.length:
        raise ValueError(f"assemble_loop expected a {plan.length}-frame take and a "
                         f"{plan.window_frames}-frame answer, got {rotated.shape[0]} and "
                         f"{generated.shape[0]}")
    start, end = plan.span_frames
    rotated[start:end] = generated[start - plan.window_start:end - plan.window_start]
    return np.ascontiguousarray(rotated)


def crossfade_loop(audio: np.ndarray, seam_s: float = DEFAULT_SEAM_S,
                   rate: int = SAMPLE_RATE) -> np.ndarray:
    """The no-model loop: the last `seam_s` faded (equal power) into the first `seam_s`; the
    result is shorter by the seam, and its wrap joins frames that were neighbours in the take.

    Equal power, because the take's end and start are unrelated audio: their powers add, so
    cos/sin gains keep the level through the fade (a linear fade would dip 3 dB mid-seam)."""
    audio = np.asarray(audio, dtype=np.float32)
    frames = audio.shape[0]
    seam = round(seam_s * rate)
    if not 0 < seam <= frames // 2:
        raise RequestError(f"A crossfade loop of a {frames / rate:.2f} s take needs a seam "
                           f"above 0 and at most half the take ({frames / rate / 2:.2f} s).")
    t = (np.arange(seam, dtype=np.float64) + 0.5) / seam * (np.pi / 2)
    fade_in = np.sin(t).astype(np.float32).reshape(-1, *([1] * (audio.ndim - 1)))
    fade_out = np.cos(t).astype(np.float32).reshape(fade_in.shape)
    out = audio[:frames - seam].copy()
    out[:seam] = audio[frames - seam:] * fade_out + audio[:seam] * fade_in
    return out


Generate = Callable[[GenerationRequest], np.ndarray]
"""generate(request) -> float (N, 2) audio at 44.1 kHz, e.g. the Generator's pcm / 32767."""


def make_loop(audio: np.ndarray, base_request: TakeRequest | None,
              generate: Generate | None, seam_s: float = DEFAULT_SEAM_S,
              seed: int | None = None, *,
              context_s: float | None = DEFAULT_CONTEXT_S,
              search_s: float = DEFAULT_SEARCH_S, measure: bool = False) -> LoopResult:
    """A seamless loop of the take `audio`: by the model when `generate` is given, else by
    crossfade (whose wrap is then also moved to the steadiest point near its middle, the
    blended seam going with it). `measure` adds the seam test figures to the report."""
    started = time.perf_counter()
    take = stereo_take(audio)
    if generate is None or base_request is None:
        blended = crossfade_loop(take, seam_s)
        seam = take.shape[0] - blended.shape[0]
        frames = blended.shape[0]
        candidates = wrap_candidates(frames, seam + MARGIN, frames - MARGIN, search_s)
        rotation = (steadiest_point(blended, SAMPLE_RATE, candidates) if candidates.size > 1
                    else 0)
        loop = np.roll(blended, -rotation, axis=0)
        start = (frames - rotation) % frames
        result = LoopResult(loop, "crossfade", (start / SAMPLE_RATE,
                                                (start + seam) / SAMPLE_RATE), None,
                            {"rotation_frames": rotation, "seam_s": seam / SAMPLE_RATE})
    else:
        plan = loop_request(base_request, take, seam_s, seed, context_s, search_s)
        loop = assemble_loop(take, generate(plan.request), plan)
        result = LoopResult(loop, "model", plan.seam_span_s, plan.request.seed, {
            "rotation_frames": plan.rotation_frames,
            "window_s": plan.window_frames / SAMPLE_RATE,
            "seam_s": (plan.span_frames[1] - plan.span_frames[0]) / SAMPLE_RATE,
        })
    result.report["ms"] = (time.perf_counter() - started) * 1e3
    if measure and loop.shape[0] > 2 * MARGIN + 1:
        test = seam_test(loop, SAMPLE_RATE)
        result.report.update(wrap=test.wrap, interior_p95=test.interior_p95,
                             seam_passed=test.passed)
    return result


__all__ = ["DEFAULT_SEAM_S", "LoopPlan", "LoopResult", "assemble_loop", "crossfade_loop",
           "loop_request", "make_loop", "seam_metrics", "seam_test", "DEFAULT_CONTEXT_S",
           "DEFAULT_SEARCH_S"]
