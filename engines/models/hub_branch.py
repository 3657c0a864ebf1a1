"""A set's branch DiT (the engine that serves adapters) and its map on the hub, for
`models download --adapters`: `tensorRT/<sm_XX>/<subdir>/dit_fp16_lora.trt` and the map beside
it, under the official name or the engine's. The official project builds this engine on each GPU
(TensorRT bakes the architecture in), so the hub may well have none: that is refused in one
sentence naming the official build."""

from __future__ import annotations

from collections.abc import Mapping

from engines.catalog.branch import branch_map_names
from engines.catalog.tables import BRANCH_DIT_STEM, ModelSet
from engines.errors import ModelUnavailableError
from engines.models.branch_build import official_build


def branch_files(index: Mapping[str, object], fmt: str, arch: str,
                 model: ModelSet) -> list:
    """[engine, map] (RemoteFile) of `model` for `arch` in a hub listing `index` (path ->
    RemoteFile); ModelUnavailableError where there is none."""
    if fmt != "trt":
        raise ModelUnavailableError(
            "Adapters run on the TensorRT branch engine, which has no ONNX form; download the "
            "TensorRT engines instead of the ONNX graphs.")
    folder = f"tensorRT/{arch}/{model.subdir}"
    engine = index.get(f"{folder}/{BRANCH_DIT_STEM}.trt")
    found_map = next((index[f"{folder}/{name}"] for name in branch_map_names(model)
                      if f"{folder}/{name}" in index), None)
    if engine is None or found_map is None:
        raise ModelUnavailableError(
            f"The hub has no branch engine for {model.key} on {arch} (looked for "
            f"{BRANCH_DIT_STEM}.trt and {branch_map_names(model)[0]} in {folder}): the official "
            f"project builds it on each GPU, so build it here with {official_build(model.key)} "
            f"and add that install's models folder to SA3 Studio's model folders.")
    return [engine, found_map]
