"""A branch DiT double for the adapter GPU tests and benchmark, its layer maps, and adapter files.

`BranchDitDouble` is the DiT double (tests.gpu_doubles) with the branch engine's inputs: for every
layer of a branch map A (1, R, in), Bt (1, R, out) and P (1, 1, out) in float16, and `lora_srow`
(1, 1, R), R dynamic up to the map's maximum. One of its layers (256 -> 256) really acts on the
velocity the way the official branch acts on a linear's output:

    v[c, l] = v0[c, l] * (1 + P[c]) + sum_k Bt[k, c] * srow[k] * sum_j A[k, j] * x[j, l]

so a wrong, stale or unwritten operand changes the audio; the other layers' operands are bound
and sized as on the real engine (2.589 MB per unit of rank for the medium map) but not read.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from engines.adapters.branch_map import BranchLayer, BranchMap
from engines.adapters.files import NATIVE_MARKER
from engines.backends.tensorrt.tensor_spec import TensorSpec
from engines.constants import LATENT_CHANNELS as C
from engines.cuda.nvrtc import Module, i32, ptr
from tests.gpu_doubles import DitDouble

SOURCE = r"""
__device__ float half_at(const unsigned short* p, long long i) {
    float f; unsigned short h = p[i];
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
// h[k, l] = srow[k] * sum_j A[k, j] * x[j, l]
extern "C" __global__ void branch_down(float* h, const float* x, const unsigned short* a,
                                       const unsigned short* srow, int rank, int length) {
    long long n = (long long)rank * length;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        int k = (int)(i / length), l = (int)(i % length);
        float s = half_at(srow, k), sum = 0.0f;
        if (s != 0.0f)
            for (int j = 0; j < 256; ++j)
                sum += half_at(a, (long long)k * 256 + j) * x[(long long)j * length + l];
        h[i] = s * sum;
    }
}
// v[c, l] = v[c, l] * (1 + P[c]) + sum_k Bt[k, c] * h[k, l]
extern "C" __global__ void branch_up(float* v, const float* h, const unsigned short* bt,
                                     const unsigned short* p, int rank, int length) {
    long long n = 256LL * length;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        int c = (int)(i / length), l = (int)(i % length);
        float sum = 0.0f;
        for (int k = 0; k < rank; ++k)
            sum += half_at(bt, (long long)k * 256 + c) * h[(long long)k * length + l];
        v[i] = v[i] * (1.0f + half_at(p, c)) + sum;
    }
}
"""

ACTIVE = "lora::preprocess_conv"  # the layer the double computes (256 -> 256, as in SA3)

# SA3-medium's adapted linears (24 blocks x 9, plus 13 outside the blocks: 229, 2.589 MB of
# float16 operands per unit of rank), as the official branch build lists them.
_BLOCK = (("self_attn.to_qkv", 1536, 7680), ("self_attn.to_out", 1536, 1536),
          ("cross_attn.to_q", 1536, 3072), ("cross_attn.to_kv", 1536, 4608),
          ("cross_attn.to_out", 1536, 1536), ("to_local_embed.0", 257, 1536),
          ("to_local_embed.2", 1536, 1536), ("ff.ff.0.proj", 1536, 12288),
          ("ff.ff.2", 6144, 1536))
_OUTSIDE = (("seconds_embed", "conditioners.seconds_total.embedder.embedding.1", 256, 768),
            ("to_cond_embed.0", "model.to_cond_embed.0", 768, 1536),
            ("to_cond_embed.2", "model.to_cond_embed.2", 1536, 1536),
            ("to_global_embed.0", "model.to_global_embed.0", 768, 1536),
            ("to_global_embed.2", "model.to_global_embed.2", 1536, 1536),
            ("to_timestep_embed.0", "model.to_timestep_embed.0", 256, 1536),
            ("to_timestep_embed.2", "model.to_timestep_embed.2", 1536, 1536),
            ("preprocess_conv", "model.preprocess_conv", 256, 256),
            ("project_in", "model.transformer.project_in", 256, 1536),
            ("global_cond_embedder.0", "model.transformer.global_cond_embedder.0", 1536, 1536),
            ("global_cond_embedder.2", "model.transformer.global_cond_embedder.2", 1536, 9216),
            ("project_out", "model.transformer.project_out", 1536, 256),
            ("postprocess_conv", "model.postprocess_conv", 256, 256))


def _layer(key: str, adapter_key: str, n_in: int, n_out: int) -> BranchLayer:
    return BranchLayer(f"lora::{key}", n_in, n_out, adapter_key, f"loraA::{key}",
                       f"loraB::{key}", f"loraP::{key}")


def medium_branch_map(rank_max: int = 512) -> BranchMap:
    layers = [_layer(*row) for row in _OUTSIDE]
    layers += [_layer(f"layers.{i}.{name}", f"model.transformer.layers.{i}.{name}", n_in, n_out)
               for i in range(24) for name, n_in, n_out in _BLOCK]
    return BranchMap({layer.name: layer for layer in layers}, rank_max)


def small_branch_map(rank_max: int = 64) -> BranchMap:
    """Three layers: the one the double computes and two it only binds."""
    rows = [row for row in _OUTSIDE if row[0] in ("preprocess_conv", "project_in", "project_out")]
    return BranchMap({layer.name: layer for layer in (_layer(*row) for row in rows)}, rank_max)


def write_map(bmap: BranchMap, path: Path) -> Path:
    path.write_text(json.dumps(bmap.to_json()), encoding="utf-8")
    return path


def write_adapter(path: Path, bmap: BranchMap, rank: int, seed: int, variant: str = "lora",
                  gain: float = 0.05) -> Path:
    """A procedural adapter in SA3's native layout for every layer of `bmap` (test data only)."""
    from safetensors import numpy as safetensors_numpy  # only the tests that write files

    rng = np.random.default_rng(seed)
    tensors = {}
    for layer in bmap.layers.values():
        a = (rng.standard_normal((rank, layer.in_features)) / np.sqrt(layer.in_features))
        b = gain * rng.standard_normal((layer.out_features, rank))
        params = {"lora_A": a, "lora_B": b}
        if variant == "dora-rows":  # a trained DoRA's row rescale sits near 1
            norms = 1.0 + 0.01 * rng.random(layer.out_features)
            params.update(magnitude=norms * (1.0 + 0.02 * rng.standard_normal(
                layer.out_features)), baked_vnorm_row=norms)
        for name, value in params.items():
            tensors[f"{layer.adapter_key}{NATIVE_MARKER}{name}"] = np.ascontiguousarray(
                value, np.float32)
    config = {"rank": rank, "alpha": float(rank), "adapter_type": variant}
    safetensors_numpy.save_file(tensors, str(path), metadata={"lora_config": json.dumps(config)})
    return path


