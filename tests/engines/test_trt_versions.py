"""Which TensorRT SA3 Studio drives, which one each engine on disk needs, and `models list`
saying so (no GPU, no TensorRT: versions come from strings, headers and package metadata)."""

from __future__ import annotations

import tomllib
import types
from pathlib import Path

import pytest

import main as entry
from engines.catalog import Catalog
from engines.catalog import tensorrt_version as version
from engines.catalog.tensorrt_version import (
    PUBLISHED_ENGINES_TENSORRT,
    UnsupportedTensorRTError,
    engine_tensorrt_version,
    header_matches,
    needed_tensorrt,
    plan_tensorrt_version,
    require_supported,
    same_release,
    unsupported_reason,
)
from engines.cli.words import say
from engines.errors import BackendError
from engines.gpu import GpuInfo
from engines.models.inventory import (
    EngineBuild,
    engines_on_disk,
    machine_report,
    tensorrt_fit_lines,
)

ROOT = Path(__file__).resolve().parents[2]


def plan_header(major: int, minor: int, patch: int, build: int = 29) -> bytes:
    """The first bytes of a TensorRT plan: magic tag, then the version at bytes 24..27 (the
    layout of NVIDIA/TensorRT issue 3073; a TensorRT-RTX 1.7.1.116 plan has 1, 7, 1, 116 there)."""
    size = (4096).to_bytes(8, "little")
    return (b"ftrt" + bytes(4) + (2).to_bytes(8, "little") + size
            + bytes([major, minor, patch, build]) + bytes(36))


def write_engine(root: Path, relative: str, header: bytes) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header + b"\x00" * 64)
    return path


