"""The DoRA row rescale folded on the GPU: P = sum_k s_k * (c_k - 1) for every layer a DoRA
adapts, written into the branch DiT's P inputs in the engine's type.

A strength change of a DoRA stack must rewrite P on every adapted layer (229 on SA3-medium,
about 0.6 M values): on the host that is ~10 ms of numpy per change, here it is one kernel after
an n-float copy of the strengths. The per-adapter rows (c_k - 1) are uploaded once per stack.
The kernel is compiled with NVRTC when the first DoRA stack is loaded (never for plain LoRA).
"""

from __future__ import annotations

from pathlib import Path

from engines.cuda.nvrtc import Module, i32, ptr
from engines.cuda.stream import Stream

SOURCE = r"""
// dst[s] is layer s's P input, starts[s] its first value in the flat rows; value i of the flat
// rows is sum_k weights[k] * pchan[k * total + i], summed in k order in fp32.
extern "C" __global__ void fold_pout(const unsigned long long* dst, const int* starts,
                                     int segments, const float* pchan, const float* weights,
                                     int adapters, int total, int out_type) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        int lo = 0, hi = segments - 1;
        while (lo < hi) {
            int mid = (lo + hi + 1) / 2;
            if (starts[mid] <= i) lo = mid; else hi = mid - 1;
        }
        float sum = 0.0f;
        for (int k = 0; k < adapters; ++k) sum += weights[k] * pchan[(long long)k * total + i];
        int j = i - starts[lo];
        if (out_type == 0) {
            ((float*)dst[lo])[j] = sum;
        } else if (out_type == 1) {
            unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(sum));
            ((unsigned short*)dst[lo])[j] = h;
        } else {
            unsigned int bits = __float_as_uint(sum);
            bits += 0x7fffu + ((bits >> 16) & 1u);
            ((unsigned short*)dst[lo])[j] = (unsigned short)(bits >> 16);
        }
    }
}
"""

OUT_TYPES = {"float32": 0, "float16": 1, "bfloat16": 2}
BLOCK = 256


class PoutFold:
    """The compiled fold kernel (one per backend that met a DoRA stack)."""

    def __init__(self, cache_dir: Path | None = None) -> None:
        self.module = Module(SOURCE, "sa3_pout_fold", ("--fmad=false",), cache_dir)

    def launch(self, stream: Stream, table: int, starts: int, segments: int, pchan: int,
               weights: int, adapters: int, total: int, dtype: str) -> None:
        grid = max(1, min(4096, -(-total // BLOCK)))
        self.module.kernel("fold_pout").launch(
            stream, grid, BLOCK, ptr(table), ptr(starts), i32(segments), ptr(pchan),
            ptr(weights), i32(adapters), i32(total), i32(OUT_TYPES[dtype]))

    def free(self) -> None:
        self.module.free()
