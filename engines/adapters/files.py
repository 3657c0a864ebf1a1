"""Reading adapter files: SA3-native and PEFT LoRA/DoRA `.safetensors`, through the safetensors
package's numpy API (never pickles: a .ckpt/.pt would run code when unpickled).

SA3-native: `<layer>.parametrizations.weight.0.<param>` tensors and a `lora_config` JSON in the
metadata ({rank, alpha, adapter_type}); scaling = alpha / rank. PEFT: `base_model.model.<layer>
.lora_A.weight` etc. and an adapter_config.json beside the file ({r, lora_alpha, use_dora,
use_rslora}). `read_adapter_info` reads the header and hashes the file, never the tensors, so
validation and provenance stay cheap; both readers keep the last few files they read, keyed by
path, size and modification time, so a take after the first costs no read.
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engines.adapters import variants
from engines.adapters.errors import pick_another
from engines.lazy import lazy_import

safetensors = lazy_import("safetensors")

NATIVE_MARKER = ".parametrizations.weight.0."
PEFT_PREFIX = "base_model.model."
PEFT_SUFFIXES = ((".lora_A.weight", "lora_A"), (".lora_B.weight", "lora_B"),
                 (".lora_magnitude_vector.weight", "magnitude"))
PICKLE_SUFFIXES = (".ckpt", ".pt", ".pth", ".bin")
_CACHED_FILES = 8


@dataclass(frozen=True)
class AdapterInfo:
    """What provenance records and validation checks, read without loading the tensors."""

    path: Path
    file_name: str
    sha256: str
    size_bytes: int
    format: str  # "sa3" (native parametrizations) | "peft"
    variant: str  # one of variants.VARIANTS
    rank: int  # the largest rank of its layers: its block of the stacked rank
    alpha: float
    scaling: float  # alpha / rank (alpha / sqrt(rank) for rsLoRA)
    layer_keys: tuple[str, ...]
    baked_norms: bool  # every layer carries baked_vnorm_row (what a DoRA needs here)

    @property
    def served(self) -> bool:
        """Whether the branch engine can serve it (variant and, for DoRA, baked norms)."""
        if self.variant not in variants.SERVED:
            return False
        return self.baked_norms or not variants.renormalises(self.variant)


@dataclass(frozen=True)
class AdapterFile:
    info: AdapterInfo
    layers: dict[str, dict[str, np.ndarray]]  # layer key -> param name -> float32 array


def check_servable(info: AdapterInfo) -> None:
    """Raise AdapterError when the branch engine cannot serve this adapter, saying why."""
    if info.variant not in variants.SERVED:
        raise pick_another(f"The adapter '{info.file_name}' is a {info.variant} adapter, which "
                           f"this engine cannot apply: {variants.REFUSED_REASON}")
    if variants.renormalises(info.variant) and not info.baked_norms:
        raise pick_another(
            f"The adapter '{info.file_name}' is a {info.variant} adapter without baked row "
            f"norms, which would need the model's full base weights; bake them with Stable "
            f"Audio 3's lora/bake_dora.py first")


def _resolve(path: Path) -> Path:
    """A file, or a PEFT folder holding one adapter_model.safetensors (or one .safetensors)."""
    if path.is_dir():
        inside = path / "adapter_model.safetensors"
        if inside.is_file():
            return inside
        found = sorted(path.glob("*.safetensors"))
        if len(found) == 1:
            return found[0]
        raise pick_another(f"The folder '{path.name}' holds {len(found)} .safetensors files, "
                           f"not one adapter")
    return path


def _checked_path(path: Path) -> Path:
    path = Path(path)
    if not path.exists():
        raise pick_another(f"The adapter file '{path}' does not exist")
    path = _resolve(path)
    if path.suffix.lower() in PICKLE_SUFFIXES:
        raise pick_another(f"The adapter '{path.name}' is a pickle file, which can run code "
                           f"when opened, so only .safetensors adapters are read")
    if path.suffix.lower() != ".safetensors":
        raise pick_another(f"The file '{path.name}' is not a .safetensors adapter")
    return path


def _stat_key(path: Path) -> tuple:
    stat = path.stat()
    return (str(path.resolve()), stat.st_size, stat.st_mtime_ns)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _group(keys) -> tuple[str, dict[str, dict[str, str]]]:
    """(format, layer -> param -> tensor key) of an adapter's tensor names."""
    keys = list(keys)
    layers: dict[str, dict[str, str]] = {}
    if any(NATIVE_MARKER in k for k in keys):
        for key in keys:
            layer, marker, param = key.partition(NATIVE_MARKER)
            if marker:
                layers.setdefault(layer, {})[param] = key
        return "sa3", layers
    if any(k.endswith(".lora_A.weight") for k in keys):
        for key in keys:
            name = key[len(PEFT_PREFIX):] if key.startswith(PEFT_PREFIX) else key
            for suffix, param in PEFT_SUFFIXES:
                if name.endswith(suffix):
                    layers.setdefault(name[: -len(suffix)], {})[param] = key
                    break
        return "peft", layers
    return "", layers


