"""The two demo adapters shipped in resources/demo/adapters/, made procedurally by this script
(`python -m engines.demo.demo_adapters [FOLDER]`), in SA3's native adapter layout for the demo
DiT's layers (engines.demo.dit_linears). They are demo adapters, not trained ones:

  demo-bright.safetensors  lora, rank 4: adds a haze of high bands that follows each band
                           group's level (a brighter sound)
  demo-dark.safetensors    dora-rows, rank 4, row norms baked: rescales the rows so the high
                           bands fall away, with a little low warmth added (a darker sound)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from engines.adapters.files import NATIVE_MARKER
from engines.adapters.variants import BAKED_NORM
from engines.constants import LATENT_CHANNELS
from engines.demo import write_atomic
from engines.demo.dit_linears import LAYER_NAMES, adapter_key
from engines.demo.layout import BANDS
from engines.lazy import lazy_import
from engines.paths import resource_file, resources_dir

safetensors_numpy = lazy_import("safetensors.numpy")

BRIGHT = "demo-bright.safetensors"
DARK = "demo-dark.safetensors"
RANK = 4  # one rank row per band group: noise L, noise R, tone L, tone R
GROUPS = LATENT_CHANNELS // BANDS
NOTE = "Procedural demo adapter for SA3 Studio's demo set (not Stable Audio 3, not trained)."


def adapters_folder() -> Path:
    return resources_dir() / "demo" / "adapters"


def demo_adapter_path(name: str) -> Path:
    """A shipped demo adapter (ResourceMissingError when the installation lacks it)."""
    return resource_file("demo", "adapters", name)


def _group_factors(rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(A (4, 256), B (256, 4)): group g's rank row reads `rows` of its bands and writes
    `cols` of its bands."""
    a = np.zeros((RANK, LATENT_CHANNELS), np.float32)
    b = np.zeros((LATENT_CHANNELS, RANK), np.float32)
    for group in range(GROUPS):
        bands = slice(group * BANDS, (group + 1) * BANDS)
        a[group, bands] = rows
        b[bands, group] = cols
    return a, b


def _tensors(layers: dict[str, dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {f"{key}{NATIVE_MARKER}{param}": np.ascontiguousarray(value, np.float32)
            for key, params in layers.items() for param, value in params.items()}


def bright_adapter() -> tuple[dict[str, np.ndarray], dict[str, str]]:
    position = np.arange(BANDS, dtype=np.float32) / (BANDS - 1)
    level = np.full(BANDS, 1.0 / BANDS, np.float32)  # the group's mean level
    haze = 1.6 * np.clip((position - 0.35) / 0.65, 0.0, 1.0) ** 1.5
    a, b = _group_factors(level, haze)
    layers = {adapter_key(name): {"lora_A": a, "lora_B": b * (1.0 if name == "band_mean"
                                                               else 0.5)}
              for name in LAYER_NAMES}
    config = {"rank": RANK, "alpha": float(RANK), "adapter_type": "lora"}
    return _tensors(layers), {"lora_config": json.dumps(config), "note": NOTE}


def dark_adapter() -> tuple[dict[str, np.ndarray], dict[str, str]]:
    position = np.arange(BANDS, dtype=np.float32) / (BANDS - 1)
    low = (position < 0.25).astype(np.float32)
    a, b = _group_factors(low / low.sum(), 0.15 * low)
    alpha = 2.0 * RANK  # scaling 2
    scaling = alpha / RANK
    fall = np.tile(1.0 - 0.7 * position ** 1.2, GROUPS).astype(np.float32)
    layers = {}
    for name in LAYER_NAMES:
        weight = np.eye(LATENT_CHANNELS, dtype=np.float32) + scaling * (b @ a)
        norms = np.linalg.norm(weight, axis=1).astype(np.float32)
        layers[adapter_key(name)] = {"lora_A": a, "lora_B": b, "magnitude": norms * fall,
                                     BAKED_NORM: norms}
    config = {"rank": RANK, "alpha": alpha, "adapter_type": "dora-rows"}
    return _tensors(layers), {"lora_config": json.dumps(config), "note": NOTE,
                              "baked_by": "engines.demo.demo_adapters"}


def write_demo_adapters(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (tensors, metadata) in ((BRIGHT, bright_adapter()), (DARK, dark_adapter())):
        path = folder / name
        write_atomic(path, safetensors_numpy.save(tensors, metadata=metadata))
        written.append(path)
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else adapters_folder()
    for made in write_demo_adapters(target):
        print(made)
