"""The GPU runtime for a bundle: TensorRT, cuda-python and NVRTC fetched into the data folder.

TensorRT's libraries are about 2 GB, too much to ship in every download of the app, and a pip
install is not there in a frozen bundle. So a user with an NVIDIA card fetches them once:

1. the CUDA major comes from the driver (cuDriverGetVersion through ctypes: no cuda-python
   yet), or is named;
2. the pinned requirements (`RUNTIME_REQUIREMENTS`, the same as pyproject's `tensorrt` and
   `tensorrt-cu13` extras, which a test holds them to) are resolved against the package
   indexes (gpu_runtime_index), following each download's own dependencies, newest version
   that fits every specifier, a wheel for this interpreter and system;
3. each file is downloaded with progress, resumable, and checked against the sha256 its index
   published (gpu_runtime_fetch);
4. all are unpacked into a staging folder, runtime.json is written last, and the staging
   folder replaces `<data>/gpu-runtime/site` by rename (gpu_runtime_unpack); the downloads
   are then deleted. A failure anywhere leaves the runtime that was there before untouched
   and no staging folder behind; only a verified download or a `.part` to resume is kept;
5. at the next start `activate_gpu_runtime` (gpu_runtime_site) puts it on sys.path before
   anything imports tensorrt or cuda.
"""

from __future__ import annotations

import collections
import ctypes
import importlib.metadata
import logging
import secrets
import shutil
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from engines.catalog.tensorrt_version import PUBLISHED_ENGINES_TENSORRT
from engines.error_sentences import printable, reason
from engines.errors import Advice, Remedy
from engines.models import gpu_runtime_fetch as fetch
from engines.models.gpu_runtime_fetch import GpuRuntimeError
from engines.models.gpu_runtime_index import IndexFile, best_file, index_urls, tag_ranks
from engines.models.gpu_runtime_site import (
    RuntimeStamp,
    read_stamp,
    runtime_root,
    site_dir,
    stamp_payload,
)
from engines.models.gpu_runtime_unpack import SDIST_PACKAGES, requirements, unpack, unpacked_bytes

log = logging.getLogger(__name__)

RUNTIME_REQUIREMENTS: dict[str, tuple[str, ...]] = {
    "12": (f"tensorrt-cu12=={PUBLISHED_ENGINES_TENSORRT}", "cuda-python>=12.8,<13",
           "nvidia-cuda-nvrtc-cu12", "nvidia-ml-py"),
    "13": (f"tensorrt-cu13=={PUBLISHED_ENGINES_TENSORRT}", "cuda-python>=13,<14",
           "nvidia-cuda-nvrtc>=13,<14", "nvidia-ml-py"),
}
DOWNLOADS = "downloads"
# (file name, bytes done, bytes in all or None, number of the file: 1, 2, ...)
Progress = Callable[[str, int, "int | None", int], None]


def driver_cuda_major() -> int | None:
    """The newest CUDA major the installed NVIDIA driver supports; None without a driver."""
    names = ("nvcuda.dll",) if sys.platform == "win32" else ("libcuda.so.1", "libcuda.so")
    for name in names:
        try:
            library = ctypes.CDLL(name)
            version = ctypes.c_int(0)
            if library.cuDriverGetVersion(ctypes.byref(version)) == 0 and version.value > 0:
                return version.value // 1000
        except (OSError, AttributeError):
            continue
    return None


def choose_cuda(requested: str | None, driver_major: int | None) -> str:
    """"12" or "13": the one requested, else the one the driver runs (CUDA 13 wheels need a
    CUDA 13 driver; CUDA 12 wheels run on any driver from 525 on)."""
    if requested is not None:
        if requested not in RUNTIME_REQUIREMENTS:
            raise GpuRuntimeError(Advice(f"There is no GPU runtime for CUDA {requested}; "
                                         f"choose {{0}}.", Remedy.value("cuda", "12", "13")))
        return requested
    if driver_major is None:
        raise GpuRuntimeError(Advice(
            "No NVIDIA driver was found, so TensorRT could not run here; install the NVIDIA "
            "driver first, or choose {0} to fetch the runtime for another machine.",
            Remedy.value("cuda", "12", "13")))
    if driver_major < 12:
        raise GpuRuntimeError(f"The NVIDIA driver here supports CUDA {driver_major}, and "
                              f"TensorRT {PUBLISHED_ENGINES_TENSORRT} needs CUDA 12 or newer; "
                              f"update the driver (525 or newer).")
    return "13" if driver_major >= 13 else "12"


def installed_runtime(root: Path | None = None) -> RuntimeStamp | None:
    """What the fetched runtime is, or None when none was fetched."""
    return read_stamp(site_dir(root))


def _already_here(name: str, specifier: SpecifierSet) -> bool:
    """A dependency the running app already has (numpy, say) is not fetched again."""
    try:
        return specifier.contains(importlib.metadata.version(name), prereleases=True)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return False