def _config(path: Path, fmt: str, metadata: dict, ranks: list[int]) -> tuple[str, float, float]:
    """(variant, alpha, scaling) from the file's metadata or PEFT's adapter_config.json."""
    rank = max(ranks)
    if fmt == "sa3":
        try:
            config = json.loads(metadata.get("lora_config") or "{}")
        except ValueError:
            config = {}
        rank = int(config.get("rank") or rank)
        alpha = float(config.get("alpha", rank))
        return variants.canonical(str(config.get("adapter_type", "lora"))), alpha, alpha / rank
    config_path = path.parent / "adapter_config.json"
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
        rank = int(config["r"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise pick_another(f"The PEFT adapter '{path.name}' has no readable "
                           f"adapter_config.json beside it") from exc
    alpha = float(config.get("lora_alpha", rank))
    scale = np.sqrt(rank) if config.get("use_rslora") else rank
    return ("dora-rows" if config.get("use_dora") else "lora"), alpha, alpha / float(scale)


def _layer_rank(shapes: dict[str, tuple]) -> int:
    shape = shapes.get("lora_A") or shapes.get("M_xs")
    return int(shape[0]) if shape else 0


def _describe(path: Path, handle, sha256: str, size: int) -> tuple[AdapterInfo, dict]:
    fmt, layers = _group(handle.keys())
    if not fmt:
        raise pick_another(f"The file '{path.name}' is not a LoRA adapter (it has neither SA3 "
                           f"parametrization tensors nor PEFT lora_A/lora_B tensors)")
    shapes = {layer: {param: tuple(handle.get_slice(key).get_shape())
                      for param, key in params.items()} for layer, params in layers.items()}
    ranks = [_layer_rank(s) for s in shapes.values()]
    if not ranks or max(ranks) <= 0:
        raise pick_another(f"The adapter '{path.name}' has no lora_A or M_xs tensors, so its "
                           f"rank is unknown")
    variant, alpha, scaling = _config(path, fmt, handle.metadata() or {}, ranks)
    if variant not in variants.VARIANTS:
        raise pick_another(f"The adapter '{path.name}' is of an unknown type '{variant}'")
    baked = all(variants.BAKED_NORM in s for s in shapes.values())
    info = AdapterInfo(path=path, file_name=path.name, sha256=sha256, size_bytes=size,
                       format=fmt, variant=variant, rank=max(ranks), alpha=alpha,
                       scaling=scaling, layer_keys=tuple(sorted(layers)), baked_norms=baked)
    return info, layers


class _Recent(OrderedDict):
    """The last few entries, oldest first out; read and written from several threads (the
    window's file reader and the GPU worker), hence the lock."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def recall(self, key):
        with self.lock:
            return self.get(key)

    def remember(self, key, value):
        with self.lock:
            self[key] = value
            self.move_to_end(key)
            while len(self) > _CACHED_FILES:
                self.popitem(last=False)
        return value


_INFOS = _Recent()
_FILES = _Recent()


def _open(path: Path):
    try:
        return safetensors.safe_open(str(path), framework="numpy")
    except ImportError:
        raise
    except Exception as exc:  # the Rust reader raises its own types for a corrupt header
        raise pick_another(f"The adapter '{path.name}' could not be read as safetensors "
                           f"({str(exc)[:120]})") from exc


def read_adapter_info(path: Path) -> AdapterInfo:
    """Describe an adapter file (header and SHA-256 only). AdapterError when it cannot be read
    or is not an adapter; a refused variant is described, not refused (see check_servable)."""
    path = _checked_path(Path(path))
    try:
        key = _stat_key(path)
        known = _INFOS.recall(key)
        if known is not None:
            return known
        sha256, size = _sha256(path), path.stat().st_size
    except OSError as exc:
        raise pick_another(f"The adapter '{path.name}' could not be read ({exc.strerror})") \
            from exc
    with _open(path) as handle:
        info, _ = _describe(path, handle, sha256, size)
    return _INFOS.remember(key, info)


def _bf16_tensor(path: Path, key: str) -> np.ndarray:
    """A BF16 tensor widened to float32 (numpy has no bfloat16): read from the raw layout."""
    with open(path, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(length))
        entry = header[key]
        start, end = entry["data_offsets"]
        handle.seek(8 + length + start)
        raw = np.frombuffer(handle.read(end - start), dtype="<u2")
    return (raw.astype(np.uint32) << 16).view(np.float32).reshape(entry["shape"])


def _tensor(path: Path, handle, key: str) -> np.ndarray:
    if handle.get_slice(key).get_dtype() == "BF16":
        return _bf16_tensor(path, key)
    return np.asarray(handle.get_tensor(key), dtype=np.float32)


def read_adapter(path: Path) -> AdapterFile:
    """The adapter with its tensors (float32). AdapterError as read_adapter_info."""
    info = read_adapter_info(path)
    key = _stat_key(info.path)
    known = _FILES.recall(key)
    if known is not None:
        return known
    try:
        with _open(info.path) as handle:
            _, names = _describe(info.path, handle, info.sha256, info.size_bytes)
            layers = {layer: {param: _tensor(info.path, handle, name)
                              for param, name in params.items()}
                      for layer, params in names.items()}
    except OSError as exc:
        raise pick_another(f"The adapter '{info.file_name}' could not be read "
                           f"({exc.strerror})") from exc
    return _FILES.remember(key, AdapterFile(info=info, layers=layers))
