"""The eight adapter variants Stable Audio 3 trains, which four the branch engine serves, and
why the other four are refused.

The branch computes y = W0.x.(1 + pout) + Bp.(srow * (A.x)): a per-OUTPUT-row rescale (pout) and
a low-rank term. lora/lora-xs are the low-rank term alone; dora-rows[-xs] renormalise rows, which
folds into pout and Bp. A column (per-input) normalisation - dora-cols, bora - would need a
per-input scale the graph has no input for, so serving it means another engine.
"""

from __future__ import annotations

# The tensors each variant's layers carry (SA3's own parameter names).
PARAMS = {
    "lora": ("lora_A", "lora_B"),
    "dora-rows": ("lora_A", "lora_B", "magnitude"),
    "dora-cols": ("lora_A", "lora_B", "magnitude"),
    "bora": ("lora_A", "lora_B", "magnitude_r", "magnitude_c"),
    "lora-xs": ("M_xs",),
    "dora-rows-xs": ("M_xs", "magnitude"),
    "dora-cols-xs": ("M_xs", "magnitude"),
    "bora-xs": ("M_xs", "magnitude_r", "magnitude_c"),
}
VARIANTS = tuple(PARAMS)
SERVED = ("lora", "lora-xs", "dora-rows", "dora-rows-xs")
REFUSED_REASON = ("it normalises per input column, and this engine's branch can only rescale "
                  "output rows")
BAKED_NORM = "baked_vnorm_row"  # ||W0 + scaling.LR|| per output row, baked into DoRA files


def base_variant(variant: str) -> str:
    """'dora-rows-xs' -> 'dora-rows': the variant without its -xs (frozen SVD basis) form."""
    return variant[:-3] if variant.endswith("-xs") else variant


def is_xs(variant: str) -> bool:
    return variant.endswith("-xs")


def renormalises(variant: str) -> bool:
    """DoRA/BoRA: the weight's rows (or columns) are renormalised to a trained magnitude."""
    return variant.startswith(("dora", "bora"))


def canonical(name: str) -> str:
    """SA3's legacy 'dora' is 'dora-rows'."""
    return "dora-rows" if name == "dora" else name
