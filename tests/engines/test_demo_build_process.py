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

REPO = Path(__file__).resolve().parents[2]


def test_building_the_demo_leaves_onnx_out_of_the_calling_process(tmp_path: Path) -> None:
    probe = ("import json, sys; from pathlib import Path; from engines import demo; "
             "folder = demo.ensure_demo_models(Path(sys.argv[1])); "
             "print(json.dumps([str(folder), 'onnx' in sys.modules, 'ml_dtypes' in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
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
