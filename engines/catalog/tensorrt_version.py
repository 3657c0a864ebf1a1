"""Which TensorRT SA3 Studio drives, and which TensorRT an engine file on disk needs.

The policy in one place:

- SA3 Studio drives TensorRT 10. The published SA3 recipes need its weak typing and its FP16/FP8
  builder flags, which TensorRT 11 removed (flags deprecated in 10.12, gone in 11.0; weak typing
  gone in 11.0), and the runtime uses the TensorRT 10 API. Any other major is refused with one
  sentence (`require_supported`), never a bare AttributeError from deep inside a build.
- A serialized engine loads only in the TensorRT version that built it. The published engines on
  Hugging Face were built with TensorRT 10.15.1.29 (`PUBLISHED_ENGINES_TENSORRT`), the version the
  `tensorrt` extra pins.
- Which TensorRT built an engine is read from the plan header (`engine_tensorrt_version`): a
  TensorRT plan starts with the magic tag b"ftrt" and holds the major, minor and patch version of
  the TensorRT that built it in bytes 24, 25 and 26. That layout is undocumented (there is no API
  for it: NVIDIA/TensorRT issue 3073), so a header that does not look like one is reported as
  unknown and treated as the published version, and the builder checks it against every engine it
  writes (`header_matches`).

Nothing here imports tensorrt: the installed version comes in as a string or a module.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from engines.errors import BackendError
from engines.lazy import lazy_import

# importlib.metadata costs the window about 20 ms at startup; only install_command reads it.
metadata = lazy_import("importlib.metadata")

SUPPORTED_MAJOR = 10
PUBLISHED_ENGINES_TENSORRT = "10.15.1.29"  # what the engines on Hugging Face were built with

PLAN_MAGIC = b"ftrt"
_PLAN_VERSION_OFFSET = 24  # major, minor, patch: one byte each from here
_PLAN_HEADER_BYTES = _PLAN_VERSION_OFFSET + 3
_PLAUSIBLE_MAJORS = range(8, 40)  # anything else means the layout is not the one we know

_CUDA13_DISTRIBUTIONS = ("tensorrt-cu13", "tensorrt-cu13-libs")
_LEADING_NUMBERS = re.compile(r"^\d+(?:\.\d+)*")


class UnsupportedTensorRTError(BackendError):
    """The installed TensorRT is not the major version SA3 Studio drives; the text says what to
    install."""


def version_numbers(version: str | None) -> tuple[int, ...]:
    """The leading numbers of a version: "10.14.1.48.post1" -> (10, 14, 1, 48); junk -> ()."""
    match = _LEADING_NUMBERS.match(str(version or "").strip())
    return tuple(int(part) for part in match.group(0).split(".")) if match else ()


def install_command() -> str:
    """The command that installs the pinned TensorRT 10 for this machine's CUDA flavour
    (CUDA 13 when a CUDA 13 TensorRT wheel is what is installed now, else CUDA 12). A frozen
    bundle has no pip: there the app's own fetch of the GPU runtime is the way
    (engines.models.gpu_runtime)."""
    if getattr(sys, "frozen", False):
        return "sa3-studio models gpu-runtime"
    extra = "tensorrt-cu13" if any(_installed(d) for d in _CUDA13_DISTRIBUTIONS) else "tensorrt"
    return f"pip install 'sa3-studio[{extra}]'"


def _installed(distribution: str) -> bool:
    try:
        metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return False
    return True


def unsupported_reason(version: str | None) -> str | None:
    """One sentence refusing the TensorRT `version` ("11.4.0.106"), or None for a TensorRT 10.
    Works from the version string alone, so callers need not import tensorrt."""
    numbers = version_numbers(version)
    if numbers and numbers[0] == SUPPORTED_MAJOR:
        return None
    shown = f"TensorRT {version} is installed" if numbers else \
        "The installed TensorRT does not report its version"
    return (f"{shown} but SA3 Studio needs TensorRT {SUPPORTED_MAJOR} (the published engines "
            f"were built with {PUBLISHED_ENGINES_TENSORRT}); install it with "
            f"`{install_command()}`.")


def require_supported(trt: Any) -> None:
    """Raise UnsupportedTensorRTError unless the imported tensorrt module `trt` is TensorRT 10.

    Call it right after `import tensorrt`, before touching any builder flag or runtime API, so a
    TensorRT 11 install ends in one sentence instead of an AttributeError."""
    reason = unsupported_reason(getattr(trt, "__version__", None))
    if reason is not None:
        raise UnsupportedTensorRTError(reason)


# ---- engine files -----------------------------------------------------------------------------

def plan_tensorrt_version(header: bytes) -> str | None:
    """The version ("10.15.1": major.minor.patch) of the TensorRT that built the plan whose first
    bytes are `header`, or None when they are not a TensorRT plan header we can read."""
    if len(header) < _PLAN_HEADER_BYTES or header[:len(PLAN_MAGIC)] != PLAN_MAGIC:
        return None
    major, minor, patch = header[_PLAN_VERSION_OFFSET:_PLAN_HEADER_BYTES]
    if major not in _PLAUSIBLE_MAJORS:
        return None
    return f"{major}.{minor}.{patch}"


def engine_tensorrt_version(path: Path) -> str | None:
    """The TensorRT version ("10.15.1") the engine file at `path` was built with, read from its
    header; None when the file cannot be read or its header is not one we know."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(_PLAN_HEADER_BYTES)
    except OSError:
        return None
    return plan_tensorrt_version(header)


def needed_tensorrt(path: Path) -> tuple[str, bool]:
    """(version, read_from_file) for the engine at `path`: the version in its header, or the
    published engines' version (read_from_file False) when the header says nothing."""
    version = engine_tensorrt_version(path)
    return (version, True) if version else (PUBLISHED_ENGINES_TENSORRT, False)


def same_release(built_with: str | None, installed: str | None) -> bool:
    """Whether an engine built with TensorRT `built_with` loads in TensorRT `installed`: the
    same major, minor and patch (a header carries no more than these three)."""
    built, have = version_numbers(built_with)[:3], version_numbers(installed)[:3]
    return len(built) == 3 and built == have


def header_matches(plan: Any, installed: str) -> bool | None:
    """True/False when the plan header's version does/does not match `installed`; None when the
    header is unreadable. The builder uses it to notice if TensorRT ever moves the field."""
    version = plan_tensorrt_version(memoryview(plan)[:_PLAN_HEADER_BYTES].tobytes())
    return None if version is None else same_release(version, installed)
