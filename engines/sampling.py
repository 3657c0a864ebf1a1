"""Numpy reference of the SA3 sampler (SA3_CONTRACTS section 4).

Every backend must reproduce these functions; the TensorRT path runs the same arithmetic in
NVRTC kernels and is tested against this file.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from engines.constants import MAX_LATENTS, SAMPLE_RATE, SAMPLES_PER_LATENT

SHIFT_MIN_LATENTS = 256


def schedule(steps: int, sigma_max: float, latent_len: int) -> np.ndarray:
    """Sigmas s[0..steps] (float32): length-shifted linspace, s[0] = sigma_max, s[-1] = 0.

    Returns a fresh array; the computation is cached (takes add up when rerolling)."""
    return _schedule(int(steps), float(sigma_max), int(latent_len)).copy()


@functools.lru_cache(maxsize=256)
def _schedule(steps: int, sigma_max: float, latent_len: int) -> np.ndarray:
    t = np.linspace(sigma_max, 0.0, steps + 1, dtype=np.float32)
    length = min(max(latent_len, SHIFT_MIN_LATENTS), MAX_LATENTS)
    mu = -(0.5 + 0.65 * (length - SHIFT_MIN_LATENTS) / 3840.0)
    e = np.float32(np.exp(mu))
    with np.errstate(divide="ignore"):
        odds = np.where(t < 1.0, np.float32(1.0) / (np.float32(1.0) - t) - np.float32(1.0), np.inf)
    shifted = np.where(np.isinf(odds), np.float32(1.0), np.float32(1.0) - e / (e + odds))
    shifted = shifted.astype(np.float32)
    shifted[0] = np.float32(sigma_max)
    return shifted


def span_to_latents(start_s: float, end_s: float) -> tuple[int, int]:
    """A span in seconds as a half-open latent index range, snapped to the 4096-sample grid."""
    scale = SAMPLE_RATE / SAMPLES_PER_LATENT
    return int(round(start_s * scale)), int(round(end_s * scale))


def keep_mask(latent_spans: Sequence[tuple[int, int]], latent_len: int) -> np.ndarray:
    """(L,) float32: 1 where the init latents are kept, 0 inside the regenerated spans."""
    keep = np.ones(latent_len, dtype=np.float32)
    for start, end in latent_spans:
        start, end = min(max(start, 0), latent_len), min(max(end, 0), latent_len)
        keep[start:end] = 0.0
    return keep


def local_add_cond(keep: np.ndarray | None, init_latents: np.ndarray | None, latent_len: int,
                   channels: int) -> np.ndarray:
    """(1, C+1, L) DiT input: channel 0 keep mask, 1..C keep * init; zeros unless inpainting."""
    cond = np.zeros((1, channels + 1, latent_len), dtype=np.float32)
    if keep is not None and init_latents is not None:
        cond[0, 0] = keep
        cond[0, 1:] = init_latents * keep[None, :]
    return cond


def init_mix(init_latents: np.ndarray, noise: np.ndarray, sigma_max: float) -> np.ndarray:
    """Audio-to-audio start: x0 = init * (1 - sigma_max) + noise * sigma_max."""
    s = np.float32(sigma_max)
    return (init_latents * (np.float32(1.0) - s) + noise * s).astype(np.float32)


def paste_back(x: np.ndarray, init_latents: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Inpainting: clean init latents outside the spans, sampler latents inside."""
    k = keep[None, :]
    return (init_latents * k + x * (np.float32(1.0) - k)).astype(np.float32)


def guided_velocity(x: np.ndarray, sigma: float, v_cond: np.ndarray, v_uncond: np.ndarray,
                    cfg: float, apg: float) -> np.ndarray:
    """CFG with adaptive projected guidance; returns the velocity the pingpong step uses."""
    s = np.float32(sigma)
    cd = x - s * v_cond
    ud = x - s * v_uncond
    diff = cd - ud
    if apg <= 0:
        guidance = diff
    else:
        norm = max(float(np.sqrt(np.sum(cd.astype(np.float64) ** 2))), 1e-8)
        u = cd / np.float32(norm)
        orth = diff - np.float32(np.sum(diff.astype(np.float64) * u)) * u
        guidance = orth if apg >= 1 else np.float32(apg) * orth + np.float32(1.0 - apg) * diff
    return ((x - (cd + np.float32(cfg - 1.0) * guidance)) / s).astype(np.float32)


def pingpong_step(x: np.ndarray, v: np.ndarray, sigma: float, sigma_next: float,
                  noise: np.ndarray | None) -> np.ndarray:
    """One pingpong update: denoise fully, then re-noise to the next sigma (not on the last)."""
    denoised = x - np.float32(sigma) * v
    if noise is None:
        return denoised.astype(np.float32)
    sn = np.float32(sigma_next)
    return ((np.float32(1.0) - sn) * denoised + sn * noise).astype(np.float32)


VelocityFn = Callable[[np.ndarray, float, int], np.ndarray]
"""dit(x, sigma, branch) -> velocity; branch 0 = prompt, 1 = negative prompt."""


@dataclass
class SamplerPlan:
    """Everything the step loop needs besides the DiT itself."""

    sigmas: np.ndarray  # (steps+1,)
    x0: np.ndarray  # (C, L)
    loop_noise: np.ndarray  # (steps-1, C, L)
    cfg: float = 1.0
    apg: float = 1.0
    init_latents: np.ndarray | None = None  # for inpainting paste-back
    keep: np.ndarray | None = None  # (L,) for inpainting


def run_sampler(plan: SamplerPlan, dit: VelocityFn,
                on_step: Callable[[int, np.ndarray], None] | None = None) -> np.ndarray:
    """The pingpong loop with optional CFG/APG and inpaint paste-back; returns the final latent.

    `on_step(i, x)` sees each step's latent (after paste-back) and may raise to cancel.
    Both velocities are kept as separate arrays: the uncond pass never overwrites v_cond.
    """
    x = plan.x0.astype(np.float32, copy=True)
    steps = len(plan.sigmas) - 1
    inpainting = plan.keep is not None and plan.init_latents is not None
    for i in range(steps):
        s, s_next = float(plan.sigmas[i]), float(plan.sigmas[i + 1])
        v_cond = np.array(dit(x, s, 0), dtype=np.float32, copy=True)
        if plan.cfg != 1.0:
            v_uncond = np.array(dit(x, s, 1), dtype=np.float32, copy=True)
            v = guided_velocity(x, s, v_cond, v_uncond, plan.cfg, plan.apg)
        else:
            v = v_cond
        noise = plan.loop_noise[i] if i < steps - 1 else None
        x = pingpong_step(x, v, s, s_next, noise)
        if inpainting:
            x = paste_back(x, plan.init_latents, plan.keep)
        if on_step is not None:
            on_step(i, x)
    return x
