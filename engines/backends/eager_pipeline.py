"""The eager generation pipeline: tokenizer, engines as callables, and the numpy sampler.

Any backend that can run the four engines one call at a time (ONNX Runtime; TensorRT's eager
fallback) drives them through `run_pipeline`. The captured TensorRT path reproduces exactly this
sequence on the GPU.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from engines import noise, sampling
from engines.adapters.errors import nonfinite_latents_error
from engines.audio_io import pcm16_from_float
from engines.backends.base import CancelFn, ProgressFn
from engines.backends.text_cache import EncodedText, TextEncodingCache
from engines.constants import LATENT_CHANNELS, SAMPLES_PER_LATENT, TEXT_TOKENS
from engines.errors import BackendError, CancelledError
from engines.request import ValidatedRequest
from engines.tokenizer import PromptTokenizer

INPAINT_FADE_SAMPLES = 1024  # crossfade inside each span edge when pasting the original back


class EngineStages(Protocol):
    """The four SA3 engines as plain calls on host arrays (batch 1, contract shapes)."""

    def encode_text(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray: ...

    def dit(self, x: np.ndarray, t: np.ndarray, hidden: np.ndarray, mask: np.ndarray,
            seconds: np.ndarray, local_cond: np.ndarray) -> np.ndarray: ...

    def encode_audio(self, audio: np.ndarray) -> np.ndarray: ...

    def decode(self, latent: np.ndarray, limiter_ceiling: float) -> np.ndarray:
        """Returns int16 PCM (L*4096, 2), already clamped to +-32767."""
        ...


@dataclass
class PipelineOutput:
    pcm: np.ndarray
    latents: np.ndarray
    step_latents: np.ndarray
    timings_ms: dict[str, float]
    warnings: list[str] = field(default_factory=list)


class _Clock:
    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self._start = time.perf_counter()

    def lap(self, stage: str, since: float) -> None:
        self.timings[stage] = self.timings.get(stage, 0.0) + (time.perf_counter() - since) * 1e3

    def finish(self) -> dict[str, float]:
        self.timings["total"] = (time.perf_counter() - self._start) * 1e3
        return self.timings


def _check_cancel(cancel: CancelFn | None) -> None:
    if cancel is not None and cancel():
        raise CancelledError()


def _encoded(stages: EngineStages, tokenizer: PromptTokenizer, text: str, what: str,
             warnings: list[str], cache: TextEncodingCache) -> EncodedText:
    encoded = cache.encode(text, tokenizer.encode, stages.encode_text)
    tokens = encoded.tokens
    if tokens.truncated:
        warnings.append(f"The {what} has {tokens.token_count} tokens; only the first "
                        f"{TEXT_TOKENS} were used. Shorten it to control every word.")
    return encoded


def regenerate_mask(req: ValidatedRequest, length: int) -> np.ndarray:
    """(length,) float32 per sample: 1 inside regenerated spans, 0 outside, short ramps inside."""
    mask = np.zeros(length, dtype=np.float32)
    for start_lat, end_lat in req.regen_spans_latent:
        start = min(start_lat * SAMPLES_PER_LATENT, length)
        end = min(end_lat * SAMPLES_PER_LATENT, length)
        if end <= start:
            continue
        mask[start:end] = 1.0
        fade = min(INPAINT_FADE_SAMPLES, (end - start) // 2)
        if fade > 0:
            ramp = (np.arange(1, fade + 1, dtype=np.float32) / (fade + 1))
            if start > 0:
                mask[start : start + fade] = ramp
            if end < length:
                mask[end - fade : end] = ramp[::-1]
    return mask


def paste_original(pcm: np.ndarray, req: ValidatedRequest) -> np.ndarray:
    """Inpainting keeps the user's audio untouched outside the spans (any codec is lossy)."""
    assert req.init_audio is not None
    n = pcm.shape[0]
    mask = regenerate_mask(req, n)[:, None]
    original = req.init_audio[:n]
    generated = pcm.astype(np.float32) / 32767.0
    return pcm16_from_float(original * (1.0 - mask) + generated * mask)


