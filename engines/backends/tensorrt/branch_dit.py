"""The branch DiT of one TensorRT backend: the engine that serves adapters, its layer map, the
operand buffers every branch graph reads, and which stack and strengths those buffers hold.

Loaded by the first take with adapters (a take without runs the plain DiT and pays nothing).
The engine's profile says how much stacked rank it takes (the maximum of `lora_srow`'s last
dimension, as the official runtime reads it), and the graphs are captured at that rank, so no
stack within it ever needs another capture: `apply` only writes buffers - the strengths alone
when only they changed, the whole stack when the files did.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engines.adapters.bases import SvdBases
from engines.adapters.branch_map import BranchMap
from engines.adapters.choice import AdapterChoice
from engines.adapters.stack import AdapterStack
from engines.backends.tensorrt.branch_operands import (
    BranchOperands,
    OperandLayer,
    PreparedStack,
)
from engines.backends.tensorrt.engine_error import EngineError
from engines.backends.tensorrt.pout_fold import PoutFold
from engines.backends.tensorrt.runners import EngineRunner
from engines.backends.tensorrt.tensor_spec import TensorSpec
from engines.cuda.stream import Stream

log = logging.getLogger(__name__)

PREPARED_STACKS = 2  # stacks kept ready to swap back to (the A/B rows in pinned memory)


def check_branch_engine(specs: dict[str, TensorSpec], bmap: BranchMap, engine: str,
                        map_name: str) -> int:
    """The stacked rank the engine takes (its profile's maximum of `lora_srow`), once every
    operand the map names is an input of the right size and the engine has no other adapter
    input. EngineError (one sentence) when engine and map do not belong together."""
    def mismatch(what: str) -> EngineError:
        return EngineError(f"The branch engine '{engine}' and its map '{map_name}' do not match "
                           f"({what}); get both from one build or download.")

    srow = specs.get(bmap.srow_input)
    if srow is None or not srow.is_input:
        raise mismatch(f"the engine has no '{bmap.srow_input}' input")
    if srow.profile is None:
        raise mismatch(f"'{bmap.srow_input}' has no rank range in the engine's profile")
    wanted: dict[str, tuple[int, ...]] = {}
    for layer in bmap.layers.values():
        wanted[layer.a_input] = (1, -1, layer.in_features)
        wanted[layer.b_input] = (1, -1, layer.out_features)
        wanted[layer.p_input] = (1, 1, layer.out_features)
    for name, shape in wanted.items():
        spec = specs.get(name)
        if spec is None or not spec.is_input:
            raise mismatch(f"the engine has no input '{name}'")
        if len(spec.shape) != 3 or any(w >= 0 and g != w for w, g in zip(shape, spec.shape,
                                                                          strict=True)):
            raise mismatch(f"'{name}' is {spec.shape} in the engine, {shape} in the map")
    extra = sorted(name for name, spec in specs.items() if spec.is_input
                   and name.startswith(("loraA::", "loraB::", "loraP::")) and name not in wanted)
    if extra:
        raise mismatch(f"the map lacks the engine's input '{extra[0]}'")
    return int(srow.profile[2][-1])


def _stack_key(choices: Sequence[AdapterChoice]) -> tuple:
    """Which files in which order (not the strengths): a changed file is another stack."""
    key = []
    for choice in choices:
        try:
            stat = os.stat(choice.path)
            key.append((str(choice.path), stat.st_mtime_ns, stat.st_size))
        except OSError:
            key.append((str(choice.path), None, None))
    return tuple(key)


class BranchDit:
    """The branch engine, its map, its operand buffers (at the captured rank) and the stack
    they hold. Counts its writes, so tests and the benchmark can tell a strength write from a
    swap."""

    def __init__(self, engine: EngineRunner, bmap: BranchMap, stream: Stream,
                 map_name: str = "branch map", kernel_cache_dir: Path | None = None,
                 bases: SvdBases | None = None) -> None:
        self.engine = engine
        self.rank_max = check_branch_engine(engine.specs, bmap, engine.name, map_name)
        # The engine's profile, not the map's note of it, says what the engine takes.
        self.map = dataclasses.replace(bmap, rank_max=self.rank_max)
        self.capture_rank = self.rank_max
        self.bases = bases  # the frozen SVD bases -xs adapters need, where the set has them
        layers = [OperandLayer(layer.a_input, layer.b_input, layer.p_input, layer.in_features,
                               layer.out_features) for layer in bmap.layers.values()]
        self.dtype = engine.specs[bmap.srow_input].dtype
        self.operands = BranchOperands(layers, self.capture_rank, self.dtype, stream,
                                       bmap.srow_input, lambda: PoutFold(kernel_cache_dir))
        self._prepared: OrderedDict[tuple, tuple[AdapterStack, PreparedStack]] = OrderedDict()
        self._current: tuple | None = None
        self._strengths: tuple[float, ...] | None = None
        self.swaps = 0  # whole stacks written
        self.strength_writes = 0  # strengths alone written

    def apply(self, choices: Sequence[AdapterChoice]) -> list[str]:
        """Make the operand buffers hold `choices` at their strengths (nothing is captured).
        Returns the stack's warnings; AdapterError for a stack the engine cannot serve."""
        key = _stack_key(choices)
        strengths = tuple(float(c.effective_strength) for c in choices)
        entry = self._prepared.pop(key, None)
        if entry is None:
            stack = AdapterStack.build(choices, self.map, self.bases)
            prepared = self.operands.prepare(stack.operands(dtype=_numpy_type(self.dtype)),
                                             stack.rank, _dora_rows(stack))
            entry = (stack, prepared)
        self._prepared[key] = entry  # now the most recently used
        self._evict()
        stack, prepared = entry
        if key != self._current:
            self.operands.write_factors(prepared)
            self.operands.write_strengths(_srow(stack, strengths), strengths, everything=True)
            self._current, self._strengths = key, strengths
            self.swaps += 1
        elif strengths != self._strengths:
            self.operands.write_strengths(_srow(stack, strengths), strengths)
            self._strengths = strengths
            self.strength_writes += 1
        # Judged at the strengths the stack was loaded with, as the official runtime judges
        # sign flips once per stack: re-judging a DoRA stack costs milliseconds per change.
        return list(stack.warnings)

    def _evict(self) -> None:
        while len(self._prepared) > PREPARED_STACKS:
            key, (_, prepared) = self._prepared.popitem(last=False)
            if key == self._current:  # its rows are on the device: forget it ever was
                self._current = self._strengths = None
            self.operands.stream.synchronize()  # no copy still reads the block
            prepared.free()

    def close(self) -> None:
        """Free the operands and prepared stacks, then the engine (after the graphs that used
        them: the backend drops those first)."""
        self.operands.stream.synchronize()
        for _, prepared in self._prepared.values():
            prepared.free()
        self._prepared.clear()
        self.operands.free()
        self.engine.close()


def _srow(stack: AdapterStack, strengths: Sequence[float]) -> np.ndarray:
    """srow over the stack's own rank: adapter k's rows carry its strength."""
    srow = np.zeros(stack.rank, np.float32)
    for adapter, strength in zip(stack.adapters, strengths, strict=True):
        srow[adapter.start:adapter.start + adapter.length] = strength
    return srow


def _dora_rows(stack: AdapterStack) -> dict[str, np.ndarray]:
    """P input -> (adapters, out) rows (c_k - 1) of every layer a DoRA adapts (none: empty):
    P at strengths s is s @ rows, which the GPU folds at each strength change. Each row is P at
    one adapter's strength 1 and the others' 0 (exact: the others add zeros)."""
    count = len(stack.adapters)
    rows: dict[str, np.ndarray] = {}
    for k in range(count):
        alone = [1.0 if i == k else 0.0 for i in range(count)]
        for name, value in stack.strength_operands(alone).items():
            if name != stack.branch_map.srow_input:
                rows.setdefault(name, np.zeros((count, value.shape[-1]), np.float32))[k] = \
                    value.reshape(-1)
    return rows


def _numpy_type(dtype: str) -> type:
    """The type the stack's operands are cast to (and checked finite in) for the engine's
    `dtype`: float16 overflow shows there; bfloat16 is rounded from float32 as it is stored."""
    return np.float16 if dtype == "float16" else np.float32
