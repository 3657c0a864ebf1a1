"""Engine doubles for GPU tests and benchmarks.

They follow the contract of TensorRT execution contexts as our runtime drives them (named
tensors bound by address, shapes set per input, enqueue on a stream returning a boolean) and
launch real kernels computing a known function. `CpuTwins` computes the same functions in
numpy, so the whole captured pipeline can be checked against
`engines.backends.eager_pipeline.run_pipeline`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from engines.backends.tensorrt.pipeline_data import Runners
from engines.backends.tensorrt.tensor_spec import TensorSpec
from engines.constants import LATENT_CHANNELS as C
from engines.constants import SAMPLES_PER_LATENT as HOP
from engines.constants import TEXT_HIDDEN as D
from engines.constants import TEXT_TOKENS as T
from engines.cuda.api import call, driver
from engines.cuda.nvrtc import Module, f32, i32, i64, ptr

SOURCE = r"""
extern "C" __global__ void pad() {}
// Inputs an engine declares as float16/bfloat16 are widened before the float kernels read them.
extern "C" __global__ void widen(float* out, const unsigned short* in, int n, int bf16) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned short h = in[i];
    float f;
    if (bf16) f = __uint_as_float(((unsigned int)h) << 16);
    else asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    out[i] = f;
}
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
// `state` models the shape-dependent internal state of an execution context: the length its
// inputs were last set to. A graph replayed after its context was set to another length reads
// the other length and computes something else, as a real engine would.
extern "C" __global__ void dit(float* velocity, const float* x, const float* t,
                               const float* pooled, const float* seconds, const float* cond,
                               int length, int make_nan, const int* state) {
    long long n = 256LL * length;
    float s = t[0];
    float stale = 0.25f * (float)(state[0] - length);
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        int c = (int)(i / length), l = (int)(i % length);
        float g = (pooled[c] + 0.002f * seconds[0]) * (1.0f + 0.1f * (float)((l * 7 + c) % 11))
                  + cond[l] * cond[(long long)(c + 1) * length + l] * 0.5f;
        float den = 0.5f * x[i] + g * (1.0f - 0.5f * s);
        velocity[i] = make_nan ? __int_as_float(0x7fc00000) : (x[i] - den) / s + stale;
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
extern "C" __global__ void dec(int* pcm, const float* latent, const float* limiter, int length,
                               const int* state, float scale) {
    long long frames = (long long)length * 4096;
    int stale = 1000 * (state[0] - length);
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < frames * 2;
         i += (long long)gridDim.x * blockDim.x) {
        long long frame = i / 2; int ch = (int)(i % 2);
        int c = (int)((ch * 7 + frame) % 256); int l = (int)(frame / 4096);
        pcm[i] = (int)rintf(latent[(long long)c * length + l] * scale * limiter[0]) + stale;
    }
}
"""


def _spec(name, is_input, dtype, shape, profile=None):
    return TensorSpec(name=name, is_input=is_input, dtype=dtype, shape=shape, profile=profile)


def _dyn(lo, opt, hi, prefix=(1, C)):
    return ((*prefix, lo), (*prefix, opt), (*prefix, hi))


class _Double:
    """An engine double: its I/O, failure switches, and the contexts made from it."""

    scratch_bytes = 0

    def __init__(self, module: Module, name: str, specs: list[TensorSpec], *,
                 fail_under_capture: bool = False, drop_under_capture: bool = False,
                 invalidate_under_capture: bool | None = None, noop: bool = False,
                 extra_launches: int = 0, input_types: dict[str, str] | None = None) -> None:
        self.module = module
        self.name = name
        self.specs = {s.name: s for s in specs}
        # Declared types other than float32 for small static inputs (t, t5_mask, ...).
        self.input_types = dict(input_types or {})
        for tensor, dtype in self.input_types.items():
            self.specs[tensor] = dataclasses.replace(self.specs[tensor], dtype=dtype)
        self._widened: dict[str, object] = {}
        self.contexts: list[_Context] = []
        self.fail_under_capture = fail_under_capture
        self.drop_under_capture = drop_under_capture
        # None: behave. True/False: under capture, make a call that capture forbids (as a real
        # engine can), which invalidates the capture for real, then return this value.
        self.invalidate_under_capture = invalidate_under_capture
        self.noop = noop
        # A real engine enqueues hundreds of kernels; extra empty launches model that host cost.
        self.extra_launches = extra_launches

    def create_context(self) -> _Context:
        context = _Context(self)
        self.contexts.append(context)
        return context

    def state_length(self, shapes: dict[str, tuple[int, ...]]) -> int:
        """The length an execution context keeps in its internal state (0: static engine)."""
        return 0

    @property
    def enqueues(self) -> int:
        return sum(c.enqueues for c in self.contexts)

    def float_inputs(self, ctx: _Context, stream) -> dict[str, int]:
        """The context's addresses, narrow inputs replaced by float copies widened on `stream`."""
        from engines.cuda.memory import DeviceBuffer

        addresses = dict(ctx.addresses)
        for tensor, dtype in self.input_types.items():
            count = int(np.prod(self.specs[tensor].shape, dtype=np.int64)) or 1
            if tensor not in self._widened:
                self._widened[tensor] = DeviceBuffer(4 * count)
            wide = self._widened[tensor]
            _go(self.module, stream, "widen", count, ptr(wide.ptr), ptr(addresses[tensor]),
                i32(count), i32(int(dtype == "bfloat16")))
            addresses[tensor] = wide.ptr
        return addresses

    def close(self) -> None:
        for context in self.contexts:
            context.close()
        for wide in self._widened.values():
            wide.free()


