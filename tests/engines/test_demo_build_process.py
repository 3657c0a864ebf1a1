"""The demo set is built in a process of its own (issue 32): the caller - the window's GPU
worker, a command - never imports onnx or holds the GIL for the build, and a build that cannot
write its files still says so as an OSError the catalog words for the user."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engines import demo
from engines.catalog import Catalog
from engines.errors import ModelUnavailableError
from tests.conftest import repo_pythonpath

REPO = Path(__file__).resolve().parents[2]


def test_building_the_demo_leaves_onnx_out_of_the_calling_process(tmp_path: Path) -> None:
    probe = ("import json, sys; from pathlib import Path; from engines import demo; "
             "folder = demo.ensure_demo_models(Path(sys.argv[1])); "
             "print(json.dumps([str(folder), 'onnx' in sys.modules, 'ml_dtypes' in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": repo_pythonpath()}, capture_output=True,
                          text=True, timeout=300, check=True)
    folder, onnx_loaded, ml_dtypes_loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(folder) == demo.demo_dir(tmp_path)
    assert demo.is_current(tmp_path)  # every file there, stamped
    assert not onnx_loaded and not ml_dtypes_loaded


def test_a_demo_folder_that_cannot_be_written_is_an_oserror_the_catalog_words(
        tmp_path: Path) -> None:
    blocker = tmp_path / "models"
    blocker.write_text("a file where the models folder should be")
    with pytest.raises(OSError) as raised:
        demo.ensure_demo_models(blocker)
    assert raised.value.strerror  # the child's reason came back, not a bare status
    catalog = Catalog(models_root=blocker)
    with pytest.raises(ModelUnavailableError, match="could not be written to .*; check free "
                                                    "disk space and write access"):
        catalog.require("demo", backend="onnxruntime")


def test_a_bundle_builds_the_demo_with_its_own_executable_through_main(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A PyInstaller bundle has no `python -m`: the build must go through the bundle's own
    entry point (main.py), which takes the build argument before anything else - before the
    window, whose first paint would start another build (a chain of processes, seen in CI)."""
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    command = demo.build_command(tmp_path)
    assert command == [sys.executable, demo.BUILD_ARGUMENT, str(tmp_path)]
    from main import main

    assert main(command[1:]) == 0  # what the bundle runs, in this process
    assert demo.is_current(tmp_path)


def test_a_build_process_never_starts_another(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SA3_STUDIO_DEMO_BUILD_PROCESS", "1")
    started = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: started.append(a))
    with pytest.raises(ModelUnavailableError, match="another build"):
        demo.ensure_demo_models(tmp_path)
    assert started == []
