"""The exact merged-weight reference for adapter tests, written from Stable Audio 3's own
definitions of each variant (tflite/scripts/lora_core.py `merged_weight`, the MLX path's ground
truth), independently of engines.adapters.fold: what an adapter means, not how the branch folds
it. Plus adapter files with random tensors and correctly baked DoRA row norms.

  lora        W = W0 + s.B.A                                  (s = alpha / rank)
  dora-rows   V = W0 + s.B.A;  W = magnitude (rows) . V / ||V||_row
  -xs         the low-rank term is s.U_r.M.V_r^T with (U, V) the SVD of W0, signs fixed so each
              U column's largest-magnitude entry is positive
A stack at strengths k_i is W0 + sum_i k_i.(W_i - W0) (merge_loras_into_base_model semantics).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

MARK = ".parametrizations.weight.0."


def svd_bases(w0: np.ndarray, rank: int) -> tuple[np.ndarray, np.ndarray]:
    u, _s, vh = np.linalg.svd(w0.astype(np.float64), full_matrices=False)
    idx = np.argmax(np.abs(u), axis=0)
    signs = np.sign(u[idx, np.arange(u.shape[1])])
    signs[signs == 0] = 1.0
    u, vh = u * signs[None, :], vh * signs[:, None]
    return u[:, :rank], vh[:rank].T


def low_rank(w0: np.ndarray, params: dict, variant: str) -> np.ndarray:
    if variant.endswith("-xs"):
        core = params["M_xs"].astype(np.float64)
        u, v = svd_bases(w0, core.shape[0])
        return u @ core @ v.T
    return params["lora_B"].astype(np.float64) @ params["lora_A"].astype(np.float64)


def merged_weight(w0: np.ndarray, params: dict, variant: str, scaling: float) -> np.ndarray:
    """The layer's weight with the adapter applied at full strength, float64."""
    w0 = w0.astype(np.float64)
    v = w0 + scaling * low_rank(w0, params, variant)
    if variant in ("lora", "lora-xs"):
        return v
    if variant in ("dora-rows", "dora-rows-xs"):
        return v / np.linalg.norm(v, axis=1, keepdims=True) * \
            params["magnitude"].astype(np.float64).reshape(-1, 1)
    raise AssertionError(f"no reference for {variant}")


def stacked_weight(w0: np.ndarray, adapters: list[tuple[dict, str, float, float]]) -> np.ndarray:
    """W0 + sum k.(W_i - W0) for (params, variant, scaling, strength) of each adapter."""
    out = w0.astype(np.float64).copy()
    for params, variant, scaling, strength in adapters:
        out += strength * (merged_weight(w0, params, variant, scaling) - w0)
    return out


def random_layer(rng: np.random.Generator, w0: np.ndarray, variant: str, rank: int,
                 scaling: float, spread: float = 0.05) -> dict[str, np.ndarray]:
    """One layer's tensors; a DoRA gets a magnitude near its row norms and baked norms."""
    n_out, n_in = w0.shape
    params: dict[str, np.ndarray] = {}
    if variant.endswith("-xs"):
        params["M_xs"] = (rng.standard_normal((rank, rank)) * spread).astype(np.float32)
    else:
        params["lora_A"] = (rng.standard_normal((rank, n_in)) * spread).astype(np.float32)
        params["lora_B"] = (rng.standard_normal((n_out, rank)) * spread).astype(np.float32)
    if variant.startswith("dora"):
        v = w0.astype(np.float64) + scaling * low_rank(w0, params, variant)
        norms = np.linalg.norm(v, axis=1)
        params["magnitude"] = (norms * rng.uniform(0.7, 1.3, n_out)).astype(np.float32)
        params["baked_vnorm_row"] = norms.astype(np.float32)
    return params


def write_native(path: Path, layers: dict[str, dict[str, np.ndarray]], variant: str,
                 rank: int, alpha: float) -> Path:
    from safetensors.numpy import save_file

    tensors = {f"{key}{MARK}{name}": np.ascontiguousarray(value)
               for key, params in layers.items() for name, value in params.items()}
    config = {"rank": rank, "alpha": alpha, "adapter_type": variant}
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata={"lora_config": json.dumps(config)})
    return path
