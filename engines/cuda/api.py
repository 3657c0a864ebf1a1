"""Lazy access to cuda.bindings, the one `check()` every call goes through, and the context."""

from __future__ import annotations

import logging
import threading
from typing import Any

from engines.errors import BackendError
from engines.lazy import lazy_import, real_module

log = logging.getLogger(__name__)

# cuda-python >= 12.6 first, then its older layout (cuda.cuda, cuda.nvrtc)
_DRIVER = lazy_import("cuda.bindings.driver", "cuda.cuda")
_NVRTC = lazy_import("cuda.bindings.nvrtc", "cuda.nvrtc")


class CudaError(BackendError):
    """A CUDA driver or NVRTC call failed; `name` is the error's symbolic name."""

    def __init__(self, name: str, call: str = "", detail: str = "") -> None:
        self.name = name
        self.call = call
        text = f"CUDA call {call or '?'} failed with {name}"
        if detail:
            text += f" ({detail})"
        super().__init__(text + "; see the log, and check the driver and free GPU memory.")


def driver() -> Any:
    """cuda-python's driver module (ImportError when cuda-python is not installed)."""
    return real_module(_DRIVER)


def nvrtc() -> Any:
    """cuda-python's NVRTC module (ImportError when cuda-python is not installed)."""
    return real_module(_NVRTC)


def error_name(err: Any) -> str:
    drv = driver()
    if isinstance(err, drv.CUresult):
        res = drv.cuGetErrorName(err)
        if res[0] == drv.CUresult.CUDA_SUCCESS and res[1]:
            return res[1].decode()
        return getattr(err, "name", str(err))
    rtc = nvrtc()
    if isinstance(err, rtc.nvrtcResult):
        res = rtc.nvrtcGetErrorString(err)
        if res[0] == rtc.nvrtcResult.NVRTC_SUCCESS and res[1]:
            return res[1].decode()
    return getattr(err, "name", str(err))


def _is_success(err: Any) -> bool:
    return int(err) == 0  # CUDA_SUCCESS and NVRTC_SUCCESS are both 0


def check(result: Any, call: str = "") -> Any:
    """Unwrap a cuda.bindings `(err, *values)` tuple: None, one value, or a tuple of values."""
    if isinstance(result, tuple):
        err, values = result[0], result[1:]
    else:
        err, values = result, ()
    if not _is_success(err):
        raise CudaError(error_name(err), call)
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def call(name: str, *args: Any) -> Any:
    """check(driver().<name>(*args)) with the call's name in the error."""
    return check(getattr(driver(), name)(*args), name)


_context_lock = threading.Lock()
_contexts: dict[int, Any] = {}


def ensure_context(device: int = 0) -> Any:
    """Make the device's primary context current on this thread (never cuCtxCreate)."""
    with _context_lock:
        if device not in _contexts:
            call("cuInit", 0)
            dev = call("cuDeviceGet", device)
            _contexts[device] = call("cuDevicePrimaryCtxRetain", dev)
        ctx = _contexts[device]
    call("cuCtxSetCurrent", ctx)
    return ctx


def compute_capability(device: int = 0) -> tuple[int, int]:
    drv = driver()
    ensure_context(device)
    dev = call("cuDeviceGet", device)
    attr = drv.CUdevice_attribute
    major = call("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
    minor = call("cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
    return int(major), int(minor)


def mem_info() -> tuple[int, int]:
    """(free, total) bytes of the current device."""
    free, total = call("cuMemGetInfo")
    return int(free), int(total)
