"""What `models build --adapters` can build: the demo's branch DiT (its ONNX graph already has
the adapter inputs, so TensorRT builds it as it is), and why it cannot build a published set's.

The official branch engine is not an ONNX graph: build_branch.py parses dit_fp16.onnx and then
rewires the parsed TensorRT network, adding A, Bt and P inputs and eight layers to each of 229
linears it finds by their ONNX node names (targets.py), plus a shared strength input. SA3 Studio
builds from ONNX graphs only and carries neither that surgery nor its node matching, so it
refuses and points to the official script, whose output (engine + map in models/<arch>/<slug>/)
the catalog then finds in an added models folder.
"""

from __future__ import annotations

from pathlib import Path

from engines import catalog, demo
from engines.adapters.branch_map import load_branch_map
from engines.errors import ModelUnavailableError, Remedy, join
from engines.models.build_plan import BuildSpec, ProfileShapes, default_profiles

OFFICIAL_SCRIPT = "optimized/tensorRT/scripts/lora/build_branch.py"
OFFICIAL_PRESETS = {"medium": "sa3-m"}  # the sets the official script has a preset for
OPT_RANK = 32  # the rank TensorRT tunes the branch for, as the official build does


def refusal(model: str) -> str:
    """Why SA3 Studio does not build `model`'s branch engine, and what to do instead."""
    return (f"SA3 Studio cannot build the {model} branch engine for adapters: the official build "
            f"rewires 229 linears of the parsed TensorRT network (three new inputs each), which "
            f"no ONNX graph holds; build it on this GPU with {official_build(model)} and add "
            f"that install's models folder to SA3 Studio's model folders.")


def official_build(model: str) -> str:
    """The official build of `model`'s branch engine, in words (no front end's flags)."""
    preset = OFFICIAL_PRESETS.get(model)
    if preset:
        return f"the official {OFFICIAL_SCRIPT} (its {preset} preset, which fetches the ONNX)"
    return f"the official {OFFICIAL_SCRIPT} (it has no preset for {model} yet)"


def branch_profiles(map_path: Path) -> dict[str, ProfileShapes]:
    """The operand inputs' profiles from a branch map: rank 1 to the map's maximum."""
    bmap = load_branch_map(map_path)
    top = bmap.rank_max
    opt = min(OPT_RANK, top)
    shapes: dict[str, ProfileShapes] = {
        bmap.srow_input: ((1, 1, 1), (1, 1, opt), (1, 1, top))}
    for layer in bmap.layers.values():
        for name, width in ((layer.a_input, layer.in_features),
                            (layer.b_input, layer.out_features)):
            shapes[name] = ((1, 1, width), (1, opt, width), (1, top, width))
    return shapes


def plan_branch(models_dir: Path, sets: list[str], arch: str) -> list[BuildSpec]:
    """The branch DiT engines to build for `sets`: the demo's; any other set is refused."""
    specs = []
    for key in sets:
        model = catalog.get_model_set(key).key
        if model != catalog.DEMO_SUBDIR:
            raise ModelUnavailableError(refusal(model))
        onnx_dir = demo.demo_dir(Path(models_dir))
        graph, map_path = onnx_dir / demo.DIT_BRANCH_FILE, onnx_dir / demo.DIT_BRANCH_MAP_FILE
        if not graph.is_file() or not map_path.is_file():
            raise ModelUnavailableError(join(
                f"The demo's branch graph '{graph.name}' and its map are not in {onnx_dir}; run "
                "the demo once on the CPU (", Remedy.command("demo once"), ") to create them."))
        engine = Path(models_dir) / arch / catalog.DEMO_SUBDIR / f"{graph.stem}.trt"
        profiles = {**default_profiles("dit"), **branch_profiles(map_path)}
        specs.append(BuildSpec(graph, engine, "dit", "fp32", profiles, companion=map_path))
    return specs
