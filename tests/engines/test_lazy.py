"""engines.lazy: heavy optional modules declared at module top, imported on first use."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from engines import gpu
from engines.cuda import api as cuda_api
from engines.lazy import is_installed, lazy_import, real_module


def _module_file(folder: Path, name: str, body: str = "") -> None:
    # Importing it leaves a mark, so a test sees when (and whether) the import happened.
    (folder / f"{name}.py").write_text(f"import sys\nsys.modules['{name}'].MARK = 1\n{body}")


def test_nothing_is_imported_until_first_use(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    _module_file(tmp_path, "sa3_lazy_probe", "VALUE = 42\n")
    monkeypatch.delitem(sys.modules, "sa3_lazy_probe", raising=False)
    probe = lazy_import("sa3_lazy_probe")
    assert is_installed(probe)
    assert "sa3_lazy_probe" not in sys.modules  # declared and asked about, not imported
    assert probe.VALUE == 42
    assert sys.modules["sa3_lazy_probe"].MARK == 1
    assert real_module(probe) is sys.modules["sa3_lazy_probe"]


def test_a_missing_package_fails_on_use_as_an_import_would() -> None:
    missing = lazy_import("sa3_no_such_package")
    assert not is_installed(missing)
    with pytest.raises(ImportError):
        missing.anything  # noqa: B018 - the attribute read is the import
    with pytest.raises(ImportError):
        real_module(missing)


def test_the_first_layout_that_imports_is_used(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    _module_file(tmp_path, "sa3_old_layout", "NAME = 'old'\n")
    moved = lazy_import("sa3_new_layout", "sa3_old_layout")
    assert is_installed(moved)
    assert moved.NAME == "old"


def test_a_module_replaced_in_sys_modules_is_the_one_used(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests put a fake TensorRT in sys.modules (and None for "not installed"); a lazy module
    # follows sys.modules on every use, as an import statement in the function would.
    fake = types.ModuleType("sa3_fake_runtime")
    fake.VERSION = "1"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sa3_fake_runtime", fake)
    runtime = lazy_import("sa3_fake_runtime")
    assert runtime.VERSION == "1"
    other = types.ModuleType("sa3_fake_runtime")
    other.VERSION = "2"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sa3_fake_runtime", other)
    assert runtime.VERSION == "2"
    monkeypatch.setitem(sys.modules, "sa3_fake_runtime", None)
    assert not is_installed(runtime)
    with pytest.raises(ImportError):
        real_module(runtime)


def test_module_attributes_named_like_helpers_are_the_modules() -> None:
    # onnx.load is onnx's: the helpers are functions of engines.lazy, not methods.
    json_module = lazy_import("json")
    assert json_module.loads("[1]") == [1]
    assert json_module.__file__ == sys.modules["json"].__file__


@pytest.mark.parametrize("new_layout", [True, False])
def test_cuda_python_is_found_under_either_layout(new_layout: bool,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # cuda-python >= 12.6 has cuda.bindings.driver; older releases only cuda.cuda (and
    # cuda.nvrtc). Both engines.gpu and engines.cuda.api must find the driver either way.
    driver = types.ModuleType("driver")
    nvrtc = types.ModuleType("nvrtc")
    if new_layout:
        monkeypatch.setitem(sys.modules, "cuda.bindings.driver", driver)
        monkeypatch.setitem(sys.modules, "cuda.bindings.nvrtc", nvrtc)
    else:
        monkeypatch.setitem(sys.modules, "cuda.bindings.driver", None)
        monkeypatch.setitem(sys.modules, "cuda.bindings.nvrtc", None)
        monkeypatch.setitem(sys.modules, "cuda.cuda", driver)
        monkeypatch.setitem(sys.modules, "cuda.nvrtc", nvrtc)
    # The layout found first is remembered; start each case afresh.
    for lazy in (gpu._CUDA_DRIVER, cuda_api._DRIVER, cuda_api._NVRTC):
        monkeypatch.setattr(lazy, "_found", None)
    assert gpu._driver_module() is driver
    assert cuda_api.driver() is driver
    assert cuda_api.nvrtc() is nvrtc