def load_module(cache_dir=None) -> Module:
    return Module(SOURCE, "sa3_branch_double", ("--fmad=false",), cache_dir)


class BranchDitDouble(DitDouble):
    """The DiT double with the branch engine's inputs (float16, rank dynamic to the map's max)."""

    def __init__(self, module, branch_module: Module, bmap: BranchMap, **kw):
        super().__init__(module, **kw)
        self.name = "dit-branch-double"
        self.branch_module = branch_module
        self.bmap = bmap
        top = bmap.rank_max
        opt = min(32, top)
        for layer in bmap.layers.values():
            for name, width in ((layer.a_input, layer.in_features),
                                (layer.b_input, layer.out_features)):
                self.specs[name] = TensorSpec(name, True, "float16", (1, -1, width),
                                              ((1, 1, width), (1, opt, width), (1, top, width)))
            self.specs[layer.p_input] = TensorSpec(layer.p_input, True, "float16",
                                                   (1, 1, layer.out_features))
        self.specs[bmap.srow_input] = TensorSpec(bmap.srow_input, True, "float16", (1, 1, -1),
                                                 ((1, 1, 1), (1, 1, opt), (1, 1, top)))
        from engines.cuda.memory import DeviceBuffer  # CUDA only once a double is made

        self.hidden = DeviceBuffer(4 * top * 4096)

    def launch(self, ctx, stream):
        super().launch(ctx, stream)
        layer = self.bmap.layers[ACTIVE]
        a = ctx.addresses
        length, rank = ctx.shapes["x"][2], ctx.shapes[self.bmap.srow_input][2]
        grid = max(1, min(4096, -(-rank * length // 256)))
        self.branch_module.kernel("branch_down").launch(
            stream, grid, 256, ptr(self.hidden.ptr), ptr(a["x"]), ptr(a[layer.a_input]),
            ptr(a[self.bmap.srow_input]), i32(rank), i32(length))
        self.branch_module.kernel("branch_up").launch(
            stream, max(1, min(4096, -(-C * length // 256))), 256, ptr(a["velocity"]),
            ptr(self.hidden.ptr), ptr(a[layer.b_input]), ptr(a[layer.p_input]), i32(rank),
            i32(length))

    def close(self):
        super().close()
        self.hidden.free()