def resolve_and_download(client: Any, cuda: str, downloads: Path, progress: Progress,
                         cancel: threading.Event) -> list[tuple[IndexFile, Path]]:
    """Every file the runtime needs, downloaded and verified, in the order they were found."""
    queue = collections.deque(Requirement(r) for r in RUNTIME_REQUIREMENTS[cuda])
    specifiers: dict[str, SpecifierSet] = {}
    chosen: dict[str, tuple[IndexFile, Path]] = {}
    ranks = tag_ranks()
    roots = {canonicalize_name(r.name) for r in queue}
    while queue:
        requirement = queue.popleft()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(requirement.name)
        specifiers[name] = specifiers.get(name, SpecifierSet()) & requirement.specifier
        if name in chosen:
            if not specifiers[name].contains(chosen[name][0].version, prereleases=True):
                raise GpuRuntimeError(
                    f"The GPU runtime's packages ask for {name} {specifiers[name]}, which no "
                    f"single version meets; the pins in SA3 Studio need updating.")
            continue
        if name not in roots and _already_here(name, specifiers[name]):
            continue
        offered = [f for index in index_urls() for f in fetch.project_files(client, index, name)]
        best = best_file(offered, specifiers[name], ranks, sdist_allowed=name in SDIST_PACKAGES)
        if best is None:
            raise GpuRuntimeError(
                f"No file of {name} {specifiers[name] or ''} for this Python "
                f"({sys.version_info.major}.{sys.version_info.minor}) and system is on "
                f"{', '.join(index_urls())}; the GPU runtime cannot be fetched for this "
                f"machine.".replace("  ", " "))
        number = len(chosen) + 1
        path = fetch.download(client, best, downloads,
                              lambda n, d, t, k=number: progress(n, d, t, k), cancel)
        chosen[name] = (best, path)
        queue.extend(requirements(path))
    return list(chosen.values())


def _tidy(root: Path) -> None:
    """Leftovers of a run that was killed: staging folders go; a runtime moved aside but not
    replaced comes back."""
    site = site_dir(root)
    for leftover in sorted([*root.glob(".staging-*"), *root.glob(".removed-*")]):
        shutil.rmtree(leftover, ignore_errors=True)
    for old in sorted(root.glob(".old-*")):
        if not site.exists() and read_stamp(old) is not None:
            old.rename(site)
        else:
            shutil.rmtree(old, ignore_errors=True)


def _install(staging: Path, root: Path) -> None:
    """staging becomes the runtime; the one before is removed only after."""
    site = site_dir(root)
    old = root / f".old-{secrets.token_hex(4)}"
    if site.exists():
        site.rename(old)
    try:
        staging.rename(site)
    except OSError:
        if old.exists():
            old.rename(site)
        raise
    shutil.rmtree(old, ignore_errors=True)


def fetch_gpu_runtime(cuda: str, progress: Progress, cancel: threading.Event,
                      root: Path | None = None, client: Any = None) -> RuntimeStamp:
    """Fetch, verify and unpack the runtime for CUDA `cuda` (see the module docstring)."""
    root = root or runtime_root()
    downloads = root / DOWNLOADS
    try:
        downloads.mkdir(parents=True, exist_ok=True)
        _tidy(root)
    except OSError as exc:
        raise GpuRuntimeError(f"Could not use {printable(root)} for the GPU runtime: "
                              f"{reason(exc)[0]}; set SA3_STUDIO_HOME to a folder you can "
                              f"write to.") from exc
    if client is None:  # huggingface_hub's session refuses every request when offline
        fetch.check_online()
    files = resolve_and_download(client or fetch.session(), cuda, downloads, progress, cancel)
    staging = root / f".staging-{secrets.token_hex(4)}"
    try:
        fetch.check_room(root, sum(unpacked_bytes(path) for _, path in files),
                         "Unpacking the GPU runtime")
        staging.mkdir()
        for file, path in files:
            unpack(path, file.project, staging)
        versions = [(file.project, str(file.version)) for file, _ in files]
        (staging / "runtime.json").write_bytes(stamp_payload(cuda, versions))
        _install(staging, root)
    except OSError as exc:
        raise GpuRuntimeError(f"Could not unpack the GPU runtime in {printable(root)}: "
                              f"{reason(exc)[0]}; the runtime there before is unchanged.") \
            from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for _, path in files:
        path.unlink(missing_ok=True)
    stamp = installed_runtime(root)
    if stamp is None:  # cannot happen short of another process removing it meanwhile
        raise GpuRuntimeError(f"The GPU runtime in {printable(site_dir(root))} went missing "
                              f"right after it was unpacked; fetch it again.")
    return stamp


def remove_gpu_runtime(root: Path | None = None) -> bool:
    """Delete the fetched runtime; False when there was none."""
    root = root or runtime_root()
    site = site_dir(root)
    if not site.exists():
        return False
    aside = root / f".removed-{secrets.token_hex(4)}"  # never restored by _tidy
    try:
        site.rename(aside)  # gone from sight at once; the delete may take a while
    except OSError as exc:
        raise GpuRuntimeError(f"Could not remove {printable(site)}: {reason(exc)[0]}; close "
                              f"SA3 Studio windows that use the GPU and try again.") from exc
    shutil.rmtree(aside, ignore_errors=True)
    return True
