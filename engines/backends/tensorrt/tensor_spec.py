"""One I/O tensor of an engine as TensorRT reports it, and the shape helpers its checks share.

No tensorrt import: the pipeline, the GPU tests' doubles and the contexts use these as plain data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engines.backends.tensorrt.engine_error import EngineError

DTYPES: dict[str, int] = {
    "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4,
    "int8": 1, "uint8": 1, "bool": 1, "fp8": 1,
}
"""Element type name -> bytes per element, for every type an SA3 engine may use."""


@dataclass(frozen=True)
class TensorSpec:
    """One I/O tensor of an engine as TensorRT reports it."""

    name: str
    is_input: bool
    dtype: str  # a key of DTYPES
    shape: tuple[int, ...]  # -1 where dynamic
    profile: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None = None
    """(min, opt, max) of profile 0 for an input with dynamic dims, else None."""

    @property
    def itemsize(self) -> int:
        return DTYPES[self.dtype]

    @property
    def is_dynamic(self) -> bool:
        return any(dim < 0 for dim in self.shape)

    @property
    def max_shape(self) -> tuple[int, ...]:
        """The largest shape an input can take (its static shape when it has no profile)."""
        return self.profile[2] if self.profile is not None else self.shape

    def nbytes(self, shape: tuple[int, ...] | None = None) -> int:
        """Bytes a buffer of `shape` (default: the static shape) of this tensor needs."""
        dims = self.shape if shape is None else tuple(shape)
        if any(dim < 0 for dim in dims):
            raise EngineError(
                f"Tensor '{self.name}' has no concrete shape yet {dims}; pass the shape it will "
                "run with."
            )
        count = 1
        for dim in dims:
            count *= dim
        return count * self.itemsize


def as_shape(dims: Any) -> tuple[int, ...] | None:
    """A TensorRT Dims as a tuple, or None for the invalid Dims{-1} TensorRT returns on error
    (its len() raises, because __len__ gives -1)."""
    try:
        count = len(dims)
    except (TypeError, ValueError):
        return None
    return tuple(int(dims[i]) for i in range(count))


def fmt_shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(dim) for dim in shape) + ")"
