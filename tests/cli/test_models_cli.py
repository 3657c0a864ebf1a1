"""`python main.py models ...` and the machine/installed report.

The machine is faked per test (conftest's `no_gpu` / `h200_gpu`), never read from the one that
runs the suite; no test here needs TensorRT.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import main as entry
from engines.catalog import Catalog
from engines.gpu import GpuInfo
from engines.models.inventory import (
    installed_sets,
    load_extra_roots,
    machine_report,
    save_extra_roots,
)
from tests.engines.test_downloads import hf_env, hub, models  # noqa: F401 - fixtures


def run(capsys, *args):
    code = entry.main(["models", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_report_without_gpu_is_a_normal_explained_state():
    report = machine_report(gpu=None)
    text = "\n".join(report.lines())
    assert "no NVIDIA GPU found" in text and "ONNX Runtime" in text
    assert report.vram_total is None


def test_report_with_gpu_uses_nvml_when_present_and_copes_without():
    gpu = GpuInfo("NVIDIA H200", 9, 0, total_mem_bytes=143 * 2**30, driver="13.0")
    with_nvml = machine_report(gpu=gpu, nvml=lambda: (100 * 2**30, 143 * 2**30, "580.159.04"))
    text = "\n".join(with_nvml.lines())
    assert "sm_90" in text and "100.0 of 143.0 GiB free" in text and "580.159.04" in text
    assert "fp8 supported" in text
    without = "\n".join(machine_report(gpu=gpu, nvml=lambda: (None, None, None)).lines())
    assert "143.0 GiB" in without and "driver 13.0" in without
    old = GpuInfo("RTX 3090", 8, 6)
    assert "fp8 not supported" in "\n".join(machine_report(gpu=old, nvml=lambda: (
        None, None, None)).lines())


def test_installed_sets_lists_files_with_every_alias_and_reasons(tmp_path):
    sfx = tmp_path / "sm_90" / "sa3-sm-sfx"
    sfx.mkdir(parents=True)
    (sfx / "dit_fp16mixed.trt").write_bytes(b"x" * 1000)
    codec = tmp_path / "sm_90" / "same-s"
    codec.mkdir(parents=True)
    (codec / "dec_dynamic_bf16.trt").write_bytes(b"y" * 500)
    catalog = Catalog(tmp_path, gpu=GpuInfo("H200", 9, 0), tensorrt_version=None)
    by_key = {e.model: e for e in installed_sets(catalog)}
    sfx_entry = by_key["sm-sfx"]
    names = {p.name for p, _ in sfx_entry.files}
    assert names == {"dit_fp16mixed.trt", "dec_dynamic_bf16.trt"}
    assert sfx_entry.total_bytes == 1500
    assert "TensorRT" in sfx_entry.runnable["tensorrt fp16"]  # not installed: says so
    assert by_key["demo"].runnable["onnxruntime fp32"] == "ready"


@pytest.mark.parametrize("machine", ["no_gpu", "h200_gpu"])
def test_list_command(capsys, request, machine):
    request.getfixturevalue(machine)
    code, out, err = run(capsys, "list")
    assert code == 0 and err == ""
    assert "GPU:" in out and "Demo (procedural, not Stable Audio 3)" in out
    assert ("NVIDIA H200" in out) is (machine == "h200_gpu")
    for key in ("medium", "sm-music", "sm-sfx"):
        assert f"{key}:" in out


def assert_refused_in_one_line(capsys, args, needle):
    code, out, err = run(capsys, *args)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in err


@pytest.mark.parametrize("args, needle", [
    (["build", "sm-sfx"], "No NVIDIA GPU"),
    (["selftest"], "No NVIDIA GPU"),
    (["download", "medium"], "--arch"),
])
def test_refusals_without_a_gpu(capsys, no_gpu, args, needle):
    assert_refused_in_one_line(capsys, args, needle)


@pytest.mark.parametrize("args, needle", [
    (["download", "medium", "--arch", "gpu9"], "not an arch folder name"),
    (["download", "nonsense"], "invalid choice"),
    (["frobnicate"], "invalid choice"),
    (["--models-dir", "/no/such/dir", "list"], "is not a folder"),
    (["remove-folder", "/not/added"], "not one of the extra model folders"),
    (["add-folder", "/no/such/folder"], "is not a folder"),
])
@pytest.mark.parametrize("machine", ["no_gpu", "h200_gpu"])
def test_refusals_exit_2_with_one_line(capsys, request, machine, args, needle):
    request.getfixturevalue(machine)
    assert_refused_in_one_line(capsys, args, needle)


@pytest.mark.parametrize("args", [["build", "sm-sfx"], ["selftest"]])
def test_build_without_tensorrt_on_a_gpu_machine(capsys, monkeypatch, h200_gpu, args):
    monkeypatch.setattr(Catalog, "tensorrt_version", property(lambda self: None))
    assert_refused_in_one_line(capsys, args, "TensorRT is not installed")


def test_extra_folders_round_trip(capsys, tmp_path, studio_home):
    folder = tmp_path / "official-models"
    folder.mkdir()
    code, out, _ = run(capsys, "add-folder", str(folder))
    assert code == 0 and str(folder) in out
    assert folder.resolve() in load_extra_roots(Path(studio_home))
    from engines.models.inventory import default_catalog

    assert folder.resolve() in default_catalog().roots
    code, out, _ = run(capsys, "remove-folder", str(folder))
    assert code == 0 and load_extra_roots(Path(studio_home)) == []
    save_extra_roots(Path(studio_home), [])


def test_selftest_builds_the_demo_and_needs_a_replay(tmp_path, monkeypatch):
    """The self-test's flow against the TensorRT fake (the real run needs TensorRT + a GPU)."""
    import numpy as np

    import engines.backends.tensorrt.backend as trt_backend
    from engines.models.selftest import run_selftest
    from tests import fake_tensorrt

    fake_tensorrt.install(monkeypatch)
    paths_seen = []

    class StubBackend:
        def __init__(self, files, gpu_sm=None):
            self.files = files
            self.calls = 0

        def generate(self, request):
            self.calls += 1
            paths_seen.append(self.files)
            path = "capture" if self.calls == 1 else "replay"

            class Result:
                pcm = np.zeros((10, 2), np.int16)
                timings_ms = {"total": 12.5 if path == "replay" else 800.0}
                details = {"path": path}
                warnings = []

            return Result()

        def close(self):
            pass

    monkeypatch.setattr(trt_backend, "TensorRTBackend", StubBackend)
    catalog = Catalog(tmp_path, gpu=GpuInfo("H200", 9, 0), tensorrt_version="10.15.1.29")
    timings = run_selftest(tmp_path, catalog, on_build=lambda name: None)
    assert timings["path"] == "replay" and timings["replay_ms"] == 12.5
    built = sorted(p.name for p in (tmp_path / "sm_90" / "demo").iterdir())
    assert built == ["dec.trt", "dit_fp32.trt", "enc.trt", "t5gemma.trt"]
    files = paths_seen[0]
    assert files.dit.name == "dit_fp32.trt" and files.tokenizer.name == "tokenizer.json"


def test_download_end_to_end_against_a_local_hub(capsys, hub, models):  # noqa: F811
    """`models download` through HF_ENDPOINT: sizes first, then files where the catalog looks."""
    models.mkdir(parents=True, exist_ok=True)
    code, out, err = run(capsys, "--models-dir", str(models), "download", "sm-sfx", "--arch",
                         "sm_90", "--dry-run")
    assert code == 0, err
    assert "in total" in out and "dit_fp16" in out
    assert not (models / "sm_90").exists()
    code, out, err = run(capsys, "--models-dir", str(models), "download", "sm-sfx", "--arch",
                         "sm_90")
    assert code == 0, err
    catalog = Catalog(models, gpu=GpuInfo("H200", 9, 0), tensorrt_version="10.15.1.29")
    answer = catalog.resolve("sm-sfx", backend="tensorrt")
    assert answer.runnable, answer.reason
    code, _, err = run(capsys, "--models-dir", str(models), "download", "sm-sfx", "--arch",
                       "sm_42")
    assert code == 2 and len(err.strip().splitlines()) == 1