class _Context:
    """One execution context of a double: shapes, addresses (re-bound only on change), and a
    device word of internal state written whenever an input shape changes."""

    def __init__(self, engine: _Double) -> None:
        from engines.cuda.memory import DeviceBuffer

        self.engine = engine
        self.name = engine.name
        self.specs = engine.specs
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.addresses: dict[str, int] = {}
        self.rebinds = 0
        self.enqueues = 0
        self.state = DeviceBuffer(4)
        self._write_state()

    def _write_state(self) -> None:
        value = np.array([self.engine.state_length(self.shapes)], np.int32)
        call("cuMemcpyHtoD", self.state.ptr, value.ctypes.data, 4)

    def bind_scratch(self, ptr_: int, size: int) -> None:
        pass

    def set_input_shape(self, name: str, shape: tuple[int, ...]) -> None:
        spec = self.specs[name]
        if spec.profile is not None:
            lo, _, hi = spec.profile
            if any(s < a or s > b for s, a, b in zip(shape, lo, hi, strict=True)):
                raise ValueError(f"{name} shape {shape} outside profile")
        self.shapes[name] = tuple(shape)
        self._write_state()

    def output_shape(self, name: str) -> tuple[int, ...]:
        return self.engine.output_shape(self.shapes, name)

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
        engine = self.engine
        missing = set(self.specs) - set(self.addresses)
        if missing:
            raise RuntimeError(f"{self.name}: unset addresses {sorted(missing)}")
        capturing = self._capturing(stream)
        if capturing and engine.fail_under_capture:
            return False
        if capturing and engine.invalidate_under_capture is not None:
            # Synchronizing a capturing stream is illegal: CUDA answers 900 and invalidates the
            # whole capture, so every later call in it (ours included) fails with 901.
            driver().cuStreamSynchronize(driver().CUstream(stream))
            return engine.invalidate_under_capture
        self.enqueues += 1
        if (capturing and engine.drop_under_capture) or engine.noop:
            return True
        raw = _Stream(stream)
        engine.launch(self, raw)
        pad = engine.module.kernel("pad") if engine.extra_launches else None
        for _ in range(engine.extra_launches):
            pad.launch(raw, 1, 32)
        return True

    def close(self) -> None:
        self.state.free()


