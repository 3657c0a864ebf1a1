"""Engine doubles for GPU tests and benchmarks.

They follow the contract of TensorRT execution contexts as our runtime drives them (named
tensors bound by address, shapes set per input, enqueue on a stream returning a boolean) and
launch real kernels computing a known function. `CpuTwins` computes the same functions in
numpy, so the whole captured pipeline can be checked against `engines.pipeline.run_pipeline`.
"""

from __future__ import annotations

import numpy as np

from engines.backends.tensorrt.engine import TensorSpec
from engines.backends.tensorrt.pipeline import Runners
from engines.constants import LATENT_CHANNELS as C
from engines.constants import SAMPLES_PER_LATENT as HOP
from engines.constants import TEXT_HIDDEN as D
from engines.constants import TEXT_TOKENS as T
from engines.cuda.api import call, driver
from engines.cuda.nvrtc import Module, f32, i32, i64, ptr

SOURCE = r"""
extern "C" __global__ void pad() {}
extern "C" __global__ void t5(float* hidden, const long long* ids, const long long* mask) {
    long long n = 256LL * 768;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        int t = (int)(i / 768), d = (int)(i % 768);
        float value = (float)(ids[t] % 97) * 0.01f + (float)(d % 13) * 0.001f;
        hidden[i] = mask[t] ? value : 0.0f;
    }
}
extern "C" __global__ void pool(float* pooled, const float* hidden, const float* mask) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= 256) return;
    double sum = 0.0, count = 0.0;
    for (int t = 0; t < 256; ++t) { sum += (double)mask[t] * (double)hidden[t * 768 + c];
                                    count += (double)mask[t]; }
    pooled[c] = (float)(sum / (count > 1.0 ? count : 1.0));
}
extern "C" __global__ void dit(float* velocity, const float* x, const float* t,
                               const float* pooled, const float* seconds, const float* cond,
                               int length, int make_nan) {
    long long n = 256LL * length;
    float s = t[0];
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        int c = (int)(i / length), l = (int)(i % length);
        float g = (pooled[c] + 0.002f * seconds[0]) * (1.0f + 0.1f * (float)((l * 7 + c) % 11))
                  + cond[l] * cond[(long long)(c + 1) * length + l] * 0.5f;
        float den = 0.5f * x[i] + g * (1.0f - 0.5f * s);
        velocity[i] = make_nan ? __int_as_float(0x7fc00000) : (x[i] - den) / s;
    }
}
extern "C" __global__ void enc(float* latent, const float* audio, int length) {
    long long n = 256LL * length;
    long long total = (long long)length * 4096;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        int c = (int)(i / length), l = (int)(i % length);
        latent[i] = audio[(c % 2) * total + (long long)l * 4096 + (c * 16) % 4096] * 2.0f
                    + 0.01f * (float)c;
    }
}
extern "C" __global__ void dec(int* pcm, const float* latent, const float* limiter, int length) {
    long long frames = (long long)length * 4096;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < frames * 2;
         i += (long long)gridDim.x * blockDim.x) {
        long long frame = i / 2; int ch = (int)(i % 2);
        int c = (int)((ch * 7 + frame) % 256); int l = (int)(frame / 4096);
        pcm[i] = (int)rintf(latent[(long long)c * length + l] * 6000.0f * limiter[0]);
    }
}
"""


def _spec(name, is_input, dtype, shape, profile=None):
    return TensorSpec(name=name, is_input=is_input, dtype=dtype, shape=shape, profile=profile)


def _dyn(lo, opt, hi, prefix=(1, C)):
    return ((*prefix, lo), (*prefix, opt), (*prefix, hi))


