"""A stack of adapters bound to one branch engine: each adapter folded (engines.adapters.fold),
the stack concatenated along the rank axis (adapter k owns rank rows start_k .. start_k+r_k), and
every operand the graph takes, padded to any rank with zeros.

Only `lora_srow` and the pout (`P`) inputs of layers some DoRA adapts depend on the strengths, so
a strength change is `strength_operands`, a write of those few arrays; A and B stay as bound.
Zero rows (padding, or a layer an adapter does not touch) add nothing: A.x is 0 there and srow
is 0 there, so a stack can be bound at any rank from its own up to the engine's maximum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from engines.adapters import variants
from engines.adapters.bases import SvdBases
from engines.adapters.branch_map import BranchMap
from engines.adapters.checks import (
    EXCLUDED_LAYERS,
    check_finite,
    excluded_warning,
    sign_flip_warning,
    unserved_warning,
)
from engines.adapters.choice import AdapterChoice
from engines.adapters.errors import fewer_adapters, pick_another
from engines.adapters.files import AdapterInfo, check_servable, read_adapter
from engines.adapters.fold import LayerFold, fold_layer


@dataclass(frozen=True)
class StackedAdapter:
    choice: AdapterChoice
    info: AdapterInfo
    strength: float  # the effective strength: 0 when the choice is switched off
    start: int  # its first row of the stacked rank
    length: int  # its rows (its rank)


@dataclass(frozen=True)
class _LayerOperands:
    a: np.ndarray  # (R, in)
    bt: np.ndarray  # (R, out)
    pchan: np.ndarray | None  # (n_adapters, out), None when no DoRA adapts the layer


class AdapterStack:
    """Build with `AdapterStack.build`; immutable (with_strengths makes a sibling)."""

    def __init__(self, branch_map: BranchMap, adapters: tuple[StackedAdapter, ...],
                 layers: dict[str, _LayerOperands], load_warnings: tuple[str, ...],
                 rescales: _PackedRescales | None = None) -> None:
        self.branch_map = branch_map
        self.adapters = adapters
        self._layers = layers
        self._load_warnings = load_warnings
        self._rescales = rescales or _PackedRescales.of(branch_map, layers, len(adapters))
        self._warnings: list[str] | None = None

    @property
    def warnings(self) -> list[str]:
        """The stack's sentences: the load's, and a sign flip at these strengths (computed on
        first read, so a strength change costs nothing until a front end asks)."""
        if self._warnings is None:
            rho = 1.0 + self._rescales.combined(self.strengths)
            flip = sign_flip_warning(rho)
            self._warnings = [*self._load_warnings, *([flip] if flip else [])]
        return self._warnings

    # Building -------------------------------------------------------------------------------
    @classmethod
    def build(cls, choices: Sequence[AdapterChoice], branch_map: BranchMap,
              bases: SvdBases | None = None) -> AdapterStack:
        """Read, check and fold `choices` (in order) for the engine `branch_map` describes.
        AdapterError (one sentence) for each refusal; warnings in `.warnings`."""
        files = [read_adapter(choice.path) for choice in choices]
        for adapter in files:
            check_servable(adapter.info)
        total = sum(a.info.rank for a in files)
        if total > branch_map.rank_max:
            raise fewer_adapters(f"The adapters' stacked rank {total} is over this engine's "
                                 f"maximum of {branch_map.rank_max}")
        by_key = branch_map.by_adapter_key()
        warnings: list[str] = []
        per_layer: dict[str, list[LayerFold | None]] = {name: [] for name in branch_map.layers}
        stacked, start = [], 0
        for choice, adapter in zip(choices, files, strict=True):
            info = adapter.info
            dropped = sorted(k for k in adapter.layers if k in EXCLUDED_LAYERS)
            if dropped:
                warnings.append(excluded_warning(info.file_name, dropped))
            keys = [k for k in adapter.layers if k not in EXCLUDED_LAYERS]
            served = [k for k in keys if k in by_key]
            if not served:
                raise pick_another(f"The adapter '{info.file_name}' adapts none of this "
                                   f"model's layers, so it was made for another model")
            if len(served) < len(keys):
                warnings.append(unserved_warning(info.file_name, len(keys) - len(served),
                                                 len(keys)))
            for name, layer in branch_map.layers.items():
                params = adapter.layers.get(layer.adapter_key)
                fold = None
                if params is not None:
                    rank = int((params.get("lora_A") if "lora_A" in params
                                else params["M_xs"]).shape[0])
                    layer_bases = None
                    if variants.is_xs(info.variant):
                        layer_bases = bases.get(layer.adapter_key, rank) if bases else None
                        if layer_bases is None:
                            raise pick_another(
                                f"The adapter '{info.file_name}' is a {info.variant} adapter, "
                                f"which needs the frozen SVD bases of its model's weights, and "
                                f"this model set has none for {layer.adapter_key}")
                    fold = fold_layer(info.file_name, layer, params, info.variant,
                                      info.scaling, layer_bases)
                per_layer[name].append(fold)
            stacked.append(StackedAdapter(choice=choice, info=info,
                                          strength=float(choice.effective_strength),
                                          start=start, length=info.rank))
            start += info.rank
        layers = {name: _concatenated(branch_map, name, folds, stacked)
                  for name, folds in per_layer.items()}
        for name, ops in layers.items():
            check_finite(name, (ops.a, ops.bt, ops.pchan))
        return cls(branch_map, tuple(stacked), layers, tuple(warnings))

    def with_strengths(self, strengths: Sequence[float]) -> AdapterStack:
        """The same folded adapters at other strengths (no file read, no fold)."""
        if len(strengths) != len(self.adapters):
            raise ValueError("one strength per adapter")
        adapters = tuple(replace(a, strength=float(s))
                         for a, s in zip(self.adapters, strengths, strict=True))
        return AdapterStack(self.branch_map, adapters, self._layers, self._load_warnings,
                            self._rescales)

    # Reading --------------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return sum(a.length for a in self.adapters)

    @property
    def strengths(self) -> tuple[float, ...]:
        return tuple(a.strength for a in self.adapters)

    def operands(self, rank: int | None = None, dtype=np.float32) -> dict[str, np.ndarray]:
        """Every branch input of the engine, padded to `rank` rows with zeros (default: the
        stack's own rank), in `dtype` (checked finite after the cast)."""
        rank = self._padded_rank(rank)
        out: dict[str, np.ndarray] = {}
        for name, layer in self.branch_map.layers.items():
            ops = self._layers[name]
            check_finite(name, (ops.a, ops.bt), dtype)  # before the cast can overflow
            a = np.zeros((1, rank, layer.in_features), dtype)
            bt = np.zeros((1, rank, layer.out_features), dtype)
            a[0, : self.rank] = ops.a
            bt[0, : self.rank] = ops.bt
            out[layer.a_input], out[layer.b_input] = a, bt
        out.update(self.strength_operands(rank=rank, dtype=dtype, all_layers=True))
        return out

    def strength_operands(self, strengths: Sequence[float] | None = None,
                          rank: int | None = None, dtype=np.float32,
                          all_layers: bool = False) -> dict[str, np.ndarray]:
        """What a strength change writes: `lora_srow` (1, 1, rank) and the P (1, 1, out) input
        of each layer a DoRA adapts (of every layer when `all_layers`)."""
        rank = self._padded_rank(rank)
        values = self.strengths if strengths is None else tuple(float(s) for s in strengths)
        check_finite("strengths", (np.asarray(values, np.float32),), dtype)
        srow = np.zeros((1, 1, rank), dtype)
        for adapter, s in zip(self.adapters, values, strict=True):
            srow[0, 0, adapter.start : adapter.start + adapter.length] = s
        out = {self.branch_map.srow_input: srow}
        packed = self.packed_rescales(values, dtype)
        for name, offset, size in self._rescales.layout:
            out[name] = packed[offset : offset + size].reshape(1, 1, size)
        if all_layers:
            for layer in self.branch_map.layers.values():
                if layer.p_input not in out:
                    out[layer.p_input] = np.zeros((1, 1, layer.out_features), dtype)
        return out

    def packed_rescales(self, strengths: Sequence[float] | None = None,
                        dtype=np.float32) -> np.ndarray:
        """Every DoRA-adapted layer's P one after another (`rescale_layout` says where), in
        one array: one matrix-vector product and one copy for an engine that keeps them in one
        buffer."""
        values = self.strengths if strengths is None else tuple(float(s) for s in strengths)
        packed = self._rescales.combined(values)
        check_finite("strengths", (packed,), dtype)
        return packed.astype(dtype, copy=False)

    @property
    def rescale_layout(self) -> tuple[tuple[str, int, int], ...]:
        """(P input name, offset, length) of each DoRA-adapted layer in `packed_rescales`."""
        return self._rescales.layout

    def rescale_factors(self) -> dict[str, np.ndarray]:
        """P input name -> (n_adapters, out) per-adapter rescales (c - 1), for an engine that
        forms P = strengths @ factors itself (on the device)."""
        return {name: self._rescales.factors[:, offset : offset + size]
                for name, offset, size in self._rescales.layout}

    def _padded_rank(self, rank: int | None) -> int:
        rank = self.rank if rank is None else int(rank)
        if rank < self.rank:
            raise ValueError(f"operands of rank {self.rank} cannot be bound at rank {rank}")
        return rank



@dataclass(frozen=True)
class _PackedRescales:
    """The DoRA rescales (c - 1) of every layer some DoRA adapts, side by side: P of all of
    them at any strengths is one product, strengths @ factors."""

    factors: np.ndarray  # (n_adapters, total rows)
    layout: tuple[tuple[str, int, int], ...]  # (P input, offset, rows)

    @classmethod
    def of(cls, branch_map: BranchMap, layers: dict[str, _LayerOperands],
           n_adapters: int) -> _PackedRescales:
        blocks, layout, offset = [], [], 0
        for name, layer in branch_map.layers.items():
            pchan = layers[name].pchan
            if pchan is None:
                continue
            blocks.append(pchan)
            layout.append((layer.p_input, offset, layer.out_features))
            offset += layer.out_features
        factors = (np.ascontiguousarray(np.concatenate(blocks, axis=1)) if blocks
                   else np.zeros((n_adapters, 0), np.float32))
        return cls(factors=factors, layout=tuple(layout))

    def combined(self, strengths: Sequence[float]) -> np.ndarray:
        return np.asarray(strengths, np.float32) @ self.factors


def zero_operands(branch_map: BranchMap, rank: int = 1, dtype=np.float32) -> dict[str, np.ndarray]:
    """All-zero operands: the branch engine then computes exactly the plain model."""
    out = {}
    for layer in branch_map.layers.values():
        out[layer.a_input] = np.zeros((1, rank, layer.in_features), dtype)
        out[layer.b_input] = np.zeros((1, rank, layer.out_features), dtype)
        out[layer.p_input] = np.zeros((1, 1, layer.out_features), dtype)
    out[branch_map.srow_input] = np.zeros((1, 1, rank), dtype)
    return out


def _concatenated(branch_map: BranchMap, name: str, folds: list[LayerFold | None],
                  stacked: list[StackedAdapter]) -> _LayerOperands:
    """One layer's blocks side by side along the rank; zero rows where an adapter does not
    touch the layer or has a smaller rank on it than its own."""
    layer = branch_map.layers[name]
    total = sum(a.length for a in stacked)
    a = np.zeros((total, layer.in_features), np.float32)
    bt = np.zeros((total, layer.out_features), np.float32)
    pchan = None
    for k, (fold, adapter) in enumerate(zip(folds, stacked, strict=True)):
        if fold is None:
            continue
        rows = fold.a.shape[0]
        a[adapter.start : adapter.start + rows] = fold.a
        bt[adapter.start : adapter.start + rows] = fold.bt
        if fold.pchan is not None:
            if pchan is None:
                pchan = np.zeros((len(stacked), layer.out_features), np.float32)
            pchan[k] = fold.pchan
    return _LayerOperands(a=a, bt=bt, pchan=pchan)