def _go(module: Module, stream, kernel: str, n: int, *args) -> None:
    module.kernel(kernel).launch(stream, max(1, min(4096, -(-n // 256))), 256, *args)


class _Stream:
    def __init__(self, handle: int) -> None:
        self.handle = driver().CUstream(handle)


class TextDouble(_Double):
    def __init__(self, module, **kw):
        super().__init__(module, "t5-double", [
            _spec("input_ids", True, "int64", (1, T)),
            _spec("attention_mask", True, "int64", (1, T)),
            _spec("hidden_states", False, "float32", (1, T, D))], **kw)

    def output_shape(self, shapes, name):
        return (1, T, D)

    def launch(self, ctx, stream):
        a = ctx.addresses
        _go(self.module, stream, "t5", T * D, ptr(a["hidden_states"]), ptr(a["input_ids"]),
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

    def output_shape(self, shapes, name):
        return (1, C, shapes["x"][2])

    def state_length(self, shapes):
        return shapes.get("x", (0, 0, 0))[2]

    def launch(self, ctx, stream):
        a = self.float_inputs(ctx, stream)
        length = ctx.shapes["x"][2]
        self.module.kernel("pool").launch(stream, 1, 256, ptr(self.pooled.ptr),
                                          ptr(a["t5_hidden"]), ptr(a["t5_mask"]))
        _go(self.module, stream, "dit", C * length, ptr(a["velocity"]), ptr(a["x"]),
            ptr(a["t"]), ptr(self.pooled.ptr), ptr(a["seconds_total"]),
            ptr(a["local_add_cond"]), i32(length), i32(int(self.make_nan)), ptr(ctx.state.ptr))

    def close(self):
        super().close()
        self.pooled.free()


class EncoderDouble(_Double):
    def __init__(self, module, **kw):
        super().__init__(module, "enc-double", [
            _spec("audio", True, "float32", (1, 2, -1),
                  ((1, 2, 32 * HOP), (1, 2, 1292 * HOP), (1, 2, 4096 * HOP))),
            _spec("latent", False, "float32", (1, C, -1))], **kw)

    def output_shape(self, shapes, name):
        return (1, C, shapes["audio"][2] // HOP)

    def launch(self, ctx, stream):
        length = ctx.shapes["audio"][2] // HOP
        _go(self.module, stream, "enc", C * length, ptr(ctx.addresses["latent"]),
            ptr(ctx.addresses["audio"]), i32(length))


DECODE_SCALE = 6000.0  # the canonical double's gain; another codec tier's double uses another


class DecoderDouble(_Double):
    def __init__(self, module, scale: float = DECODE_SCALE, name: str = "dec-double", **kw):
        super().__init__(module, name, [
            _spec("latent", True, "float32", (1, C, -1), _dyn(32, 1292, 4096)),
            _spec("limiter_ceiling", True, "float32", ()),
            _spec("pcm", False, "int32", (1, -1, 2))], **kw)
        self.scale = scale

    def output_shape(self, shapes, name):
        return (1, shapes["latent"][2] * HOP, 2)

    def state_length(self, shapes):
        return shapes.get("latent", (0, 0, 0))[2]

    def launch(self, ctx, stream):
        a = self.float_inputs(ctx, stream)
        length = ctx.shapes["latent"][2]
        _go(self.module, stream, "dec", 2 * length * HOP, ptr(a["pcm"]), ptr(a["latent"]),
            ptr(a["limiter_ceiling"]), i32(length), ptr(ctx.state.ptr), f32(self.scale))


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
    """The doubles' functions in numpy, as `engines.backends.eager_pipeline.EngineStages`."""

    decode_scale = DECODE_SCALE

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
            value = latent[0][c, frames // HOP] * np.float32(self.decode_scale) * np.float32(
                limiter_ceiling)
            out[:, ch] = np.rint(value).astype(np.int64)
        return np.clip(out, -32767, 32767).astype(np.int16)


__all__ = ["CpuTwins", "load_module", "make_runners", "f32", "i64"]
