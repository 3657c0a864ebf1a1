"""Host-side element types for the small inputs bound straight to engines.

The SA3 contract says to read every dtype from the engine and never assume one. Big tensors
(latents, hidden states, audio) pass through cast kernels on the GPU; the small ones (`t`,
`t5_mask`, `seconds_total`, `limiter_ceiling`, token ids and masks) are written to the pinned
input block already in the engine's type, so no kernel is needed for them.
"""

from __future__ import annotations

import numpy as np

from engines.errors import BackendError

HOST_TYPES: dict[str, type] = {
    "float32": np.float32, "float16": np.float16, "bfloat16": np.uint16,  # bf16 as its bits
    "int64": np.int64, "int32": np.int32,
}
FLOAT_TYPES = ("float32", "float16", "bfloat16")  # also what the cast kernels convert
INTEGER_TYPES = ("int64", "int32")


def host_type(engine: str, tensor: str, dtype: str, allowed: tuple[str, ...]) -> type:
    """The numpy storage type for `tensor` of `engine` declared as `dtype`, or a sentence."""
    if dtype not in allowed:
        kinds = ", ".join(allowed)
        raise BackendError(
            f"The engine '{engine}' declares input '{tensor}' as {dtype}, which SA3 Studio "
            f"cannot feed (it expects {kinds}); use an engine built from the SA3 ONNX files.")
    return HOST_TYPES[dtype]


def bfloat16_bits(values: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns, rounded to nearest even (NaN stays NaN)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1)))
    out = (rounded >> np.uint32(16)).astype(np.uint16)
    nan = np.isnan(values)
    if np.any(nan):
        out[nan] = np.uint16(0x7FC0)
    return out


def store(target: np.ndarray, values, dtype: str) -> None:
    """Write `values` into `target`, a pinned view in the storage type of an engine input
    declared as `dtype` (numpy casts in place; only bfloat16 needs its bits computed)."""
    if dtype == "bfloat16":
        target[...] = bfloat16_bits(np.asarray(values, np.float32))
    else:
        target[...] = values