class _Double:
    """Shared plumbing: shapes, addresses (re-bound only on change), capture awareness."""

    capturable = True
    scratch_bytes = 0

    def __init__(self, module: Module, name: str, specs: list[TensorSpec], *,
                 fail_under_capture: bool = False, drop_under_capture: bool = False,
                 noop: bool = False, extra_launches: int = 0) -> None:
        self.module = module
        self.name = name
        self.specs = {s.name: s for s in specs}
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.addresses: dict[str, int] = {}
        self.rebinds = 0
        self.enqueues = 0
        self.fail_under_capture = fail_under_capture
        self.drop_under_capture = drop_under_capture
        self.noop = noop
        # A real engine enqueues hundreds of kernels; extra empty launches model that host cost.
        self.extra_launches = extra_launches

    def bind_scratch(self, ptr_: int, size: int) -> None:
        pass

    def set_input_shape(self, name: str, shape: tuple[int, ...]) -> None:
        spec = self.specs[name]
        if spec.profile is not None:
            lo, _, hi = spec.profile
            if any(s < a or s > b for s, a, b in zip(shape, lo, hi, strict=True)):
                raise ValueError(f"{name} shape {shape} outside profile")
        self.shapes[name] = tuple(shape)

    def set_address(self, name: str, address: int) -> bool:
        if name not in self.specs:
            raise KeyError(name)
        if self.addresses.get(name) == address:
            return False
        self.addresses[name] = address
        self.rebinds += 1
        return True

    def _capturing(self, stream: int) -> bool:
        drv = driver()
        status = call("cuStreamIsCapturing", drv.CUstream(stream))
        return status == drv.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_ACTIVE

    def enqueue(self, stream: int) -> bool:
        missing = set(self.specs) - set(self.addresses)
        if missing:
            raise RuntimeError(f"{self.name}: unset addresses {sorted(missing)}")
        capturing = self._capturing(stream)
        if capturing and self.fail_under_capture:
            return False
        self.enqueues += 1
        if (capturing and self.drop_under_capture) or self.noop:
            return True
        raw = _Stream(stream)
        self._launch(raw)
        pad = self.module.kernel("pad") if self.extra_launches else None
        for _ in range(self.extra_launches):
            pad.launch(raw, 1, 32)
        return True

    def _go(self, stream, kernel: str, n: int, *args) -> None:
        self.module.kernel(kernel).launch(stream, max(1, min(4096, -(-n // 256))), 256, *args)

    def close(self) -> None:
        pass


class _Stream:
    def __init__(self, handle: int) -> None:
        self.handle = driver().CUstream(handle)


class TextDouble(_Double):
    def __init__(self, module, **kw):
        super().__init__(module, "t5-double", [
            _spec("input_ids", True, "int64", (1, T)),
            _spec("attention_mask", True, "int64", (1, T)),
            _spec("hidden_states", False, "float32", (1, T, D))], **kw)

    def output_shape(self, name):
        return (1, T, D)

    def _launch(self, stream):
        a = self.addresses
        self._go(stream, "t5", T * D, ptr(a["hidden_states"]), ptr(a["input_ids"]),
                 ptr(a["attention_mask"]))


class DitDouble(_Double):
    def __init__(self, module, make_nan: bool = False, **kw):
        super().__init__(module, "dit-double", [
            _spec("x", True, "float32", (1, C, -1), _dyn(1, 1292, 4096)),
            _spec("t", True, "float32", (1,)),
            _spec("t5_hidden", True, "float32", (1, T, D)),
            _spec("t5_mask", True, "float32", (1, T)),
            _spec("seconds_total", True, "float32", (1,)),
            _spec("local_add_cond", True, "float32", (1, C + 1, -1),
                  _dyn(1, 1292, 4096, (1, C + 1))),
            _spec("velocity", False, "float32", (1, C, -1))], **kw)
        self.make_nan = make_nan
        from engines.cuda.memory import DeviceBuffer

        self.pooled = DeviceBuffer(4 * C)

    def output_shape(self, name):
        return (1, C, self.shapes["x"][2])

    def _launch(self, stream):
        a = self.addresses
        length = self.shapes["x"][2]
        self.module.kernel("pool").launch(stream, 1, 256, ptr(self.pooled.ptr),
                                          ptr(a["t5_hidden"]), ptr(a["t5_mask"]))
        self._go(stream, "dit", C * length, ptr(a["velocity"]), ptr(a["x"]), ptr(a["t"]),
                 ptr(self.pooled.ptr), ptr(a["seconds_total"]), ptr(a["local_add_cond"]),
                 i32(length), i32(int(self.make_nan)))

    def close(self):
        self.pooled.free()


class EncoderDouble(_Double):
    def __init__(self, module, **kw):
        super().__init__(module, "enc-double", [
            _spec("audio", True, "float32", (1, 2, -1),
                  ((1, 2, 32 * HOP), (1, 2, 1292 * HOP), (1, 2, 4096 * HOP))),
            _spec("latent", False, "float32", (1, C, -1))], **kw)

    def output_shape(self, name):
        return (1, C, self.shapes["audio"][2] // HOP)

    def _launch(self, stream):
        length = self.shapes["audio"][2] // HOP
        self._go(stream, "enc", C * length, ptr(self.addresses["latent"]),
                 ptr(self.addresses["audio"]), i32(length))


class DecoderDouble(_Double):
    def __init__(self, module, **kw):
        super().__init__(module, "dec-double", [
            _spec("latent", True, "float32", (1, C, -1), _dyn(32, 1292, 4096)),
            _spec("limiter_ceiling", True, "float32", ()),
            _spec("pcm", False, "int32", (1, -1, 2))], **kw)

    def output_shape(self, name):
        return (1, self.shapes["latent"][2] * HOP, 2)

    def _launch(self, stream):
        length = self.shapes["latent"][2]
        self._go(stream, "dec", 2 * length * HOP, ptr(self.addresses["pcm"]),
                 ptr(self.addresses["latent"]), ptr(self.addresses["limiter_ceiling"]),
                 i32(length))


def load_module(cache_dir=None) -> Module:
    return Module(SOURCE, "sa3_test_doubles", ("--fmad=false",), cache_dir)


ENGINE_LIKE_LAUNCHES = {"text": 100, "dit": 200, "decoder": 50, "encoder": 50}
"""Assumed kernels per enqueue of real SA3 engines (order of magnitude, for the benchmark)."""


def make_runners(module: Module, *, text=None, dit=None, decoder=None, encoder=None,
                 noop: bool = False, launches: dict[str, int] | None = None) -> Runners:
    extra = launches or {}

    def opts(name, given):
        return {"extra_launches": extra.get(name, 0), **(given or {})}

    return Runners(text=TextDouble(module, noop=noop, **opts("text", text)),
                   dit=DitDouble(module, noop=noop, **opts("dit", dit)),
                   decoder=DecoderDouble(module, noop=noop, **opts("decoder", decoder)),
                   encoder=EncoderDouble(module, noop=noop, **opts("encoder", encoder)))


class CpuTwins:
    """The doubles' functions in numpy, as `engines.pipeline.EngineStages`."""

    def encode_text(self, input_ids, attention_mask):
        d = np.arange(D, dtype=np.float32)
        value = (input_ids[0] % 97).astype(np.float32)[:, None] * np.float32(0.01) + \
            (d % 13)[None, :] * np.float32(0.001)
        return np.where(attention_mask[0][:, None] != 0, value, np.float32(0))[None]

    def dit(self, x, t, hidden, mask, seconds, local_cond):
        m = mask[0].astype(np.float64)
        pooled = ((m[:, None] * hidden[0][:, :C].astype(np.float64)).sum(0) /
                  max(m.sum(), 1.0)).astype(np.float32)
        length = x.shape[2]
        c = np.arange(C)[:, None]
        pos = np.arange(length)[None, :]
        wobble = np.float32(1.0) + np.float32(0.1) * ((pos * 7 + c) % 11).astype(np.float32)
        g = (pooled[:, None] + np.float32(0.002) * seconds[0]) * wobble + \
            local_cond[0, 0][None, :] * local_cond[0, 1:] * np.float32(0.5)
        s = t[0]
        den = np.float32(0.5) * x[0] + g * (np.float32(1.0) - np.float32(0.5) * s)
        return ((x[0] - den) / s)[None].astype(np.float32)

    def encode_audio(self, audio):
        length = audio.shape[2] // HOP
        c = np.arange(C)[:, None]
        pos = np.arange(length)[None, :] * HOP + (c * 16) % HOP
        return (audio[0][c % 2, pos] * np.float32(2.0) +
                np.float32(0.01) * c.astype(np.float32))[None].astype(np.float32)

    def decode(self, latent, limiter_ceiling):
        length = latent.shape[2]
        frames = np.arange(length * HOP)
        out = np.empty((length * HOP, 2), np.int64)
        for ch in range(2):
            c = (ch * 7 + frames) % C
            value = latent[0][c, frames // HOP] * np.float32(6000.0) * np.float32(
                limiter_ceiling)
            out[:, ch] = np.rint(value).astype(np.int64)
        return np.clip(out, -32767, 32767).astype(np.int16)


__all__ = ["CpuTwins", "load_module", "make_runners", "f32", "i64"]