def decode_take(stages: EngineStages, latents: np.ndarray, req: ValidatedRequest) -> np.ndarray:
    """A take's final latents (256, L) to its int16 PCM: decode, trim, and for inpainting the
    user's audio pasted back. The one decode step both a generation and a decode-only tier
    comparison run, so the same latents through the same codec give the same samples."""
    pcm = stages.decode(np.asarray(latents, np.float32)[None], req.limiter_ceiling)
    pcm = pcm[: req.out_samples]
    if req.mode == "inpaint":
        pcm = paste_original(pcm, req)
    return pcm


def run_pipeline(stages: EngineStages, tokenizer: PromptTokenizer, req: ValidatedRequest,
                 progress: ProgressFn | None = None, cancel: CancelFn | None = None,
                 text_cache: TextEncodingCache | None = None) -> PipelineOutput:
    """One take stage by stage. `text_cache` (the backend's, for its one text encoder) skips
    the text encoder for texts encoded before; without one every take encodes its texts."""
    report = progress or (lambda stage, done, total: None)
    clock = _Clock()
    warnings: list[str] = []
    length = req.latent_len
    texts = text_cache if text_cache is not None else TextEncodingCache(capacity=0)

    _check_cancel(cancel)
    report("text", 0, 1)
    since = time.perf_counter()
    cond = _encoded(stages, tokenizer, req.prompt, "prompt", warnings, texts)
    hidden = [cond.hidden]
    masks = [cond.tokens.attention_mask.astype(np.float32)]
    if req.use_cfg:
        uncond = _encoded(stages, tokenizer, req.negative_prompt, "negative prompt", warnings,
                          texts)
        hidden.append(uncond.hidden)
        masks.append(uncond.tokens.attention_mask.astype(np.float32))
    clock.lap("text", since)
    report("text", 1, 1)

    init_latents = None
    if req.mode in ("a2a", "inpaint"):
        _check_cancel(cancel)
        report("encode", 0, 1)
        since = time.perf_counter()
        audio = np.ascontiguousarray(req.init_audio.T[None], dtype=np.float32)
        init_latents = np.array(stages.encode_audio(audio)[0], dtype=np.float32)
        clock.lap("encode", since)
        report("encode", 1, 1)

    x_noise = noise.initial_noise(req.seed, LATENT_CHANNELS, length)
    loop = noise.loop_noise(req.seed, req.steps, LATENT_CHANNELS, length)
    sigmas = sampling.schedule(req.steps, req.sigma_max, length)
    keep = None
    if req.mode == "a2a":
        x0 = sampling.init_mix(init_latents, x_noise, req.sigma_max)
    else:
        x0 = x_noise
    if req.mode == "inpaint":
        keep = req.keep_mask()
    cond_tensor = sampling.local_add_cond(keep, init_latents, length, LATENT_CHANNELS)
    seconds = np.array([req.seconds], dtype=np.float32)

    def dit(x: np.ndarray, sigma: float, branch: int) -> np.ndarray:
        t = np.array([sigma], dtype=np.float32)
        return stages.dit(x[None], t, hidden[branch], masks[branch], seconds, cond_tensor)[0]

    steps: list[np.ndarray] = []

    def on_step(i: int, x: np.ndarray) -> None:
        steps.append(x.copy())
        report("sample", i + 1, req.steps)
        _check_cancel(cancel)

    plan = sampling.SamplerPlan(sigmas=sigmas, x0=x0, loop_noise=loop, cfg=req.cfg, apg=req.apg,
                                init_latents=init_latents if keep is not None else None,
                                keep=keep)
    report("sample", 0, req.steps)
    since = time.perf_counter()
    latents = sampling.run_sampler(plan, dit, on_step)
    clock.lap("sample", since)
    if not np.all(np.isfinite(latents)):
        if req.adapters:
            raise nonfinite_latents_error()  # the adapters' operands pushed the model out
        raise BackendError("The model produced invalid values (NaN or Inf), so no audio was "
                           "written; try another seed or a higher init noise level.")

    _check_cancel(cancel)
    report("decode", 0, 1)
    since = time.perf_counter()
    pcm = decode_take(stages, latents, req)
    clock.lap("decode", since)
    report("decode", 1, 1)
    return PipelineOutput(pcm=np.ascontiguousarray(pcm), latents=latents,
                          step_latents=np.stack(steps), timings_ms=clock.finish(),
                          warnings=warnings)
