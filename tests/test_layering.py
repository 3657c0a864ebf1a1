"""Import contracts: engines/ never touches Qt or audio devices, and loads heavy GPU/ML runtimes
only lazily; app/ builds its window without showing it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
ENGINES_DIR = REPO_ROOT / "engines"

# Never importable from engines/, not even lazily.
GUI_AND_AUDIO = ("PySide6", "shiboken6", "PyQt5", "PyQt6", "pyqtgraph", "sounddevice")
# Loaded by engines/ only on first use (engines.lazy), never while a module is imported.
HEAVY_RUNTIMES = ("tensorrt", "tensorrt_bindings", "tensorrt_libs", "cuda", "onnxruntime")
FORBIDDEN_AT_IMPORT = GUI_AND_AUDIO + ("_sounddevice",) + HEAVY_RUNTIMES

# Runs in a fresh interpreter: imports every engines module in order and reports, per module,
# the import error (if any) and the forbidden top-level modules that appeared while importing it.
_PROBE = textwrap.dedent(
    """
    import importlib, json, pkgutil, sys, traceback
    forbidden = set(sys.argv[1].split(","))

    def loaded():
        return {name.split(".")[0] for name in sys.modules} & forbidden

    report = {"modules": [], "errors": {}, "pulled_in": {}}
    seen = loaded()
    if seen:
        report["pulled_in"]["<interpreter start>"] = sorted(seen)

    def record(name, err):
        report["errors"][name] = "".join(traceback.format_exception_only(type(err), err)).strip()

    def try_import(name):
        global seen
        module = None
        try:
            module = importlib.import_module(name)
        except BaseException as err:  # noqa: BLE001 - a half-written module may raise anything
            record(name, err)
        report["modules"].append(name)
        new = loaded() - seen
        if new:
            report["pulled_in"][name] = sorted(new)
            seen |= new
        return module

    # pkgutil.walk_packages re-imports a broken package and lets its error escape; walk by hand.
    def walk(package):
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            module = try_import(info.name)
            if info.ispkg and module is not None:
                walk(module)

    root = try_import("engines")
    if root is not None:
        walk(root)
    print(json.dumps(report))
    """
)


@pytest.fixture(scope="module")
def engines_import_report() -> dict:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, ",".join(FORBIDDEN_AT_IMPORT)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"import probe crashed:\n{result.stderr}"
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # an import probe in a fresh process
def test_engines_import_pulls_in_no_qt_audio_or_gpu_runtime(engines_import_report: dict) -> None:
    pulled_in = engines_import_report["pulled_in"]
    assert not pulled_in, (
        "importing engines modules loaded forbidden modules (Qt/sounddevice never; "
        "tensorrt/cuda/onnxruntime only inside the function that needs them): "
        + "; ".join(f"{module} -> {', '.join(names)}" for module, names in pulled_in.items())
    )


@pytest.mark.slow  # an import probe in a fresh process
def test_every_engines_module_imports(engines_import_report: dict) -> None:
    assert "engines" in engines_import_report["modules"]
    errors = engines_import_report["errors"]
    assert not errors, "engines modules that fail to import:\n" + "\n".join(
        f"  {module}: {message}" for module, message in errors.items()
    )


def test_engines_subfolders_with_code_are_packages() -> None:
    # Without __init__.py a folder is skipped by the import walk and left out of installs.
    missing = sorted(
        str(folder.relative_to(REPO_ROOT))
        for folder in [ENGINES_DIR, *ENGINES_DIR.rglob("*")]
        if folder.is_dir()
        and folder.name != "__pycache__"
        and any(folder.glob("*.py"))
        and not (folder / "__init__.py").exists()
    )
    assert not missing, f"folders with Python code but no __init__.py: {missing}"


_GUI_IMPORT = re.compile(
    r"^\s*(?:import|from)\s+(" + "|".join(re.escape(name) for name in GUI_AND_AUDIO) + r")\b",
    re.MULTILINE,
)


def test_engines_source_never_mentions_qt_or_sounddevice_imports() -> None:
    offenders = []
    for source in sorted(ENGINES_DIR.rglob("*.py")):
        text = source.read_text(encoding="utf-8", errors="replace")
        for match in _GUI_IMPORT.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            offenders.append(f"{source.relative_to(REPO_ROOT)}:{line}: {match.group(0).strip()}")
    assert not offenders, "engines/ must not import Qt or sounddevice:\n" + "\n".join(offenders)


@pytest.mark.slow  # an import probe in a fresh process
def test_importing_app_package_loads_no_qt() -> None:
    code = "import app, sys; print(any(m.split('.')[0] == 'PySide6' for m in sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_main_window_builds_hidden(qtbot, studio_home: Path) -> None:
    from PySide6.QtWidgets import QPlainTextEdit, QPushButton, QStatusBar

    from app import build_main_window

    window = build_main_window()
    qtbot.addWidget(window)

    assert window.objectName() == "mainWindow"
    assert window.windowTitle() == "SA3 Studio"
    assert not window.isVisible()
    prompt = window.findChild(QPlainTextEdit, "promptEdit")
    button = window.findChild(QPushButton, "generateButton")
    status = window.findChild(QStatusBar, "statusBar")
    assert prompt is not None and button is not None and status is not None
    # SA3_STUDIO_HOME decides where models (and so the demo set) live
    assert str(window.studio.models_controller.catalog.models_root).startswith(str(studio_home))
    window.close()  # closing stops the GPU worker thread