def run(capsys, *args):
    code = entry.main(["models", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch):
    """Set the TensorRT version the catalog sees as installed (and an H200 as the GPU)."""
    def set_version(value: str | None) -> None:
        monkeypatch.setattr(Catalog, "tensorrt_version", property(lambda self: value))
        monkeypatch.setattr(Catalog, "gpu", property(lambda self: GpuInfo("H200", 9, 0)))
    return set_version


# ---- the installed TensorRT ---------------------------------------------------------------------

@pytest.mark.parametrize("good", ["10.15.1.29", "10.16.1.11", "10.14.1.48.post1", "10.0.1"])
def test_every_tensorrt_10_is_supported(good: str) -> None:
    assert unsupported_reason(good) is None
    require_supported(types.SimpleNamespace(__version__=good))


@pytest.mark.parametrize("bad", ["11.4.0.106", "11.0.0.114", "8.6.1.6"])
def test_other_majors_are_refused_in_one_sentence(bad: str, monkeypatch) -> None:
    monkeypatch.setattr(version, "_installed", lambda dist: False)  # a CUDA 12 machine
    with pytest.raises(UnsupportedTensorRTError) as caught:
        require_supported(types.SimpleNamespace(__version__=bad))
    message = str(caught.value)
    assert message == (
        f"TensorRT {bad} is installed but SA3 Studio needs TensorRT 10 (the published engines "
        "were built with 10.15.1.29); install it with `pip install 'sa3-studio[tensorrt]'`.")
    assert isinstance(caught.value, BackendError)  # shown as one line, never a traceback


def test_a_tensorrt_without_a_version_is_refused(monkeypatch) -> None:
    monkeypatch.setattr(version, "_installed", lambda dist: False)
    with pytest.raises(UnsupportedTensorRTError, match="does not report its version"):
        require_supported(types.SimpleNamespace())
    assert "does not report its version" in unsupported_reason("unknown")


def test_cuda_13_machines_are_told_the_cu13_extra(monkeypatch) -> None:
    monkeypatch.setattr(version, "_installed", lambda dist: dist == "tensorrt-cu13")
    assert unsupported_reason("11.4.0.106").endswith(
        "install it with `pip install 'sa3-studio[tensorrt-cu13]'`.")


def test_the_extras_pin_the_version_of_the_published_engines() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert f"tensorrt-cu12=={PUBLISHED_ENGINES_TENSORRT}" in extras["tensorrt"]
    assert "cuda-python>=12.8,<13" in extras["tensorrt"]  # 13 needs a CUDA 13 driver
    assert "nvidia-cuda-nvrtc-cu12" in extras["tensorrt"]  # our kernels compile with NVRTC
    assert f"tensorrt-cu13=={PUBLISHED_ENGINES_TENSORRT}" in extras["tensorrt-cu13"]
    assert any(req.startswith("cuda-python>=13") for req in extras["tensorrt-cu13"])
    assert any(req.startswith("tensorrt-rtx") for req in extras["dev"])


# ---- which TensorRT an engine file needs ----------------------------------------------------

def test_the_plan_header_names_the_tensorrt_that_built_it(tmp_path: Path) -> None:
    assert plan_tensorrt_version(plan_header(10, 15, 1)) == "10.15.1"
    assert plan_tensorrt_version(plan_header(11, 4, 0)) == "11.4.0"
    assert plan_tensorrt_version(b"vtrt" + plan_header(1, 7, 1)[4:]) is None  # TensorRT-RTX
    assert plan_tensorrt_version(plan_header(10, 15, 1)[:26]) is None  # too short
    assert plan_tensorrt_version(plan_header(0, 0, 0)) is None  # not a layout we know
    assert plan_tensorrt_version(b'{"magic": "FAKE-TRT-PLAN"}' + bytes(40)) is None

    engine = write_engine(tmp_path, "sm_90/sa3-m/dit_fp16.trt", plan_header(10, 16, 1, 11))
    assert engine_tensorrt_version(engine) == "10.16.1"
    assert needed_tensorrt(engine) == ("10.16.1", True)
    assert engine_tensorrt_version(tmp_path / "missing.trt") is None


def test_engines_whose_header_says_nothing_count_as_published(tmp_path: Path) -> None:
    odd = tmp_path / "sm_90/same-s/dec_fp8.trt"
    odd.parent.mkdir(parents=True)
    odd.write_bytes(b"not a plan")
    assert needed_tensorrt(odd) == (PUBLISHED_ENGINES_TENSORRT, False)


def test_engines_load_only_in_their_release() -> None:
    assert same_release("10.15.1", "10.15.1.29")
    assert same_release("10.15.1.29", "10.15.1.29.post1")
    assert not same_release("10.15.1", "10.16.1.11")
    assert not same_release("10.15.1", "11.4.0.106")
    assert not same_release("10.15.1", None)
    assert header_matches(plan_header(10, 15, 1), "10.15.1.29") is True
    assert header_matches(bytearray(plan_header(10, 14, 1)), "10.15.1.29") is False
    assert header_matches(b"FAKE", "10.15.1.29") is None


# ---- `models list` ------------------------------------------------------------------------------

def _sfx_engines(root: Path, header: bytes) -> None:
    write_engine(root, "sm_90/sa3-sm-sfx/dit_fp16.trt", header)
    write_engine(root, "sm_90/same-s/dec_bf16_chunkable_limiter.trt", header)


def test_list_says_the_engines_load_in_the_installed_tensorrt(tmp_path, capsys,
                                                             installed) -> None:
    _sfx_engines(tmp_path, plan_header(10, 15, 1))
    installed("10.15.1.29")
    code, out, err = run(capsys, "--models-dir", str(tmp_path), "list")
    assert code == 0, err
    assert ("2 engine files in sm_90/sa3-sm-sfx, sm_90/same-s: built with TensorRT 10.15.1; "
            "they load in the installed TensorRT 10.15.1.29.") in out
    assert "sm-sfx:" in out and "runs on TensorRT at fp16: " in out


def test_list_with_tensorrt_11_says_install_10_15(tmp_path, capsys, installed,
                                                 monkeypatch) -> None:
    monkeypatch.setattr(version, "_installed", lambda dist: False)
    _sfx_engines(tmp_path, plan_header(10, 15, 1))
    installed("11.4.0.106")
    code, out, _ = run(capsys, "--models-dir", str(tmp_path), "list")
    assert code == 0
    assert "TensorRT: TensorRT 11.4.0.106 is installed but SA3 Studio needs TensorRT 10" in out
    assert ("2 engine files in sm_90/sa3-sm-sfx, sm_90/same-s: built with TensorRT 10.15.1, but "
            "TensorRT 11.4.0.106 is installed, so they will not load; install TensorRT "
            "10.15.1.29 with `pip install 'sa3-studio[tensorrt]'`.") in out
    assert "models build" not in out  # TensorRT 11 cannot rebuild them


def test_list_with_another_tensorrt_10_offers_a_rebuild(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(version, "_installed", lambda dist: False)
    _sfx_engines(tmp_path, plan_header(10, 15, 1))
    write_engine(tmp_path, "sm_120/sa3-m/dit_fp16.trt", b"no header")
    catalog = Catalog(tmp_path, gpu=GpuInfo("H200", 9, 0), tensorrt_version="10.16.1.11")
    lines = tensorrt_fit_lines(engines_on_disk(catalog), catalog.tensorrt_version)
    assert sorted(say(line) for line in lines) == [
        "1 engine file in sm_120/sa3-m: taken to be a published engine built with TensorRT "
        "10.15.1.29 (the file does not say), but TensorRT 10.16.1.11 is installed, so it will "
        "not load; install TensorRT 10.15.1.29 with `pip install 'sa3-studio[tensorrt]'`, or "
        "rebuild it from the ONNX files with `python main.py models build medium`.",
        "2 engine files in sm_90/sa3-sm-sfx, sm_90/same-s: built with TensorRT 10.15.1, but "
        "TensorRT 10.16.1.11 is installed, so they will not load; install TensorRT 10.15.1.29 "
        "with `pip install 'sa3-studio[tensorrt]'`, or rebuild them from the ONNX files with "
        "`python main.py models build sm-music sm-sfx`.",
    ]


def test_list_of_locally_built_engines_without_tensorrt(tmp_path) -> None:
    engine = EngineBuild(tmp_path / "sm_90/t5gemma/t5gemma_fp16.trt", "10.16.1", True)
    assert tensorrt_fit_lines([engine], None) == [
        "1 engine file in sm_90/t5gemma: built with TensorRT 10.16.1, but TensorRT is not "
        "installed, so it will not load; install TensorRT 10.16.1."]
    assert tensorrt_fit_lines([], "10.15.1.29")[0].startswith("No engine files yet")


def test_jit_engines_on_disk_are_named_as_unusable_not_as_a_version_to_install(tmp_path) -> None:
    jit = EngineBuild(tmp_path / "sm_90/same-l/dec_dynamic_triton_swa.trt", "10.15.1.29", False)
    aot = EngineBuild(tmp_path / "sm_90/same-l/dec_fp16_chunkable_limiter.trt", "10.15.1", True)
    lines = tensorrt_fit_lines([jit, aot], "10.15.1.29")
    assert len(lines) == 2
    assert "JIT SAME-L engine" in lines[0] and "dec_fp16_chunkable_limiter.trt" in lines[0]
    assert "models download" in lines[0] and "for medium" in lines[0]
    assert lines[1].startswith("1 engine file in sm_90/same-l: built with TensorRT 10.15.1")


def test_machine_report_names_an_unusable_tensorrt(monkeypatch) -> None:
    monkeypatch.setattr("engines.models.inventory.tensorrt_version", lambda: "11.4.0.106")
    lines = machine_report(gpu=None).lines()
    trt_line = next(line for line in lines if line.startswith("TensorRT:"))
    assert "needs TensorRT 10" in trt_line and "pip install 'sa3-studio[" in trt_line


def test_build_with_tensorrt_11_is_refused_before_any_work(tmp_path, capsys, installed) -> None:
    installed("11.4.0.106")
    code, out, err = run(capsys, "--models-dir", str(tmp_path), "build", "sm-sfx")
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "SA3 Studio needs TensorRT 10" in lines[0]
