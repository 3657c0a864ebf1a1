"""Test-wide setup: headless Qt, a throwaway data folder, and skipping `gpu` tests without a GPU."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

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
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    reason = _gpu_skip_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"needs a CUDA GPU: {reason}")
    for item in gpu_items:
        item.add_marker(skip)
