"""The adapter operands of the branch DiT, in device memory at the rank the graphs are captured
with, bound once as that engine's inputs.

The branch engine computes, for every adapted linear, y = W0.x.(1 + P) + Bt^T.(srow * (A.x)),
with A (1, R, in), Bt (1, R, out), P (1, 1, out) and srow (1, 1, R) as network inputs. Here they
live at fixed addresses for the life of the backend and every captured graph reads them where
they are, so:
* a strength change writes srow (and, for a DoRA, refolds P on the GPU) - one small copy and at
  most one kernel, then the next take is one replay;
* a same-rank swap writes A and Bt as well;
* a rank change within the captured rank writes the new rows and zeroes the rows the old stack
  used beyond them: zero rows of A, Bt and srow add nothing, so nothing is captured again.

A and Bt (megabytes per unit of rank) sit in one device allocation, copied from a pinned block
prepared once per stack (swapping back to a stack only copies). The strengths, srow and every P
(kilobytes) sit in one mirrored arena, strengths and srow first, so a strength change copies a
few hundred bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from engines.backends.tensorrt import dtypes
from engines.backends.tensorrt.pout_fold import PoutFold
from engines.cuda.api import call
from engines.cuda.memory import Arena, DeviceBuffer, PinnedBuffer
from engines.cuda.stream import Stream
from engines.errors import BackendError

WEIGHTS = "adapter strengths"  # the arena region the P fold reads (one float per adapter)


@dataclass(frozen=True)
class OperandLayer:
    """One adapted linear's operand inputs: the names the engine declares and their sizes."""

    a_input: str
    b_input: str
    p_input: str
    in_features: int
    out_features: int


@dataclass
class PreparedStack:
    """One stack ready to be written: its A and Bt rows in the engine's type (layer order, A
    then Bt) in a pinned block, and, when a DoRA is in it, the rows (c_k - 1) of every layer a
    DoRA adapts, flat (adapters, total) float32, with each such layer's P input and start."""

    factors: PinnedBuffer
    rank: int
    dora_rows: PinnedBuffer | None = None
    dora_layers: tuple[tuple[str, int], ...] = ()  # (P input, first value in the flat rows)
    adapters: int = 0

    @property
    def nbytes(self) -> int:
        return self.factors.nbytes + (self.dora_rows.nbytes if self.dora_rows else 0)

    def free(self) -> None:
        self.factors.free()
        if self.dora_rows is not None:
            self.dora_rows.free()


