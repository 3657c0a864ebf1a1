"""The warnings and guards the official branch runtime has, each one sentence.

- The seconds embedder is dropped from every adapter: its output is global conditioning (it
  modulates every block), so two adapters rescaling it can invert the model's gain and render
  silence; adapters should not train it at all.
- Adapter layers the engine has no branch for are ignored, and said so: an adapter can load
  and still sound wrong.
- DoRA rescales are summed across a stack; where the base weight's coefficient 1 + pout goes
  negative on more than 1% of rows the stack cancels the model instead of adapting it.
- Operands are activations to the engine, which never checks them: a non-finite operand
  becomes NaN audio with every call reporting success, so it is refused here.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from engines.adapters.errors import ADAPTER_KEY, STRENGTH_KEY, lower_strengths
from engines.errors import Advice, Remedy

EXCLUDED_LAYERS = ("conditioners.seconds_total.embedder.embedding.1",)
SIGN_FLIP_LIMIT = 0.01  # share of rows whose base coefficient may flip before we warn


def excluded_warning(file_name: str, layers: list[str]) -> str:
    return (f"The adapter '{file_name}' also adapts {', '.join(layers)}, the seconds embedder, "
            f"which is ignored: it is global conditioning, and rescaling it can silence the "
            f"sound (retrain the adapter without it to remove this note).")


def unserved_warning(file_name: str, missing: int, total: int) -> str:
    return (f"{missing} of the {total} layers the adapter '{file_name}' adapts have no branch "
            f"in this engine and are ignored, so it may not sound as trained.")


def sign_flip_warning(rho: np.ndarray) -> str | None:
    """A sentence when more than 1% of the DoRA-adapted rows have a negative base coefficient."""
    if rho.size == 0:
        return None
    share = float(np.mean(rho < 0))
    if share <= SIGN_FLIP_LIMIT:
        return None
    return Advice(f"{share:.1%} of the rows the DoRA adapters rescale have their base weight "
                  f"sign-flipped at these strengths, so the stack cancels the model instead of "
                  f"adapting it and can sound quieter than no adapter; lower the strengths ({{0}}) "
                  f"or drop the adapter trained furthest from its base ({{1}}).",
                  Remedy.setting(STRENGTH_KEY), Remedy.setting(ADAPTER_KEY))


def check_finite(where: str, arrays: Iterable[np.ndarray | None], dtype=None) -> None:
    """AdapterError when an operand holds NaN or Inf, or (with `dtype`) a value that `dtype`
    cannot hold, so casting it would make an Inf: checked on the float32 values before the
    cast, since numpy's float16 arithmetic is ten times slower than its float32."""
    bad = 0
    for a in arrays:
        if a is None:
            continue
        limit = np.finfo(dtype if dtype is not None else a.dtype).max
        bad += int(np.size(a) - np.count_nonzero(np.abs(a) <= limit))  # NaN fails <= too
    if bad:
        raise lower_strengths(f"Folding the adapters gave {bad} values that are not finite "
                              f"numbers in {where}, which would make the model produce NaN audio")
