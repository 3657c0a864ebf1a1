"""The embedded demo model set: procedural, CPU-friendly, and labelled as not Stable Audio 3.

Built deterministically by our own code on first use into `<models>/onnx/demo/`, with the exact
SA3 engine I/O contract, so every backend path can be exercised without the real engines. The
build runs in a process of its own (engines.demo.build says why); running a built set never
imports onnx, so neither does this module.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from engines.errors import ModelUnavailableError
from engines.paths import resource_file

log = logging.getLogger(__name__)

DEMO_LABEL = "Demo (procedural, not Stable Audio 3)"
# 3: the codec DFT is factored into MatMuls (TensorRT has no DFT); 4: the coarse codec tier;
# 5: the DiT's branch form for LoRA/DoRA adapters and its map
BUILDER_VERSION = 5
STAMP_NAME = "demo_version.json"
TEXT_ENCODER_FILE = "t5gemma.onnx"
DIT_FILE = "dit_fp32.onnx"
# The DiT's adapter-serving branch form and its map, named as engines.adapters.branch_files
# finds them beside DIT_FILE.
DIT_BRANCH_FILE = "dit_fp32_lora.onnx"
DIT_BRANCH_MAP_FILE = "dit_fp32_lora.json"
DIT_BRANCH_BASES_FILE = "dit_fp32_lora_svd_bases.safetensors"  # for -xs adapters
ENCODER_FILE = "enc.onnx"
DECODER_FILE = "dec.onnx"
DECODER_COARSE_FILE = "dec_coarse.onnx"  # the demo's second codec tier (engines.demo.coarse)
TOKENIZER_FILE = "tokenizer.json"


def demo_dir(models_root: Path) -> Path:
    return Path(models_root) / "onnx" / "demo"


# The folder that holds the `engines` package: the build process must import the same code.
_CODE_ROOT = Path(__file__).resolve().parent.parent.parent
# One build at a time in this process: the window's first-start build and a first take meet.
_BUILDING = threading.Lock()
# How the app's own executable is asked to build the set: a bundle (PyInstaller: sys.frozen) has
# no `python -m`, so its entry point (main.py) takes this argument instead.
BUILD_ARGUMENT = "_build-demo-set"
# Set in the build process: a build there never starts another process (no chain of builds).
_IN_BUILD_PROCESS = "SA3_STUDIO_DEMO_BUILD_PROCESS"


def _stamp() -> dict:
    recipes = resource_file("demo", "recipes.json").read_bytes()
    return {"builder": BUILDER_VERSION, "recipes_sha256": hashlib.sha256(recipes).hexdigest(),
            "label": DEMO_LABEL}


def write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; these are shared, non-secret files
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def is_current(models_root: Path) -> bool:
    folder = demo_dir(models_root)
    try:
        stamp = json.loads((folder / STAMP_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    files = (TEXT_ENCODER_FILE, DIT_FILE, DIT_BRANCH_FILE, DIT_BRANCH_MAP_FILE,
             DIT_BRANCH_BASES_FILE, ENCODER_FILE, DECODER_FILE, DECODER_COARSE_FILE,
             TOKENIZER_FILE)
    return stamp == _stamp() and all((folder / name).is_file() for name in files)


def stamp_bytes() -> bytes:
    """The version stamp's file contents (written last by a build)."""
    return json.dumps(_stamp(), indent=1).encode("utf-8")


def ensure_demo_models(models_root: Path) -> Path:
    """Build (or rebuild after an update) the demo ONNX files, in a process of its own; returns
    their folder. Waits for that process (the GIL is free meanwhile). Raises OSError when the
    files cannot be written, ModelUnavailableError when the build fails otherwise.
    """
    folder = demo_dir(models_root)
    if is_current(models_root):
        return folder
    with _BUILDING:
        if not is_current(models_root):
            _build_in_own_process(Path(models_root))
    return folder


def build_command(models_root: Path) -> list[str]:
    """The command that builds the set in a process of its own: `python -m` from a Python
    install, the bundle's own executable with BUILD_ARGUMENT from a bundle."""
    if getattr(sys, "frozen", False):
        return [sys.executable, BUILD_ARGUMENT, str(models_root)]
    return [sys.executable, "-m", "engines.demo.build", str(models_root)]


def _build_in_own_process(models_root: Path) -> None:
    if os.environ.get(_IN_BUILD_PROCESS):
        raise ModelUnavailableError(
            f"The demo models could not be built in {demo_dir(models_root)}: the build process "
            "asked for another build; the details are in the log.")
    log.info("building the demo model set in %s (a process of its own)", demo_dir(models_root))
    env = dict(os.environ)
    env[_IN_BUILD_PROCESS] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_CODE_ROOT), env.get("PYTHONPATH"))
                                        if p)
    done = subprocess.run(
        build_command(models_root), env=env,
        stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False,
        creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0))  # no console on Windows
    if done.returncode == 0:
        return
    if done.stderr.strip():
        log.error("the demo build process said:\n%s", done.stderr.strip())
    report = _last_json_line(done.stdout)
    if "oserror" in report:
        raise OSError(*report["oserror"])
    if "refused" in report:
        raise ModelUnavailableError(str(report["refused"]))
    raise ModelUnavailableError(
        f"The demo models could not be built in {demo_dir(models_root)} (the build ended with "
        f"status {done.returncode}); the details are in the log.")


def _last_json_line(text: str) -> dict:
    for line in reversed(text.splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return {}
