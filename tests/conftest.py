"""Test-wide setup: headless Qt, a throwaway data folder, skipping `gpu` tests without a GPU, and
a faked GPU probe for tests that mean a particular machine.

Tests that mean "no NVIDIA GPU" ask for the `no_gpu` fixture, tests that mean "an H200" ask for
`h200_gpu`: both fake the one driver query behind `engines.gpu.probe_gpu`, so every caller (the
catalog, the models CLI, the machine report, the app) sees the same machine, whatever machine
runs the suite. `SA3_TEST_FAKE_GPU=h200 pytest -m "not gpu"` runs every test on a pretend H200
without TensorRT (what the device machines are) to find tests that only pass without a GPU.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from engines import gpu as gpu_probe
from engines.gpu import GpuInfo
from tests.fake_cuda_driver import FakeCudaDriver
from tests.slow_list import read_slow_list

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

H200 = GpuInfo("NVIDIA H200", 9, 0, 150_000_000_000, "13.0")
FAKE_GPUS = {"h200": H200}
FAKE_GPU_ENV = "SA3_TEST_FAKE_GPU"

# Set before any test module is collected, so nothing (not even an import-time call) can write
# into the developer's real data folder. The session fixture below replaces it with a folder
# that pytest manages.
_COLLECTION_HOME = tempfile.mkdtemp(prefix="sa3-studio-test-home-")
os.environ["SA3_STUDIO_HOME"] = _COLLECTION_HOME


@pytest.fixture(scope="session", autouse=True)
def studio_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The data folder ($SA3_STUDIO_HOME) every test in this session shares."""
    home = tmp_path_factory.mktemp("sa3-studio-home")
    os.environ["SA3_STUDIO_HOME"] = str(home)
    yield home
    os.environ["SA3_STUDIO_HOME"] = _COLLECTION_HOME


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_COLLECTION_HOME, ignore_errors=True)


def fake_gpu_probe(monkeypatch: pytest.MonkeyPatch, gpu: GpuInfo | None) -> None:
    """Make `engines.gpu.probe_gpu` find `gpu` (None: no GPU) for the rest of one test.

    The driver is faked rather than probe_gpu replaced, because modules hold probe_gpu under
    their own names; its cache is emptied now and again when the test ends.
    """
    monkeypatch.setattr(gpu_probe, "_driver_module", lambda: FakeCudaDriver(gpu))
    gpu_probe.probe_gpu.cache_clear()


@pytest.fixture(autouse=True)
def _fresh_gpu_probe(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test sees the GPU answer another test faked; with $SA3_TEST_FAKE_GPU set, every test
    runs on that pretend GPU unless it asks for another machine."""
    fake = os.environ.get(FAKE_GPU_ENV, "").strip().lower()
    if fake:
        if fake not in FAKE_GPUS:
            raise pytest.UsageError(f"{FAKE_GPU_ENV}={fake!r} is not one of {sorted(FAKE_GPUS)}")
        fake_gpu_probe(monkeypatch, FAKE_GPUS[fake])
    yield
    gpu_probe.probe_gpu.cache_clear()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data folder of this test's own, made empty and set as $SA3_STUDIO_HOME (tests/app
    makes it a returning user's)."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("SA3_STUDIO_HOME", str(folder))
    return folder


@pytest.fixture(scope="session")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models folder with the demo set built, once per session (per xdist worker) for every
    test that renders with `--models-dir`. Tests read it; one that damages models makes its
    own folder."""
    from engines import demo

    folder = tmp_path_factory.mktemp("demo-models")
    demo.ensure_demo_models(folder)
    return folder


@pytest.fixture(scope="session")
def team_server():
    """The session's real PostgreSQL (tests.team_support.SharedServer), started on first use
    and stopped when the tests end; skips the test where PostgreSQL cannot be started here."""
    from tests.team_support import shared_server

    return shared_server()


@pytest.fixture
def team_db(team_server):
    """A fresh team library (a database of its own) on the session's server: its TeamSetup."""
    return team_server.database()


@pytest.fixture
def window(qtbot):
    """The real window on the demo set (tests/app gives each test a data folder of its own)."""
    from app import build_main_window

    win = build_main_window()
    qtbot.addWidget(win)
    yield win
    win.studio.shutdown()


@pytest.fixture(autouse=True)
def _collect_dead_windows(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a test with widgets, free the Python wrappers of the Qt objects it made. A window
    and its controllers hold each other, so without a collection their wrappers outlive the
    C++ objects; a later object at the same address can then be handed such a dead wrapper
    ("Internal C++ object already deleted"), as seen on the GPU machine's long runs."""
    yield
    if "qtbot" in request.fixturenames:
        import gc

        gc.collect()


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch, _fresh_gpu_probe: None) -> None:
    """This test means a machine without an NVIDIA GPU, whatever machine runs it."""
    fake_gpu_probe(monkeypatch, None)


@pytest.fixture
def h200_gpu(monkeypatch: pytest.MonkeyPatch, _fresh_gpu_probe: None) -> GpuInfo:
    """This test means a machine with one H200 (sm_90), whatever machine runs it."""
    fake_gpu_probe(monkeypatch, H200)
    return H200


def _utf8_safe(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Tests of paths that are not UTF-8 log and print such paths (as surrogate escapes); a
    pytest-xdist worker sends its reports as UTF-8 and dies on them (INTERNALERROR). So the
    captured output and failure text of a report show those bytes as \\udcxx instead."""
    outcome = yield
    report = outcome.get_result()
    report.sections = [(title, _utf8_safe(text)) for title, text in report.sections]
    if report.longrepr is not None:
        shown = str(report.longrepr)
        if _utf8_safe(shown) != shown:
            report.longrepr = _utf8_safe(shown)


def _gpu_skip_reason() -> str | None:
    """None when a CUDA GPU is usable, else why `gpu` tests are skipped."""
    try:
        from engines.gpu import probe_gpu
    except ImportError as err:
        return f"GPU probe unavailable ({err})"
    try:
        info = probe_gpu()
    except Exception as err:  # a failing probe must not break the CPU test run
        return f"GPU probe failed: {err}"
    return None if info is not None else "no CUDA GPU found"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    measured_slow = read_slow_list()  # tests/slow_tests.txt: the daily loop leaves them out
    for item in items:
        if item.nodeid in measured_slow:
            item.add_marker(pytest.mark.slow)
    if sys.platform == "win32":  # docs/windows.md says what these need
        posix = pytest.mark.skip(reason="needs POSIX (signals, modes, mounts, FIFOs or links)")
        for item in items:
            if item.get_closest_marker("posix"):
                item.add_marker(posix)
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    reason = _gpu_skip_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"needs a CUDA GPU: {reason}")
    for item in gpu_items:
        item.add_marker(skip)


def repo_pythonpath() -> str:
    """PYTHONPATH for a child process that must import this checkout: the repository first, then
    whatever the test process was given (the GPU machine's carried packages live there)."""
    repo = str(Path(__file__).resolve().parent.parent)
    return os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")]))
