"""The few cuda.bindings.driver calls `engines.gpu` makes, answering for one pretend GPU."""

from __future__ import annotations

from engines.gpu import GpuInfo


class FakeCudaDriver:
    """A driver that finds `gpu` (None: cuInit fails as with no device; count=0: a driver with
    no device to list)."""

    class CUresult:
        CUDA_SUCCESS = 0
        CUDA_ERROR_NO_DEVICE = 100

    class CUdevice_attribute:
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76

    def __init__(self, gpu: GpuInfo | None, count: int = 1) -> None:
        self.gpu = gpu
        self.count = count

    def cuInit(self, flags: int) -> tuple[int]:
        return (0,) if self.gpu is not None else (self.CUresult.CUDA_ERROR_NO_DEVICE,)

    def cuDeviceGetCount(self) -> tuple[int, int]:
        return (0, self.count)

    def cuDeviceGet(self, ordinal: int) -> tuple[int, int]:
        return (0, ordinal)

    def cuDeviceGetName(self, length: int, device: int) -> tuple[int, bytes]:
        assert self.gpu is not None
        return (0, self.gpu.name.encode() + b"\x00\x00\x00")

    def cuDeviceGetAttribute(self, attribute: int, device: int) -> tuple[int, int]:
        assert self.gpu is not None
        return (0, {75: self.gpu.major, 76: self.gpu.minor}[attribute])

    def cuDeviceTotalMem(self, device: int) -> tuple[int, int]:
        assert self.gpu is not None
        return (0, self.gpu.total_mem_bytes or 0)

    def cuDriverGetVersion(self) -> tuple[int, int]:
        assert self.gpu is not None
        major, minor = (self.gpu.driver or "13.0").split(".")
        return (0, int(major) * 1000 + int(minor) * 10)
