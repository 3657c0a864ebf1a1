"""The demo's branch DiT built by a real TensorRT-family parser and builder (TensorRT for RTX,
installed as `tensorrt` as in test_tensorrt_rtx_conformance): the adapter operand inputs parse
with a dynamic rank, the profiles `models build demo --adapters` plans cover exactly the dynamic
inputs, and our builder writes the engine with its map beside it. Skipped without
tensorrt_rtx."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

pytest.importorskip("tensorrt_rtx")

from engines import demo  # noqa: E402
from engines.models import branch_build  # noqa: E402
from engines.models.builder import build_engine  # noqa: E402
from tests.engines.test_tensorrt_rtx_conformance import (  # noqa: E402, F401 - fixtures
    RTX_GPU,
    _io,
    _parsed,
    demo_models,
    rtx,
    rtx_as_tensorrt_10,
)


def test_the_branch_graph_parses_with_a_dynamic_rank_and_the_planned_profiles_build(
        demo_models: Path) -> None:  # noqa: F811 - the conformance module's fixture
    spec, = branch_build.plan_branch(demo_models, ["demo"], "sm_120")
    parsed = _parsed(rtx, spec.onnx_path)
    errors = [parsed.parser.get_error(i).desc() for i in range(parsed.parser.num_errors)]
    assert parsed.ok and not errors, errors
    inputs, _ = _io(parsed.network)
    dynamic = {name for name, _, shape in inputs if -1 in shape}
    assert dynamic == set(spec.profiles)  # no dynamic input left without a profile, no extra
    assert any(name.startswith("loraA::") for name in dynamic) and "lora_srow" in dynamic
    assert parsed.build(spec.profiles) is not None, parsed.logger.errors_since(0)


def test_build_engine_writes_the_branch_dit_and_its_map(  # noqa: F811 - its fixtures
        demo_models: Path, tmp_path: Path, rtx_as_tensorrt_10) -> None:  # noqa: F811
    spec, = branch_build.plan_branch(demo_models, ["demo"], "sm_120")
    spec = dataclasses.replace(spec, engine_path=tmp_path / "sm_120/demo/dit_fp32_lora.trt")
    assert build_engine(spec, gpu_cc=RTX_GPU) == spec.engine_path
    assert spec.engine_path.read_bytes()[:4] == b"vtrt"
    beside = json.loads((spec.engine_path.parent / demo.DIT_BRANCH_MAP_FILE).read_text())
    assert beside == json.loads(spec.companion.read_text())
    assert sorted(p.name for p in spec.engine_path.parent.iterdir()) == [
        "dit_fp32_lora.json", "dit_fp32_lora.trt"]
