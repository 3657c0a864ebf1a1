"""Device and pinned host memory with explicit ownership."""

from __future__ import annotations

import numpy as np

from engines.cuda.api import call

ALIGNMENT = 256  # TensorRT wants I/O tensors 256-byte aligned; cuMemAlloc already gives more


class DeviceBuffer:
    """A grow-only device allocation. `shape`/`dtype` describe the current contents;
    `capacity` only grows, so addresses bound elsewhere stay valid unless a resize is needed."""

    def __init__(self, nbytes: int = 0, *, shape: tuple[int, ...] = (0,), dtype=np.float32):
        self.ptr = 0
        self.capacity = 0
        self.dtype = np.dtype(dtype)
        self.shape = tuple(shape)
        if nbytes:
            self._allocate(nbytes)

    def _allocate(self, nbytes: int) -> None:
        self.free()
        self.ptr = int(call("cuMemAlloc", max(int(nbytes), 1)))
        self.capacity = int(nbytes)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def reshape(self, shape: tuple[int, ...], dtype=None) -> bool:
        """Describe new contents; reallocates (returns True, address changed) only to grow."""
        self.shape = tuple(int(s) for s in shape)
        if dtype is not None:
            self.dtype = np.dtype(dtype)
        if self.nbytes > self.capacity:
            self._allocate(self.nbytes)
            return True
        return False

    def free(self) -> None:
        if self.ptr:
            call("cuMemFree", self.ptr)
            self.ptr = 0
            self.capacity = 0

    def __del__(self) -> None:  # a safety net only; owners call free() explicitly
        if getattr(self, "ptr", 0):
            try:
                self.free()
            except Exception:  # noqa: BLE001 - interpreter shutdown, context already gone
                pass


class PinnedBuffer:
    """Page-locked host memory exposed as a numpy view; the view keeps this owner alive."""

    def __init__(self, shape: tuple[int, ...], dtype=np.float32) -> None:
        self.dtype = np.dtype(dtype)
        self.ptr = 0
        self.capacity = 0
        self.shape = (0,)
        self.reshape(shape)

    def reshape(self, shape: tuple[int, ...], dtype=None) -> bool:
        if dtype is not None:
            self.dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * self.dtype.itemsize
        grew = nbytes > self.capacity
        if grew:
            self.free()
            self.ptr = int(call("cuMemHostAlloc", max(nbytes, 1), 0))
            self.capacity = nbytes
        self.shape = tuple(int(s) for s in shape)
        return grew

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    @property
    def array(self) -> np.ndarray:
        """A numpy view of the current shape whose base holds this buffer, so the memory is
        never released under a live view by garbage collection. free() is still explicit:
        copy results out before freeing."""
        if not self.ptr:
            raise ValueError("pinned buffer already freed")
        return np.asarray(_PinnedView(self))

    def free(self) -> None:
        if self.ptr:
            call("cuMemFreeHost", self.ptr)
            self.ptr = 0
            self.capacity = 0

    def __del__(self) -> None:
        if getattr(self, "ptr", 0):
            try:
                self.free()
            except Exception:  # noqa: BLE001
                pass


class _PinnedView:
    """Array-interface shim: numpy keeps it as the view's base, and it keeps the owner."""

    def __init__(self, owner: PinnedBuffer) -> None:
        self.owner = owner
        self.__array_interface__ = {
            "shape": owner.shape,
            "typestr": owner.dtype.str,
            "data": (owner.ptr, False),
            "version": 3,
        }


class Region:
    """A 256-byte aligned slice of an Arena: a device address, and a host view if mirrored."""

    def __init__(self, ptr: int, shape: tuple[int, ...], dtype, host: np.ndarray | None):
        self.ptr = ptr
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.host = host

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


class Arena:
    """Many small tensors in one device allocation, optionally mirrored by one pinned buffer,
    so that one copy moves them all (one graph node instead of one per tensor)."""

    def __init__(self, layout: list[tuple[str, tuple[int, ...], object]], mirrored: bool):
        offsets = []
        total = 0
        for _, shape, dtype in layout:
            offsets.append(total)
            nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
            total += -(-max(nbytes, 1) // ALIGNMENT) * ALIGNMENT
        self.nbytes = total
        self.device = DeviceBuffer(total, shape=(total,), dtype=np.uint8)
        self.pinned = PinnedBuffer((total,), np.uint8) if mirrored else None
        raw = self.pinned.array if mirrored else None
        self.regions: dict[str, Region] = {}
        for (name, shape, dtype), offset in zip(layout, offsets, strict=True):
            host = None
            if raw is not None:
                count = int(np.prod(shape, dtype=np.int64))
                host = raw[offset: offset + count * np.dtype(dtype).itemsize].view(
                    np.dtype(dtype)).reshape(shape)
            self.regions[name] = Region(self.device.ptr + offset, shape, dtype, host)

    def __getitem__(self, name: str) -> Region:
        return self.regions[name]

    def get(self, name: str) -> Region | None:
        return self.regions.get(name)

    def free(self) -> None:
        self.device.free()
        if self.pinned is not None:
            self.pinned.free()
