"""Where a fetched GPU runtime (TensorRT, cuda-python, NVRTC: engines.models.gpu_runtime) lives,
and making this process import it from there.

The runtime is unpacked wheels in `<data>/gpu-runtime/site/`, a folder laid out like
site-packages, with `runtime.json` written last (no stamp, no runtime). `activate_gpu_runtime()`
runs at start (main.py, and each batch worker process) before anything imports tensorrt or
cuda (engines.lazy imports them on first use): it adds the folder with `site.addsitedir` (so
the .pth files of the wheels run, as in a real site-packages) and loads NVRTC from it by full
path. NVRTC needs that: cuda-python finds the NVRTC wheel only in the interpreter's own
site-packages (cuda-pathfinder), but it takes a library that is already loaded.

A runtime fetched by another Python (a bundle of 3.11, a venv of 3.12) or for another system
is left alone: its compiled modules would not import. An installed tensorrt (pip install
'sa3-studio[tensorrt]') comes first on sys.path and wins.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import site
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from engines.paths import data_root

log = logging.getLogger(__name__)

RUNTIME_FOLDER = "gpu-runtime"
SITE_FOLDER = "site"
STAMP_NAME = "runtime.json"
STAMP_VERSION = 1

_activated: list[Path] = []
_dll_directories: list[object] = []  # os.add_dll_directory handles live as long as we do


@dataclass(frozen=True)
class RuntimeStamp:
    """What runtime.json says about an unpacked runtime."""

    cuda: str  # "12" or "13"
    python: str  # interpreter_key() of the Python that fetched it
    platform: str  # sysconfig.get_platform() there
    distributions: tuple[tuple[str, str], ...]  # (name, version)

    def fits_here(self) -> bool:
        return self.python == interpreter_key() and self.platform == sysconfig.get_platform()

    def version_of(self, name: str) -> str | None:
        return next((v for n, v in self.distributions if n == name), None)


def interpreter_key() -> str:
    """"cpython-3.11": compiled wheels fit one implementation and minor version."""
    return f"{sys.implementation.name}-{sys.version_info.major}.{sys.version_info.minor}"


def runtime_root() -> Path:
    """`<data>/gpu-runtime` (not created here)."""
    return data_root() / RUNTIME_FOLDER


def site_dir(root: Path | None = None) -> Path:
    return (root or runtime_root()) / SITE_FOLDER


def read_stamp(folder: Path) -> RuntimeStamp | None:
    """The stamp of an unpacked runtime folder; None when it is missing or not one we wrote."""
    try:
        data = json.loads((folder / STAMP_NAME).read_text(encoding="utf-8"))
        if data.get("stamp") != STAMP_VERSION:
            return None
        return RuntimeStamp(cuda=str(data["cuda"]), python=str(data["python"]),
                            platform=str(data["platform"]),
                            distributions=tuple((str(n), str(v))
                                                for n, v in data["distributions"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def stamp_payload(cuda: str, distributions: list[tuple[str, str]]) -> bytes:
    """runtime.json for a runtime fetched by this Python on this system."""
    return json.dumps({"stamp": STAMP_VERSION, "cuda": cuda, "python": interpreter_key(),
                       "platform": sysconfig.get_platform(),
                       "distributions": [list(d) for d in distributions]}, indent=1).encode()


def activate_gpu_runtime(root: Path | None = None) -> Path | None:
    """Make the fetched runtime importable in this process; returns its folder, or None when
    there is none that fits this Python. Cheap (one file read) when there is none; never
    raises: a runtime that cannot be used is logged and left out."""
    try:
        folder = site_dir(root)
        if folder in _activated:
            return folder
        stamp = read_stamp(folder)
        if stamp is None:
            return None
        if not stamp.fits_here():
            log.info("the GPU runtime in %s was fetched for %s on %s, not this %s on %s; "
                     "not used", folder, stamp.python, stamp.platform, interpreter_key(),
                     sysconfig.get_platform())
            return None
        site.addsitedir(str(folder))
        if sys.platform == "win32":
            _add_dll_directories(folder)
        _preload_nvrtc(folder)
        _activated.append(folder)
        log.info("GPU runtime (CUDA %s) from %s", stamp.cuda, folder)
        return folder
    except Exception:  # noqa: BLE001 - the CPU path must still start
        log.warning("could not use the GPU runtime", exc_info=True)
        return None


def nvrtc_libraries(folder: Path) -> list[Path]:
    """NVRTC's libraries in an unpacked runtime, builtins first (NVRTC loads them by name,
    which then finds the loaded one)."""
    if sys.platform == "win32":
        found = sorted(folder.glob("nvidia/*/bin/nvrtc-builtins64_*.dll")) + \
            sorted(folder.glob("nvidia/*/bin/nvrtc64_*.dll"))
    else:
        found = sorted(folder.glob("nvidia/*/lib/libnvrtc-builtins.so.*")) + \
            sorted(folder.glob("nvidia/*/lib/libnvrtc.so.*"))
    return [p for p in found if p.is_file()]


def _preload_nvrtc(folder: Path) -> None:
    for library in nvrtc_libraries(folder):
        try:
            ctypes.CDLL(str(library), mode=getattr(os, "RTLD_GLOBAL", 0))
        except OSError:
            log.warning("could not load %s", library, exc_info=True)


def _add_dll_directories(folder: Path) -> None:
    """Windows looks for a DLL's dependencies only in folders it was told about."""
    for candidate in sorted({p.parent for p in folder.glob("**/*.dll")}):
        try:
            _dll_directories.append(os.add_dll_directory(str(candidate)))
        except OSError:
            log.warning("could not add %s to the DLL search path", candidate, exc_info=True)
