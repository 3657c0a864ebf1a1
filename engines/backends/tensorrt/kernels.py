"""The sampler's arithmetic as small NVRTC kernels (source in kernel_source.py), launched on the
pipeline's stream.

Each kernel mirrors a function of `engines.sampling`, `engines.noise` or
`engines.backends.eager_pipeline` (the numpy reference) and is compiled with --fmad=false so it
rounds like numpy does. Values that change between generations (seed, sigmas, cfg, apg, limiter
ceiling, seconds) are read from device memory, so a captured graph stays valid when they change.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engines.backends.tensorrt.kernel_source import SOURCE
from engines.cuda.nvrtc import Module, f32, i32, i64, ptr, u32
from engines.cuda.stream import Stream

BLOCK = 256
REDUCE_BLOCKS = 264  # fixed grid for the guidance reductions (2 per SM on an H200): deterministic

# Slots of the float parameter block the host refreshes before each replay.
P_SECONDS, P_CFG, P_APG, P_LIMITER, P_SIGMA_MAX = 0, 1, 2, 3, 4
PARAM_FLOATS = 8

CAST_KERNELS = {("float32", "float16"): "f32_to_f16", ("float16", "float32"): "f16_to_f32",
                ("float32", "bfloat16"): "f32_to_bf16", ("bfloat16", "float32"): "bf16_to_f32"}


def grid_for(n: int, cap: int = 4096) -> int:
    return max(1, min(cap, -(-int(n) // BLOCK)))


def span_bounds(keep: np.ndarray) -> np.ndarray:
    """(L, 2) int32: for each regenerated latent (keep == 0) the [start, end) in latents of the
    run of regenerated latents it is in; (0, 0) for kept latents. The paste-back kernel reads a
    sample's span from here instead of walking the keep mask to find it."""
    regen = np.asarray(keep).reshape(-1) == 0
    edges = np.flatnonzero(np.diff(np.concatenate(([0], regen.astype(np.int8), [0]))))
    starts, ends = edges[0::2], edges[1::2]
    bounds = np.zeros((regen.size, 2), np.int32)
    bounds[regen, 0] = np.repeat(starts, ends - starts)
    bounds[regen, 1] = np.repeat(ends, ends - starts)
    return bounds


class SamplerKernels:
    """The compiled module plus one typed launcher per kernel."""

    def __init__(self, cache_dir: Path | None = None) -> None:
        self.module = Module(SOURCE, "sa3_sampler", ("--fmad=false",), cache_dir)

    def _go(self, name: str, stream: Stream, n: int, *args) -> None:
        self.module.kernel(name).launch(stream, grid_for(n), BLOCK, *args)

    def gaussian(self, stream: Stream, out: int, n: int, seed_ptr: int, noise_stream: int,
                 offset_blocks: int = 0) -> None:
        blocks = -(-n // 4)
        self.module.kernel("philox_gaussian").launch(
            stream, grid_for(blocks), BLOCK, ptr(out), i64(n), ptr(seed_ptr), u32(noise_stream),
            ctypes_u64(offset_blocks))

    def gaussian_two(self, stream: Stream, out0: int, n0: int, out1: int, n1: int,
                     seed_ptr: int) -> None:
        blocks = -(-n0 // 4) + -(-n1 // 4)
        self.module.kernel("philox_two").launch(stream, grid_for(blocks), BLOCK, ptr(out0),
                                                i64(n0), ptr(out1), i64(n1), ptr(seed_ptr))

    def init_mix(self, stream, x, init, noise, params, n) -> None:
        self._go("init_mix", stream, n, ptr(x), ptr(init), ptr(noise), ptr(params),
                 i32(P_SIGMA_MAX), i64(n))

    def local_cond(self, stream, cond, keep, init, channels, length) -> None:
        self._go("local_cond", stream, (channels + 1) * length, ptr(cond), ptr(keep), ptr(init),
                 i32(channels), i32(length))

    def pingpong(self, stream, x, v, noise, sigmas, step, keep, init, length, n,
                 step_out, block_flags=0) -> None:
        self._go("pingpong", stream, n, ptr(x), ptr(v), ptr(noise), ptr(sigmas), i32(step),
                 ptr(keep), ptr(init), i32(length), i32(n), ptr(step_out), ptr(block_flags))

    def guided_pingpong(self, stream, x, vc, vu, partials, noise, sigmas, step, params, keep,
                        init, length, n, step_out, block_flags=0) -> None:
        """One CFG/APG step: the guidance sums (a fixed-grid, deterministic reduction), then
        the guided velocity and the pingpong update in one pass."""
        self.module.kernel("guidance_partials").launch(
            stream, REDUCE_BLOCKS, BLOCK, ptr(x), ptr(vc), ptr(vu), ptr(sigmas), i32(step),
            i64(n), ptr(partials))
        self._go("guided_pingpong", stream, n, ptr(x), ptr(vc), ptr(vu), ptr(partials),
                 i32(REDUCE_BLOCKS), ptr(noise), ptr(sigmas), i32(step), ptr(params), ptr(keep),
                 ptr(init), i32(length), i32(n), ptr(step_out), ptr(block_flags))

    def narrow_pcm(self, stream, out, pcm, n) -> None:
        self._go("narrow_pcm", stream, n, ptr(out), ptr(pcm), i64(n))

    def float_to_pcm(self, stream, out, audio, total, frames) -> None:
        self._go("float_to_pcm", stream, 2 * frames, ptr(out), ptr(audio), i64(total),
                 i64(frames))

    def paste_original(self, stream, pcm, pcm32, original, total, frames, keep, bounds, hop,
                       fade) -> None:
        """pcm32 = the decoder's int32 output (narrow fused in), or 0 to read int16 pcm;
        bounds = span_bounds(keep) on the device."""
        self._go("paste_original", stream, 2 * frames, ptr(pcm), ptr(pcm32), ptr(original),
                 i64(total), i32(frames), ptr(keep), ptr(bounds), i32(hop), i32(fade))

    def cast(self, stream, src_dtype: str, dst_dtype: str, out: int, src: int, n: int) -> None:
        self._go(CAST_KERNELS[(src_dtype, dst_dtype)], stream, n, ptr(out), ptr(src), i64(n))

    def free(self) -> None:
        self.module.free()


def ctypes_u64(value: int):
    import ctypes

    return ctypes.c_ulonglong(int(value))


__all__ = ["SamplerKernels", "f32", "CAST_KERNELS", "PARAM_FLOATS"]
