"""The demo DiT's adaptable linears and their three forms, so LoRA/DoRA adapters work on the demo
set exactly as on Stable Audio 3's branch engine.

Two linears act on the band domain (256 latent channels, frames as columns): `band_mean` on the
prior's mean (what the sound is) and `band_spread` on its spread (how much it varies). Their base
weight W0 is the identity, so:
  plain   - the linear is left out: the plain graph is the demo DiT as it always was;
  branch  - y = W0.x.(1 + P) + Bt^T.(srow * (A.x)), with A, Bt, P and srow graph inputs (the
            official branch contract; W0 = I needs no MatMul);
  merged  - y = W.x with W given (how tests compare the branch with an exactly merged weight).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engines.adapters.bases import BasesFromWeights
from engines.adapters.branch_map import SROW_INPUT, BranchLayer, BranchMap
from engines.constants import LATENT_CHANNELS
from engines.demo.graph_builder import GraphBuilder, f32_info

# Small on purpose: the demo's adapters are rank 4 and a stack of a few fits.
DEMO_RANK_MAX = 64
LAYER_NAMES = ("band_mean", "band_spread")


def adapter_key(name: str) -> str:
    """The layer's name in adapter files (the official `<module path>` form)."""
    return f"model.demo.{name}"


def demo_branch_map() -> BranchMap:
    layers = {f"lora::{name}": BranchLayer(
        name=f"lora::{name}", in_features=LATENT_CHANNELS, out_features=LATENT_CHANNELS,
        adapter_key=adapter_key(name), a_input=f"loraA::{name}", b_input=f"loraB::{name}",
        p_input=f"loraP::{name}") for name in LAYER_NAMES}
    return BranchMap(layers=layers, rank_max=DEMO_RANK_MAX)


def base_weights() -> dict[str, np.ndarray]:
    """W0 of every adaptable linear, by adapter key."""
    return {adapter_key(name): np.eye(LATENT_CHANNELS, dtype=np.float32)
            for name in LAYER_NAMES}


def demo_bases() -> BasesFromWeights:
    """Frozen SVD bases for -xs adapters on the demo, from its own W0."""
    return BasesFromWeights(base_weights())


def frozen_bases() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(U, V) of every W0 for the demo set's bases file. W0 = I is its own SVD, U = V = I,
    whose signs already follow the convention: written without running an SVD, whose first
    call in a process costs half a second of LAPACK start-up in the demo build."""
    eye = np.eye(LATENT_CHANNELS, dtype=np.float32)
    return {key: (eye, eye) for key in base_weights()}


@dataclass(frozen=True)
class LinearForm:
    """How dit_model builds the linears: "plain", "branch", or "merged" with `weights`
    (adapter key -> (256, 256) W)."""

    kind: str = "plain"
    weights: dict[str, np.ndarray] | None = None

    def apply(self, g: GraphBuilder, x: str, name: str) -> str:
        """The linear `name` on x (256, L)."""
        if self.kind == "plain":
            return x
        if self.kind == "merged":
            assert self.weights is not None
            weight = self.weights.get(adapter_key(name))
            return x if weight is None else g.op("MatMul", g.const(weight), x)
        layer = demo_branch_map().layers[f"lora::{name}"]
        a = g.op("Squeeze", layer.a_input, g.ints(0))  # (R, in)
        bt = g.op("Squeeze", layer.b_input, g.ints(0))  # (R, out)
        srow = g.op("Reshape", SROW_INPUT, g.ints(-1, 1))  # (R, 1)
        pout = g.op("Reshape", layer.p_input, g.ints(-1, 1))  # (out, 1)
        low_rank = g.op("MatMul", g.op("Transpose", bt, perm=[1, 0]),
                        g.mul(srow, g.op("MatMul", a, x)))
        return g.add(g.mul(x, g.add(g.f(1.0), pout)), low_rank)

    def inputs(self) -> list:
        """The graph inputs the branch form adds (none for the others)."""
        if self.kind != "branch":
            return []
        infos = []
        for layer in demo_branch_map().layers.values():
            infos += [f32_info(layer.a_input, [1, "R", layer.in_features]),
                      f32_info(layer.b_input, [1, "R", layer.out_features]),
                      f32_info(layer.p_input, [1, 1, layer.out_features])]
        return [*infos, f32_info(SROW_INPUT, [1, 1, "R"])]
