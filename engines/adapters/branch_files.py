"""Where a model set's branch DiT (the adapter-serving form) and its map live: beside the plain
DiT, by name, so every set and backend finds them the same way (`dit_fp32.onnx` ->
`dit_fp32_lora.onnx` + `dit_fp32_lora.json`; `dit_fp16.trt` -> `dit_fp16_lora.trt` +
`dit_fp16_lora.json`), with the frozen SVD bases -xs adapters need, where the set has them
(`<stem>_lora_svd_bases.safetensors`, engines.adapters.bases.BasesFile)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

BRANCH_SUFFIX = "_lora"


@dataclass(frozen=True)
class BranchFiles:
    dit: Path
    map: Path
    bases: Path  # may be missing: then -xs adapters are refused


def branch_paths(plain_dit: Path) -> BranchFiles:
    """The branch DiT and map names for a plain DiT, whether or not they exist."""
    plain_dit = Path(plain_dit)
    stem = plain_dit.stem + BRANCH_SUFFIX
    return BranchFiles(dit=plain_dit.with_name(stem + plain_dit.suffix),
                       map=plain_dit.with_name(stem + ".json"),
                       bases=plain_dit.with_name(stem + "_svd_bases.safetensors"))


def branch_files(plain_dit: Path) -> BranchFiles | None:
    """The branch DiT and map beside `plain_dit`, or None when either is missing."""
    files = branch_paths(plain_dit)
    return files if files.dit.is_file() and files.map.is_file() else None
