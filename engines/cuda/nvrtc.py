"""Runtime compilation of our small kernels: NVRTC to cubin for this GPU, cached on disk.

Cache key: (source and options hash, sm_XX, NVRTC version). Modules load into the primary
context that `api.ensure_context` made current; no cuCtxCreate anywhere.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import tempfile
from pathlib import Path

from engines.cuda.api import CudaError, call, check, compute_capability, nvrtc
from engines.cuda.stream import Stream

log = logging.getLogger(__name__)


class CompileError(CudaError):
    """NVRTC rejected the source; `program_log` holds the compiler's messages."""

    def __init__(self, name: str, program_log: str) -> None:
        self.program_log = program_log
        super().__init__("NVRTC_ERROR_COMPILATION", "nvrtcCompileProgram",
                         f"{name}: {program_log.strip()[:400]}")


def nvrtc_version() -> tuple[int, int]:
    major, minor = check(nvrtc().nvrtcVersion(), "nvrtcVersion")
    return int(major), int(minor)


def _program_log(prog) -> str:
    rtc = nvrtc()
    size = check(rtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
    buf = b" " * int(size)
    check(rtc.nvrtcGetProgramLog(prog, buf), "nvrtcGetProgramLog")
    return buf.decode(errors="replace").rstrip("\x00")


def compile_cubin(source: str, name: str, arch: str, options: tuple[str, ...] = ()) -> bytes:
    """Compile `source` to a cubin for `arch` ("sm_90"); raises CompileError with the log."""
    rtc = nvrtc()
    prog = check(rtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], []),
                 "nvrtcCreateProgram")
    try:
        opts = [f"--gpu-architecture={arch}".encode(), b"-default-device", b"--std=c++17",
                *(o.encode() for o in options)]
        result = rtc.nvrtcCompileProgram(prog, len(opts), opts)
        program_log = _program_log(prog)
        if int(result[0]) != 0:
            log.error("NVRTC failed for %s:\n%s", name, program_log)
            raise CompileError(name, program_log)
        if program_log.strip():
            log.debug("NVRTC log for %s:\n%s", name, program_log)
        size = check(rtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
        cubin = b" " * int(size)
        check(rtc.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
        return cubin
    finally:
        check(rtc.nvrtcDestroyProgram(prog), "nvrtcDestroyProgram")


def cache_key(source: str, options: tuple[str, ...], arch: str, version: tuple[int, int]) -> str:
    digest = hashlib.sha256((source + "\0" + "\0".join(options)).encode()).hexdigest()[:32]
    return f"{digest}-{arch}-nvrtc{version[0]}.{version[1]}"


def cached_cubin(source: str, name: str, arch: str, options: tuple[str, ...] = (),
                 cache_dir: Path | None = None) -> tuple[bytes, bool]:
    """(cubin, was_cached). Corrupt or unwritable caches fall back to compiling."""
    key = cache_key(source, options, arch, nvrtc_version())
    path = None
    if cache_dir is not None:
        path = Path(cache_dir) / f"{name}-{key}.cubin"
        try:
            return path.read_bytes(), True
        except OSError:
            pass
    cubin = compile_cubin(source, name, arch, options)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".cubin.")
            with os.fdopen(fd, "wb") as handle:
                handle.write(cubin)
            os.replace(tmp, path)
        except OSError as exc:
            log.warning("could not cache %s: %s", path, exc)
    return cubin, False


class Module:
    """A loaded cubin and its kernels."""

    def __init__(self, source: str, name: str, options: tuple[str, ...] = (),
                 cache_dir: Path | None = None) -> None:
        major, minor = compute_capability()
        self.arch = f"sm_{major}{minor}"
        cubin, self.from_cache = cached_cubin(source, name, self.arch, options, cache_dir)
        self._cubin = cubin  # cuModuleLoadData reads it synchronously, but keep it anyway
        self.handle = call("cuModuleLoadData", cubin)
        self._kernels: dict[str, Kernel] = {}

    def kernel(self, name: str) -> Kernel:
        if name not in self._kernels:
            self._kernels[name] = Kernel(call("cuModuleGetFunction", self.handle, name.encode()),
                                         name)
        return self._kernels[name]

    def free(self) -> None:
        if self.handle is not None:
            call("cuModuleUnload", self.handle)
            self.handle = None
            self._kernels.clear()


class Kernel:
    def __init__(self, function, name: str) -> None:
        self.function = function
        self.name = name

    def launch(self, stream: Stream, grid: int | tuple[int, int, int],
               block: int | tuple[int, int, int], *args: ctypes._SimpleCData,
               shared: int = 0) -> None:
        """Launch with ctypes-typed arguments (c_void_p for device pointers)."""
        gx, gy, gz = (grid, 1, 1) if isinstance(grid, int) else grid
        bx, by, bz = (block, 1, 1) if isinstance(block, int) else block
        pointers = (ctypes.c_void_p * max(len(args), 1))(
            *[ctypes.addressof(a) for a in args])
        call("cuLaunchKernel", self.function, gx, gy, gz, bx, by, bz, shared, stream.handle,
             ctypes.addressof(pointers), 0)


def ptr(address: int) -> ctypes.c_void_p:
    return ctypes.c_void_p(int(address))


def i32(value: int) -> ctypes.c_int:
    return ctypes.c_int(int(value))


def u32(value: int) -> ctypes.c_uint:
    return ctypes.c_uint(int(value))


def i64(value: int) -> ctypes.c_longlong:
    return ctypes.c_longlong(int(value))


def f32(value: float) -> ctypes.c_float:
    return ctypes.c_float(float(value))
