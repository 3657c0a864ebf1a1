"""`python main.py models build --adapters` and `models selftest --adapters`: the demo's branch
DiT is built (its map beside it), a published set's is refused in one line naming the official
build, and the adapter self-test demands a replay for a strength change (TensorRT faked)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import main as entry
from engines import demo
from engines.catalog import Catalog
from engines.gpu import GpuInfo
from tests import fake_tensorrt

TRT = "10.15.1.29"


def run(capsys, *args):
    code = entry.main(["models", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def with_tensorrt(monkeypatch, h200_gpu):
    monkeypatch.setattr(Catalog, "tensorrt_version", property(lambda self: TRT))
    return fake_tensorrt.install(monkeypatch)


@pytest.mark.parametrize("model", ["medium", "sm-sfx"])
def test_a_published_set_branch_build_is_refused_before_any_build(capsys, tmp_path, model,
                                                                  with_tensorrt):
    code, out, err = run(capsys, "--models-dir", str(tmp_path), "build", model, "--adapters")
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert "build_branch.py" in lines[0] and "model folders" in lines[0]
    assert "229 linears" in lines[0]
    assert not (tmp_path / "sm_90").exists()  # nothing was built
    if model == "medium":
        assert "sa3-m preset" in lines[0]


def test_the_demo_branch_dit_is_built_with_its_map_beside_it(capsys, tmp_path, with_tensorrt):
    demo.ensure_demo_models(tmp_path)
    code, out, err = run(capsys, "--models-dir", str(tmp_path), "build", "demo", "--adapters")
    assert code == 0, err
    folder = tmp_path / "sm_90" / "demo"
    assert (folder / "dit_fp32_lora.trt").is_file() and (folder / "dit_fp32.trt").is_file()
    built_map = json.loads((folder / "dit_fp32_lora.json").read_text())
    source = json.loads((demo.demo_dir(tmp_path) / demo.DIT_BRANCH_MAP_FILE).read_text())
    assert built_map == source
    # The rank range of the operands is the map's: 1 to its maximum, tuned at 32.
    from engines.models import branch_build

    shapes = branch_build.branch_profiles(folder / "dit_fp32_lora.json")
    assert shapes["lora_srow"] == ((1, 1, 1), (1, 1, 32), (1, 1, source["rank_max"]))


def test_the_adapter_selftest_needs_a_replay_for_a_strength_change(tmp_path, monkeypatch,
                                                                   with_tensorrt):
    import engines.backends.tensorrt.backend as trt_backend
    from engines.models.adapter_selftest import run_adapter_selftest

    takes = []

    class StubBackend:
        def __init__(self, files, gpu_sm=None):
            self.files = files

        def generate(self, request):
            strength = request.adapters[0].strength if request.adapters else None
            takes.append(strength)
            path = "capture" if len(takes) <= 2 else "replay"
            level = 0.0 if strength is None else strength

            class Result:
                pcm = np.full((10, 2), int(1000 * level), np.int16)
                latents = np.full((4, 4), level, np.float32)
                timings_ms = {"total": 3.0 if path == "replay" else 700.0}
                details = {"path": path}
                warnings: list[str] = []

            return Result()

        def close(self):
            pass

    monkeypatch.setattr(trt_backend, "TensorRTBackend", StubBackend)
    catalog = Catalog(tmp_path, gpu=GpuInfo("H200", 9, 0), tensorrt_version=TRT)
    figures = run_adapter_selftest(tmp_path, catalog)
    assert takes == [None, 1.0, 0.5, 0.0]
    assert figures["path"] == "replay" and figures["adapter_replay_ms"] == 3.0
    built = sorted(p.name for p in (tmp_path / "sm_90" / "demo").iterdir())
    assert "dit_fp32_lora.trt" in built and "dit_fp32_lora.json" in built
