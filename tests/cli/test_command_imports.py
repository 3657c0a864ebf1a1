"""Each command imports what its work needs (issue 32): a plain take on the demo, a library
listing, a dry run of a sound list and the help pages load none of the heavy modules that only
other paths need (scipy, onnx and ml_dtypes: a second or more each to import; Qt and pyqtgraph:
the window's; huggingface_hub: hub commands'; psycopg: team commands').

A fresh interpreter per command is the point here (what one command imported would hide what
the next imports), so each runs in a subprocess of its own; they run side by side, started
together by one module fixture, and each reports its sys.modules as the last line of stdout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import soundfile as sf

from engines import demo
from tests.conftest import repo_pythonpath

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("scipy", "onnx", "ml_dtypes", "PySide6", "pyqtgraph", "huggingface_hub", "psycopg")
PROBE = """import json, sys
from main import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:  # argparse's --help ends this way
    code = exc.code or 0
print(json.dumps([code, sorted(sys.modules)]))
"""


def _commands(tmp: Path) -> dict[str, list[str]]:
    sound_list = tmp / "list.csv"
    sound_list.write_text("name,prompt,seconds\ncoin,coin pickup,1\nrain,rain on a tin roof,2\n",
                          encoding="utf-8")
    return {
        "generate": ["generate", "--prompt", "coin", "--seconds", "2", "--seed", "1",
                     "--no-library", "--out", str(tmp / "x.wav")],
        "library list": ["library", "list"],
        "batch --dry-run": ["batch", "--dry-run", str(sound_list), "--out", str(tmp / "out")],
        "--help": ["--help"],
        "team --help": ["team", "--help"],
    }


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, set[str], Path]]:
    """command -> (exit status, the modules it had imported at its end, its folder)."""
    home = tmp_path_factory.mktemp("imports-home")
    demo.ensure_demo_models(home / "models")  # the demo set built once, before the first take
    tmp = tmp_path_factory.mktemp("imports")
    env = {**os.environ, "SA3_STUDIO_HOME": str(home), "PYTHONPATH": repo_pythonpath()}
    running = {name: subprocess.Popen([sys.executable, "-c", PROBE, *argv], cwd=REPO, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for name, argv in _commands(tmp).items()}
    results = {}
    for name, process in running.items():
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, f"{name}: {err}"
        code, modules = json.loads(out.strip().splitlines()[-1])
        results[name] = (code, set(modules), tmp)
    return results


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


def test_a_plain_take_on_the_demo_imports_onnxruntime_but_none_of_the_heavy_modules(imported):
    code, modules, tmp = imported["generate"]
    assert code == 0
    audio, rate = sf.read(tmp / "x.wav")
    assert len(audio) == 2 * rate  # the take was made: the run did the real work
    assert "onnxruntime" in modules
    assert _heavy(modules) == []


@pytest.mark.parametrize("command", ["library list", "batch --dry-run", "--help",
                                     "team --help"])
def test_listing_dry_run_and_help_import_none_of_the_heavy_modules(imported, command):
    code, modules, _tmp = imported[command]
    assert code == 0
    assert _heavy(modules) == []
    assert "onnxruntime" not in modules  # nothing runs a model here
