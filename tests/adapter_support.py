"""Adapter files for tests: small LoRA/DoRA .safetensors in Stable Audio 3's native layout
(`<layer>.parametrizations.weight.0.<param>` and a `lora_config` in the metadata), written with
the safetensors package itself, for the demo DiT's two adaptable linears."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from engines.demo.dit_linears import LAYER_NAMES, adapter_key

WIDTH = 256  # the demo linears' in and out features


def write_adapter(path: Path, variant: str = "lora", rank: int = 4, seed: int = 0,
                  baked: bool = True, layers: tuple[str, ...] = LAYER_NAMES) -> Path:
    """An adapter of `variant` and `rank` at `path` (DoRA with baked row norms unless told)."""
    from safetensors.numpy import save_file

    rng = np.random.default_rng(seed)
    tensors = {}
    for name in layers:
        prefix = f"{adapter_key(name)}.parametrizations.weight.0."
        if variant.endswith("-xs"):
            tensors[prefix + "M_xs"] = rng.standard_normal((rank, rank)).astype(np.float32) * .01
        else:
            tensors[prefix + "lora_A"] = rng.standard_normal((rank, WIDTH)).astype(np.float32) * .01
            tensors[prefix + "lora_B"] = rng.standard_normal((WIDTH, rank)).astype(np.float32) * .01
        if variant.startswith(("dora", "bora")):
            key = "magnitude_r" if variant.startswith("bora") else "magnitude"
            tensors[prefix + key] = np.ones(WIDTH, np.float32)
            if variant.startswith("bora"):
                tensors[prefix + "magnitude_c"] = np.ones(WIDTH, np.float32)
            if baked:
                tensors[prefix + "baked_vnorm_row"] = np.ones(WIDTH, np.float32)
    config = {"rank": rank, "alpha": float(rank), "adapter_type": variant}
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata={"lora_config": json.dumps(config)})
    return path
