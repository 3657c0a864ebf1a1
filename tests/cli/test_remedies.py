"""Errors carry structured remedies (engines.errors.Remedy) and each front end words them: the
command line as flags and commands (engines.cli.words), the window as the control's label and
where it is (app.common.remedy_words). No engine module outside engines/cli writes a flag, and a
remedy is one this machine can follow."""

from __future__ import annotations

import ast
import os
import re
import subprocess
from pathlib import Path

import pytest

from engines.errors import VALUE, Advice, Remedy, RequestError, join
from tests.cli_runner import run_cli

ROOT = Path(__file__).resolve().parents[2]
FLAG = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*")
# NVRTC compiler options handed to the CUDA compiler, not flags a user types.
NVRTC_OPTIONS = {"--gpu-architecture", "--fmad", "--std", "--use_fast_math"}
# Options handed to PostgreSQL's own programs (initdb, postgres) when `team init` runs them.
POSTGRES_OPTIONS = {"--version", "--pwfile", "--single"}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _cli_text(text: str) -> list[str]:
    """The CLI flags and commands in `text`, NVRTC options and C source aside."""
    if "__global__" in text or "__device__" in text:  # CUDA C source compiled by NVRTC
        return []
    flags = [f for f in FLAG.findall(text)
             if f.split("=")[0] not in NVRTC_OPTIONS | POSTGRES_OPTIONS]
    return flags + (["python main.py"] if "python main.py" in text else [])


def test_no_engine_module_outside_the_cli_writes_a_flag() -> None:
    offenders = []
    for path in sorted((ROOT / "engines").rglob("*.py")):
        if "cli" in path.relative_to(ROOT / "engines").parts[:1]:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in docs):
                found = _cli_text(node.value)
                if found:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {found}")
    assert offenders == []


def test_an_advice_keeps_its_remedies_through_sentences_and_pickling() -> None:
    import pickle

    inner = Advice("use {0} or {1}.", Remedy.value("backend", "tensorrt"),
                   Remedy.value("decoder", "same-s"))
    outer = join("medium {x} cannot run: ", inner)
    assert isinstance(outer, Advice) and outer.remedies == inner.remedies
    assert str(outer) == "medium {x} cannot run: use backend tensorrt or decoder same-s."
    assert pickle.loads(pickle.dumps(outer)).worded(lambda r: r.key) == \
        "medium {x} cannot run: use backend or decoder."


def _run_cli(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SA3_STUDIO_HOME": str(home)}
    return run_cli(args, env=env, timeout=120, cwd=ROOT)


def test_the_same_error_is_a_flag_on_the_command_line_and_a_control_in_the_window(
        tmp_path: Path) -> None:
    from app.common.remedy_words import MODELS, for_window
    from engines.catalog import Catalog

    cli = _run_cli("generate", "--model", "demo", "--decoder", "same-s", "--prompt", "x",
                   "--out", str(tmp_path / "x.wav"), home=tmp_path)
    assert cli.returncode == 2
    assert "leave --decoder unset." in cli.stderr

    with pytest.raises(RequestError) as caught:
        Catalog(tmp_path / "models").resolve("demo", "same-s")
    shown = for_window(caught.value)
    assert shown.endswith("leave Decoder unset.") and "--" not in shown
    # In the Models window the main window's control is named as being there.
    assert for_window(caught.value, MODELS).endswith("leave Decoder (in the main window) unset.")


def test_a_download_is_a_command_on_the_command_line_and_a_button_in_the_window(
        tmp_path: Path) -> None:
    from app.common.remedy_words import MAIN, MODELS, for_window
    from engines.catalog import Catalog
    from engines.cli.words import say

    catalog = Catalog(tmp_path / "models", gpu=None)
    reason = catalog.resolve("sm-sfx", backend="onnxruntime").reason
    assert say(reason).endswith("download it with `python main.py models download sm-sfx --onnx`.")
    main = for_window(reason, MAIN)
    assert main.endswith("download it with Download under Advanced options in Models > Manage "
                         "models... (Stable Audio 3 Small SFX, ONNX graphs).")
    inside = for_window(reason, MODELS)  # never point at the window the user is in
    assert "Manage models" not in inside and "under Advanced options (" in inside


@pytest.mark.parametrize("backend", ["auto", "onnxruntime"])
def test_with_no_gpu_the_medium_set_never_recommends_tensorrt(tmp_path: Path, no_gpu,
                                                              backend: str) -> None:
    from app.common.remedy_words import MAIN, MODELS, for_window
    from engines.catalog import Catalog
    from engines.cli.words import say

    answer = Catalog(tmp_path / "models").resolve("medium", backend=backend)
    assert not answer.runnable
    reason = answer.reason
    assert isinstance(reason, Advice)
    assert Remedy.value("decoder", "same-s") in reason.remedies
    assert not [r for r in reason.remedies if r.kind == VALUE and "tensorrt" in r.values]
    for said in (say(reason), for_window(reason, MAIN), for_window(reason, MODELS)):
        assert "--backend tensorrt" not in said and "TensorRT engines" not in said
        assert "choose TensorRT" not in said and "use TensorRT" not in said


def test_with_a_gpu_the_medium_set_offers_tensorrt(tmp_path: Path, h200_gpu) -> None:
    from app.common.remedy_words import for_window
    from engines.catalog import Catalog

    reason = Catalog(tmp_path / "models", tensorrt_version="10.13.0").resolve(
        "medium", backend="onnxruntime").reason
    assert Remedy.value("backend", "tensorrt") in reason.remedies
    assert "TensorRT engines in Backend (under Advanced options in Models > Manage models...)" \
        in for_window(reason)


def test_the_greyed_medium_entry_in_the_window_says_what_would_run(qtbot, no_gpu) -> None:
    from app import build_main_window

    win = build_main_window()
    qtbot.addWidget(win)
    combo = win.generation_panel.model_combo
    index = combo.findData("medium")
    assert not combo.model().item(index).isEnabled()
    tip = combo.itemData(index, 3)  # Qt.ToolTipRole
    assert "SAME-S in Decoder" in tip
    assert "TensorRT engines" not in tip and "--" not in tip
    win.close()
