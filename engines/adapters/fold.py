"""One adapter layer folded into the branch's operands, as the official branch runtime folds it.

The branch computes y = W0.x.(1 + pout) + Bp.(srow * (A.x)). Per served variant, at strength 1:
  lora          A = lora_A,   Bp = scaling . lora_B,                      no pout
  lora-xs       A = V_r^T,    Bp = scaling . U_r . M_xs                   (frozen SVD bases)
  dora-rows     c = magnitude / ||W0 + scaling.B.A||_row (baked in the file),
                Bp = c . (scaling . lora_B) (row-scaled),   pout = c - 1
  dora-rows-xs  the same with the -xs low-rank term.
so W0.(1 + pout) + Bp.A equals the variant's merged weight exactly (c.(W0 + scaling.LR) for
DoRA). A strength s scales srow and pout: W(s) = W0 + s.(W_merged - W0), a linear fade.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engines.adapters import variants
from engines.adapters.branch_map import BranchLayer
from engines.adapters.errors import AdapterError, pick_another


@dataclass(frozen=True)
class LayerFold:
    a: np.ndarray  # (r, in)
    bt: np.ndarray  # (r, out): Bp transposed, rank-major as the engine takes it
    pchan: np.ndarray | None  # (out,) = c - 1 for DoRA, None for LoRA


def _misfit(file_name: str, layer: BranchLayer, what: str) -> AdapterError:
    return pick_another(f"The adapter '{file_name}' does not fit this model's layer "
                        f"{layer.adapter_key} ({what}), so it was made for another model")


def fold_layer(file_name: str, layer: BranchLayer, params: dict[str, np.ndarray],
               variant: str, scaling: float,
               bases: tuple[np.ndarray, np.ndarray] | None) -> LayerFold:
    """The layer's operands at strength 1. `bases` (U_r, V_r) for -xs variants."""
    n_in, n_out = layer.in_features, layer.out_features
    if variants.is_xs(variant):
        core = params["M_xs"]
        if bases is None or core.ndim != 2 or core.shape[0] != core.shape[1]:
            raise _misfit(file_name, layer, f"M_xs {core.shape}")
        u, v = bases
        if u.shape != (n_out, core.shape[0]) or v.shape != (n_in, core.shape[0]):
            raise _misfit(file_name, layer, f"rank {core.shape[0]} bases")
        a, bp = v.T, scaling * (u @ core)
    else:
        a, b = params["lora_A"], params["lora_B"]
        if a.ndim != 2 or b.ndim != 2 or a.shape[1] != n_in or b.shape[0] != n_out \
                or a.shape[0] != b.shape[1]:
            raise _misfit(file_name, layer, f"lora_B {b.shape} . lora_A {a.shape} against "
                                            f"({n_out}, {n_in})")
        a, bp = a, scaling * b
    pchan = None
    if variants.base_variant(variant) == "dora-rows":
        magnitude = np.asarray(params["magnitude"], np.float32).reshape(-1)
        norms = np.asarray(params[variants.BAKED_NORM], np.float32).reshape(-1)
        if magnitude.shape != (n_out,) or norms.shape != (n_out,):
            raise _misfit(file_name, layer, f"magnitude {magnitude.shape}")
        with np.errstate(divide="ignore", invalid="ignore"):
            c = magnitude / norms
        bp = c[:, None] * bp
        pchan = (c - 1.0).astype(np.float32)
    return LayerFold(a=np.ascontiguousarray(a, np.float32),
                     bt=np.ascontiguousarray(bp.T, np.float32), pchan=pchan)
