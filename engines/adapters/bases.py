"""Frozen SVD bases for the `-xs` variants: an -xs adapter trains only an r x r core M between
the top-r singular vectors of its base weight (delta = U_r . M . V_r^T), so it means something
only with the very bases it was trained against. A deterministic sign convention (each U
column's largest-magnitude entry positive) makes recomputed bases reproducible; the official
runtime ships them frozen in a file for the same reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np

from engines.lazy import lazy_import

safetensors = lazy_import("safetensors")
safetensors_numpy = lazy_import("safetensors.numpy")


class SvdBases(Protocol):
    def get(self, adapter_key: str, rank: int) -> tuple[np.ndarray, np.ndarray] | None:
        """(U_r (out, r), V_r (in, r)) of the layer's base weight, or None when unknown."""
        ...


def canonical_svd(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(U, V) of a thin SVD W = U.diag(S).V^T, signs fixed as SA3's trainer fixes them."""
    u, _s, vh = np.linalg.svd(np.asarray(weight, np.float32), full_matrices=False)
    cols = np.arange(u.shape[1])
    signs = np.sign(u[np.argmax(np.abs(u), axis=0), cols])
    signs[signs == 0] = 1.0
    return (u * signs[None, :]).astype(np.float32), (vh * signs[:, None]).T.astype(np.float32)


class BasesFromWeights:
    """Bases computed from known base weights (the demo set carries its own)."""

    def __init__(self, weights: dict[str, np.ndarray]) -> None:
        self._weights = weights
        self._done: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def get(self, adapter_key: str, rank: int) -> tuple[np.ndarray, np.ndarray] | None:
        if adapter_key not in self._weights:
            return None
        if adapter_key not in self._done:
            self._done[adapter_key] = canonical_svd(self._weights[adapter_key])
        u, v = self._done[adapter_key]
        return (u[:, :rank], v[:, :rank]) if rank <= u.shape[1] else None


class BasesFile:
    """Frozen bases from a .safetensors file: `<adapter key>.U` (out, k) and `.V` (in, k)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def get(self, adapter_key: str, rank: int) -> tuple[np.ndarray, np.ndarray] | None:
        with safetensors.safe_open(str(self.path), framework="numpy") as handle:
            names = set(handle.keys())
            if f"{adapter_key}.U" not in names or f"{adapter_key}.V" not in names:
                return None
            u = np.asarray(handle.get_tensor(f"{adapter_key}.U"), np.float32)
            v = np.asarray(handle.get_tensor(f"{adapter_key}.V"), np.float32)
        return (u[:, :rank], v[:, :rank]) if rank <= u.shape[1] else None


def bases_file_beside(branch_map: Path) -> Path:
    """Where a branch map's frozen SVD bases lie (`<map stem>_svd_bases.safetensors`)."""
    branch_map = Path(branch_map)
    return branch_map.with_name(branch_map.stem + "_svd_bases.safetensors")


def bases_beside(branch_map: Path) -> BasesFile | None:
    """The frozen bases beside a branch map, or None when the set has none."""
    path = bases_file_beside(branch_map)
    return BasesFile(path) if path.is_file() else None


def bases_file_bytes(bases: dict[str, tuple[np.ndarray, np.ndarray]]) -> bytes:
    """A bases file holding (U, V) per adapter key (canonical_svd's), as BasesFile reads it."""
    tensors = {}
    for key, (u, v) in bases.items():
        tensors[f"{key}.U"], tensors[f"{key}.V"] = u, v
    return safetensors_numpy.save(tensors, metadata={"sign_convention": "max-abs U entry > 0"})
