"""Where a model set's branch DiT (the engine that serves adapters) and its layer map are, and why
a take with adapters cannot run on TensorRT when they are not. It only looks (stat)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from engines.adapters.branch_files import branch_files
from engines.adapters.errors import ADAPTER_KEY
from engines.catalog.tables import (
    BRANCH_DIT_STEM,
    BRANCH_MAP_NAMES,
    BRANCH_PRECISION,
    ModelSet,
)
from engines.errors import Remedy, join


def branch_map_names(model: ModelSet) -> list[str]:
    """The names a set's branch map may have, the official one first."""
    names = [f"{BRANCH_DIT_STEM}.json"]
    official = BRANCH_MAP_NAMES.get(model.key)
    return [official, *names] if official else names


def branch_engine(bases: Iterable[Path], model: ModelSet) -> tuple[Path, Path] | None:
    """(branch DiT, its map) of `model` in the first <root>/<sm_XX>/<subdir>/ holding both, or
    None. Both come from one folder: an engine driven with another engine's map mis-sizes every
    operand and raises nothing."""
    for base in bases:
        folder = base / model.subdir
        engine = folder / f"{BRANCH_DIT_STEM}.trt"
        if not engine.is_file():
            continue
        for name in branch_map_names(model):
            if (folder / name).is_file():
                return engine, folder / name
    return None


def branch_refusal(model: ModelSet, precision: str, branch: tuple[Path, Path] | None,
                   arch_dir: Path) -> str | None:
    """Why a take with adapters cannot run on TensorRT here (None: it can). Adapters run on the
    fp16 branch DiT, which SA3 Studio cannot build itself (see engines.models.branch_build)."""
    if precision != BRANCH_PRECISION:
        return join(f"Adapters run on the {BRANCH_PRECISION} branch engine, not at {precision}; "
                    f"choose ", Remedy.value("precision", BRANCH_PRECISION),
                    " or remove the adapters.")
    if branch is None:
        return (f"Adapters on {model.key} need the branch engine '{BRANCH_DIT_STEM}.trt' and its "
                f"map '{branch_map_names(model)[0]}' in {arch_dir / model.subdir}; build both on "
                f"this GPU with the official optimized/tensorRT/scripts/lora/build_branch.py and "
                f"add that install's models folder to SA3 Studio's model folders, or remove the "
                f"adapters.")
    return None


def adapters_status(branch_dit: Path | None) -> str:
    """What `--list-models` says of a TensorRT set's adapters: whether its branch DiT is here."""
    if branch_dit is None:
        return f"adapters: no branch engine {BRANCH_DIT_STEM}.trt"
    return f"adapters: branch engine {branch_dit.name}"


def onnx_branch_refusal(model: ModelSet, dit: Path) -> str | None:
    """Why a take with adapters cannot run on ONNX Runtime here (None: it can): it needs the
    set's branch DiT graph beside the plain one (engines.adapters.branch_files), which only the
    demo has; the published sets serve adapters through TensorRT's branch engine."""
    if model.key == "demo" or branch_files(dit) is not None:  # the demo's is built with it
        return None
    return join(f"Adapters on {model.key} need its branch DiT, which ONNX Runtime has only for "
                f"the demo; use ", Remedy.value("backend", "tensorrt"), " with the set's branch "
                "engine, or remove the adapters (", Remedy.setting(ADAPTER_KEY), ").")
