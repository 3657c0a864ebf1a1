"""What NVIDIA GPU and TensorRT this machine has, found without importing torch or tensorrt.

Everything here is cheap and safe to call on a machine with no GPU, no driver and no
cuda-python: the answer is then simply None.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Any

from engines.lazy import lazy_import, real_module

log = logging.getLogger(__name__)

# cuda-python >= 12.6 first, then its older layout
_CUDA_DRIVER = lazy_import("cuda.bindings.driver", "cuda.cuda")
# importlib.metadata costs the window about 20 ms at startup; only tensorrt_version reads it.
_METADATA = lazy_import("importlib.metadata")

# Wheels TensorRT has shipped under; the first one installed gives the version.
_TENSORRT_DISTRIBUTIONS = ("tensorrt", "tensorrt-cu12", "tensorrt-cu13", "tensorrt_libs")

_NAME_BUFFER = 256


@dataclass(frozen=True)
class GpuInfo:
    """The first CUDA device as the driver reports it."""

    name: str
    major: int
    minor: int
    total_mem_bytes: int | None = None
    driver: str | None = None

    @property
    def sm(self) -> str:
        """Engine folder name for this arch: 9.0 -> "sm_90", 12.0 -> "sm_120"."""
        return f"sm_{self.major}{self.minor}"

    @property
    def compute_capability(self) -> tuple[int, int]:
        return (self.major, self.minor)

    @property
    def has_fp8(self) -> bool:
        """FP8 tensor cores arrived with compute capability 8.9 (Ada)."""
        return self.compute_capability >= (8, 9)


def _driver_module() -> Any:
    """cuda-python's driver bindings under either package layout (ImportError if absent)."""
    return real_module(_CUDA_DRIVER)


class _CudaCallFailed(RuntimeError):
    pass


def _checked(driver: Any, result: Any) -> Any:
    """Unwrap a cuda-python `(err, *values)` tuple; raise on any error."""
    if not isinstance(result, tuple):
        result = (result,)
    err, *values = result
    if err != driver.CUresult.CUDA_SUCCESS:
        raise _CudaCallFailed(str(err))
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def _format_driver_version(version: int) -> str:
    """CUDA encodes 12.8 as 12080."""
    return f"{version // 1000}.{(version % 1000) // 10}"


def _probe(driver: Any) -> GpuInfo | None:
    _checked(driver, driver.cuInit(0))
    if _checked(driver, driver.cuDeviceGetCount()) < 1:
        return None
    device = _checked(driver, driver.cuDeviceGet(0))
    raw_name = _checked(driver, driver.cuDeviceGetName(_NAME_BUFFER, device))
    if isinstance(raw_name, (bytes, bytearray)):
        name = bytes(raw_name).split(b"\x00", 1)[0].decode("utf-8", "replace")
    else:
        name = str(raw_name)
    attribute = driver.CUdevice_attribute
    major = _checked(
        driver,
        driver.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
    )
    minor = _checked(
        driver,
        driver.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
    )
    # Memory and driver version are nice to show but not needed to pick engines.
    total: int | None
    try:
        total = int(_checked(driver, driver.cuDeviceTotalMem(device)))
    except _CudaCallFailed as exc:
        log.debug("cuDeviceTotalMem failed: %s", exc)
        total = None
    version: str | None
    try:
        version = _format_driver_version(int(_checked(driver, driver.cuDriverGetVersion())))
    except _CudaCallFailed as exc:
        log.debug("cuDriverGetVersion failed: %s", exc)
        version = None
    return GpuInfo(name=name.strip(), major=int(major), minor=int(minor),
                   total_mem_bytes=total, driver=version)


@functools.cache
def probe_gpu() -> GpuInfo | None:
    """The first NVIDIA GPU, or None when there is none (or no driver, or no cuda-python)."""
    try:
        driver = _driver_module()
    except ImportError as exc:
        log.debug("cuda-python is not installed: %s", exc)
        return None
    try:
        info = _probe(driver)
    except Exception as exc:  # any driver failure means "no usable GPU"
        log.debug("CUDA probe failed: %s", exc)
        return None
    if info is None:
        log.debug("CUDA driver reports no devices")
    else:
        log.debug("found GPU %s (%s), driver %s", info.name, info.sm, info.driver)
    return info


def tensorrt_version() -> str | None:
    """Installed TensorRT version from package metadata, without importing tensorrt."""
    for dist in _TENSORRT_DISTRIBUTIONS:
        try:
            return _METADATA.version(dist)
        except _METADATA.PackageNotFoundError:
            continue
    return None