class BranchOperands:
    """Device buffers for every operand input of the branch DiT at `rank` rows, stored in the
    engine's declared `dtype` (float16 on the published engine, float32 on the demo)."""

    def __init__(self, layers: Sequence[OperandLayer], rank: int, dtype: str, stream: Stream,
                 srow_input: str = "lora_srow",
                 make_fold: Callable[[], PoutFold] = PoutFold) -> None:
        if rank < 1:
            raise BackendError("The branch engine needs a rank of at least 1.")
        dtypes.host_type("branch DiT", srow_input, dtype, dtypes.FLOAT_TYPES)
        self.layers = tuple(layers)
        self.rank = rank
        self.dtype = dtype
        self.stream = stream
        self.srow_input = srow_input
        self.written_rank = 0  # rows of A and Bt that may be non-zero on the device
        self._store = dtypes.HOST_TYPES[dtype]
        self._make_fold = make_fold
        self._fold: PoutFold | None = None
        self._dora: PreparedStack | None = None  # the stack whose P the fold writes
        self._dora_device: list[DeviceBuffer] = []  # rows, P addresses, starts
        big = []
        for layer in self.layers:
            big += [(layer.a_input, (1, rank, layer.in_features), self._store),
                    (layer.b_input, (1, rank, layer.out_features), self._store)]
        small = [(WEIGHTS, (rank,), np.float32), (srow_input, (1, 1, rank), self._store)]
        small += [(layer.p_input, (1, 1, layer.out_features), self._store)
                  for layer in self.layers]
        self.factors: Arena | None = None
        self.strengths: Arena | None = None
        try:
            self.factors = Arena(big, mirrored=False)
            self.strengths = Arena(small, mirrored=True)
            call("cuMemsetD8Async", self.factors.device.ptr, 0, self.factors.nbytes,
                 stream.handle)
            self.strengths.pinned.array[...] = 0
            self._copy_strengths(everything=True)
            stream.synchronize()
        except BaseException:
            self.free()
            raise

    # ------------------------------------------------------------------ what the engine binds
    def addresses(self) -> dict[str, int]:
        """Input name -> device address, for every operand input (bound once per context)."""
        found = {name: region.ptr for name, region in self.factors.regions.items()}
        found.update((name, region.ptr) for name, region in self.strengths.regions.items()
                     if name != WEIGHTS)
        return found

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Input name -> the shape every context of the branch DiT is set to: the captured rank."""
        found = {name: region.shape for name, region in self.factors.regions.items()}
        found.update((name, region.shape) for name, region in self.strengths.regions.items()
                     if name != WEIGHTS)
        return found

    @property
    def nbytes(self) -> int:
        return self.factors.nbytes + self.strengths.nbytes

    # ------------------------------------------------------------------ stacks
    def prepare(self, operands: Mapping[str, np.ndarray], rank: int,
                dora_rows: Mapping[str, np.ndarray] | None = None) -> PreparedStack:
        """A stack's A and Bt rows 0..rank-1 (from `operands`) in the engine's type, and the
        (adapters, out) rows (c_k - 1) of each layer a DoRA adapts (`dora_rows`, by P input),
        in pinned blocks: made once per stack, so swapping back to it costs only the copies."""
        if rank > self.rank:
            raise BackendError(f"The adapters' total rank {rank} is over the {self.rank} the "
                               f"branch engine was set up with.")
        need = sum(rank * (layer.in_features + layer.out_features) for layer in self.layers)
        prepared = PreparedStack(PinnedBuffer((max(need, 1),), self._store), rank)
        try:
            flat = prepared.factors.array
            offset = 0
            for name, width in self._factor_inputs():
                count = rank * width
                _store_rows(flat[offset:offset + count].reshape(rank, width), operands[name],
                            rank, width, self.dtype, name)
                offset += count
            if dora_rows:
                self._prepare_dora(prepared, dora_rows)
        except BaseException:
            prepared.free()
            raise
        return prepared

    def _prepare_dora(self, prepared: PreparedStack, rows: Mapping[str, np.ndarray]) -> None:
        adapters = {np.asarray(r).shape[0] for r in rows.values()}
        if len(adapters) != 1:
            raise BackendError("Every DoRA layer needs one row per adapter of the stack.")
        count = adapters.pop()
        total = sum(np.asarray(r).shape[1] for r in rows.values())
        prepared.dora_rows = PinnedBuffer((count, total), np.float32)
        block, start, layers = prepared.dora_rows.array, 0, []
        for name, values in rows.items():
            width = np.asarray(values).shape[1]
            block[:, start:start + width] = values
            layers.append((name, start))
            start += width
        prepared.dora_layers, prepared.adapters = tuple(layers), count

    def write_factors(self, prepared: PreparedStack) -> None:
        """Copy a prepared stack's A and Bt rows into place, zero the rows the previous, larger
        stack used beyond them, and hand its DoRA rows to the P fold; ordered on the stream
        before the next take. Its strengths follow with `write_strengths(everything=True)`."""
        rank = prepared.rank
        itemsize = np.dtype(self._store).itemsize
        offset = 0
        for name, width in self._factor_inputs():
            nbytes = rank * width * itemsize
            region = self.factors[name]
            call("cuMemcpyHtoDAsync", region.ptr, prepared.factors.ptr + offset, nbytes,
                 self.stream.handle)
            stale = (self.written_rank - rank) * width * itemsize
            if stale > 0:
                call("cuMemsetD8Async", region.ptr + nbytes, 0, stale, self.stream.handle)
            offset += nbytes
        self.written_rank = rank
        self._dora = prepared if prepared.dora_rows is not None else None
        if self._dora is not None:
            self._upload_dora(self._dora)

    def _upload_dora(self, prepared: PreparedStack) -> None:
        """The DoRA rows and the P addresses and starts the fold kernel reads."""
        if self._fold is None:
            self._fold = self._make_fold()
        addresses = np.array([self.strengths[name].ptr for name, _ in prepared.dora_layers],
                             np.uint64)
        starts = np.array([start for _, start in prepared.dora_layers], np.int32)
        sources = ((prepared.dora_rows.ptr, prepared.dora_rows.nbytes),
                   (addresses.ctypes.data, addresses.nbytes), (starts.ctypes.data, starts.nbytes))
        while len(self._dora_device) < len(sources):
            self._dora_device.append(DeviceBuffer())
        self.stream.synchronize()  # no fold still reads the buffers written below
        for device, (host, nbytes) in zip(self._dora_device, sources, strict=True):
            device.reshape((nbytes,), np.uint8)  # grows only
            call("cuMemcpyHtoD", device.ptr, host, nbytes)

    def write_strengths(self, srow: np.ndarray, weights: Sequence[float],
                        everything: bool = False) -> None:
        """A stack's srow (its own rank; rows beyond are zeroed) and per-adapter strengths: one
        copy of the strengths and srow (`everything`: of every P too, zeroed on the host), then
        the fold of each DoRA layer's P from those strengths on the GPU."""
        arena = self.strengths
        row = arena[self.srow_input].host.reshape(-1)
        values = np.asarray(srow, np.float32).reshape(-1)
        if values.size > row.size or len(weights) > arena[WEIGHTS].host.size:
            raise BackendError(f"The adapters' total rank {values.size} is over the {row.size} "
                               f"the branch engine was set up with.")
        dtypes.store(row[:values.size], values, self.dtype)
        row[values.size:] = 0
        strengths = arena[WEIGHTS].host
        strengths[:len(weights)] = weights
        strengths[len(weights):] = 0
        if everything:
            for layer in self.layers:
                arena[layer.p_input].host[...] = 0
        self._copy_strengths(everything)
        dora = self._dora
        if dora is not None:
            table, starts, rows = (self._dora_device[1], self._dora_device[2],
                                   self._dora_device[0])
            self._fold.launch(self.stream, table.ptr, starts.ptr, len(dora.dora_layers),
                              rows.ptr, arena[WEIGHTS].ptr, dora.adapters,
                              dora.dora_rows.shape[1], self.dtype)

    def write_stack(self, operands: Mapping[str, np.ndarray], rank: int) -> None:
        """Explicit operands of `rank` rows (A, Bt, srow and P as given; no fold), written and
        finished: for checks, not for takes."""
        prepared = self.prepare(operands, rank)
        try:
            self.write_factors(prepared)
            self.write_strengths(operands[self.srow_input], ())
            for layer in self.layers:
                dtypes.store(self.strengths[layer.p_input].host, operands[layer.p_input],
                             self.dtype)
            self._copy_strengths(everything=True)
            self.stream.synchronize()  # the copies read the block freed below
        finally:
            prepared.free()

    def _copy_strengths(self, everything: bool) -> None:
        arena = self.strengths
        # The strengths and srow lead the arena: a strength change copies only them.
        srow = arena[self.srow_input]
        nbytes = arena.nbytes if everything else srow.ptr + srow.nbytes - arena.device.ptr
        call("cuMemcpyHtoDAsync", arena.device.ptr, arena.pinned.ptr, nbytes,
             self.stream.handle)

    def _factor_inputs(self) -> list[tuple[str, int]]:
        return [pair for layer in self.layers
                for pair in ((layer.a_input, layer.in_features),
                             (layer.b_input, layer.out_features))]

    def free(self) -> None:
        for owner in (self.factors, self.strengths, *self._dora_device, self._fold):
            if owner is not None:
                owner.free()
        self.factors = self.strengths = self._fold = self._dora = None
        self._dora_device = []


def _store_rows(target: np.ndarray, values: np.ndarray, rank: int, width: int, dtype: str,
                name: str) -> None:
    """The first `rank` rows of an operand (1, R >= rank, width) into `target` (rank, width)."""
    array = np.asarray(values)
    if array.ndim != 3 or array.shape[1] < rank or array.shape[2] != width:
        raise BackendError(f"The adapter operand '{name}' has shape {array.shape}; the branch "
                           f"engine takes (1, {rank}, {width}).")
    rows = array[0, :rank]
    if dtype == "bfloat16":
        target[...] = dtypes.bfloat16_bits(rows.astype(np.float32))
    else:
        target[...] = rows  # numpy converts to the engine's type as it copies
