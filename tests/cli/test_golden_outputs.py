"""What the command line delivers for a fixed set of demo takes stays what it was when
tests/fixtures/golden_outputs.json was recorded (bench/golden_outputs.py): file bytes (clock
times blanked), sidecars and printed lines. Refactors that promise unchanged behaviour (issue 33)
are held to it. The demo's floats come from onnxruntime's CPU kernels, so the comparison is
made only on a machine like the one that recorded it."""

from __future__ import annotations

import importlib.util
import json
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "tests" / "fixtures" / "golden_outputs.json"


def _golden():
    spec = importlib.util.spec_from_file_location("golden_outputs",
                                                  REPO / "bench" / "golden_outputs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_cli_delivers_what_it_delivered_when_recorded():
    golden = _golden()
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    if golden.machine() != recorded["machine"]:
        pytest.skip(f"recorded on {recorded['machine']}, this machine is {golden.machine()}: "
                    "the demo's float results differ between CPUs and onnxruntime releases")
    with tempfile.TemporaryDirectory(prefix="sa3-golden-") as folder:
        now = golden.capture(Path(folder))
    assert golden.differences(recorded, now) == []
    assert len(recorded["files"]) >= 25 and all(c["exit"] == 0
                                                for c in recorded["commands"].values())
