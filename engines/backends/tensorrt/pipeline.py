"""One generation as one CUDA graph: text encodes, init-audio encode, the whole step loop with
both CFG passes, decode, clamp/narrow, paste-back and the copies into pinned host memory.

`GenerationPipeline` owns every buffer of one graph key. `record()` issues the complete work on
the stream; it runs eagerly (warm-up, fallback) or under stream capture, so replay and eager
execution launch exactly the same kernels and give the same bits. Before a replay only
host->device inputs change: token ids and masks, the scalar block (seed, seconds, cfg, apg,
limiter ceiling, sigmas), the keep mask and the init audio.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from engines.backends.tensorrt.engine import EngineRunner
from engines.backends.tensorrt.kernels import (
    P_APG,
    P_CFG,
    P_LIMITER,
    P_SECONDS,
    P_SIGMA_MAX,
    PARAM_FLOATS,
    REDUCE_BLOCKS,
    SamplerKernels,
)
from engines.constants import LATENT_CHANNELS, SAMPLES_PER_LATENT, TEXT_HIDDEN, TEXT_TOKENS
from engines.cuda.api import call
from engines.cuda.graph import CapturedGraph
from engines.cuda.memory import DeviceBuffer, PinnedBuffer
from engines.cuda.stream import Event, Stream
from engines.errors import BackendError
from engines.noise import STREAM_INITIAL, STREAM_LOOP

log = logging.getLogger(__name__)

SLOT = 256  # bytes per scalar slot: TensorRT wants 256-byte aligned tensor addresses
SLOT_PARAMS, SLOT_SECONDS, SLOT_LIMITER, SLOT_T, SLOT_SEED, SLOT_FLAG, SLOT_SIGMAS, SLOT_SUMS = \
    range(8)
ARENA_SLOTS = 8
MAX_STEPS = 63  # sigmas (steps + 1 floats) must fit one slot
INPAINT_FADE = 1024
STAGES = ("text", "encode", "sample", "decode")

_NP_DTYPES = {"float32": np.float32, "float16": np.float16, "int64": np.int64,
              "int32": np.int32, "bfloat16": np.uint16}


@dataclass(frozen=True)
class GraphKey:
    """Everything that changes the captured work (sigma values, cfg/apg values, seed, seconds
    and the limiter ceiling are replay inputs, so they are not part of the key)."""

    latent_len: int
    steps: int
    mode: str  # "t2a" | "a2a" | "inpaint"
    cfg: bool
    out_samples: int


@dataclass
class Runners:
    text: EngineRunner
    dit: EngineRunner
    decoder: EngineRunner
    encoder: EngineRunner | None = None

    def all(self) -> list[EngineRunner]:
        return [r for r in (self.text, self.dit, self.encoder, self.decoder) if r is not None]


@dataclass
class PipelineInputs:
    """Host-side inputs of one generation (token arrays are int64 (1, 256))."""

    ids: np.ndarray
    mask: np.ndarray
    seed: int
    sigmas: np.ndarray
    seconds: float
    limiter_ceiling: float
    cfg: float = 1.0
    apg: float = 1.0
    neg_ids: np.ndarray | None = None
    neg_mask: np.ndarray | None = None
    keep: np.ndarray | None = None  # (L,) float32 for inpainting
    init_audio: np.ndarray | None = None  # (L * 4096, 2) float32


@dataclass
class PipelineOutputs:
    pcm: np.ndarray  # int16 (out_samples, 2), an owned copy
    step_latents: np.ndarray  # (steps, 256, L) float32, owned
    gpu_ms: dict[str, float]
    nonfinite: bool
    warnings: list[str] = field(default_factory=list)

    @property
    def latents(self) -> np.ndarray:
        return self.step_latents[-1]


class GenerationPipeline:
    def __init__(self, key: GraphKey, runners: Runners, kernels: SamplerKernels,
                 stream: Stream) -> None:
        if key.steps > MAX_STEPS:
            raise BackendError(f"{key.steps} steps exceed this runtime's {MAX_STEPS}; use fewer.")
        if key.mode != "t2a" and runners.encoder is None:
            raise BackendError("Audio-to-audio and inpainting need the encoder engine; install "
                               "it for this decoder.")
        self.key = key
        self.runners = runners
        self.kernels = kernels
        self.stream = stream
        self.graph: CapturedGraph | None = None
        self.eager_only_reason: str | None = None
        self.enqueue_failures: list[str] = []
        self._buffers: list[DeviceBuffer] = []
        self._pinned: list[PinnedBuffer] = []
        self._uploads: list[tuple[DeviceBuffer, PinnedBuffer]] = []
        self._events = [Event() for _ in range(len(STAGES) + 1)]
        self._allocate()

    # ------------------------------------------------------------------ buffers
    def _device(self, shape, dtype=np.float32, zero: bool = False) -> DeviceBuffer:
        buf = DeviceBuffer(shape=tuple(shape), dtype=dtype)
        buf.reshape(tuple(shape))
        if zero:
            call("cuMemsetD8Async", buf.ptr, 0, buf.nbytes, self.stream.handle)
        self._buffers.append(buf)
        return buf

    def _host(self, shape, dtype=np.float32) -> PinnedBuffer:
        buf = PinnedBuffer(tuple(shape), dtype)
        self._pinned.append(buf)
        return buf

    def _upload(self, shape, dtype=np.float32) -> tuple[DeviceBuffer, PinnedBuffer]:
        pair = (self._device(shape, dtype), self._host(shape, dtype))
        self._uploads.append(pair)
        return pair

    def _spec_dtype(self, runner: EngineRunner, name: str) -> str:
        if name not in runner.specs:
            raise BackendError(f"The engine '{runner.name}' has no tensor '{name}'; it does not "
                               f"follow the SA3 engine contract.")
        return runner.specs[name].dtype

    def _allocate(self) -> None:
        key, c, length = self.key, LATENT_CHANNELS, self.key.latent_len
        n_lat = c * length
        samples = length * SAMPLES_PER_LATENT
        text = self.runners.text
        id_dtype = _NP_DTYPES[self._spec_dtype(text, "input_ids")]
        mask_dtype = _NP_DTYPES[self._spec_dtype(text, "attention_mask")]
        branches = 2 if key.cfg else 1
        self.ids = [self._upload((1, TEXT_TOKENS), id_dtype) for _ in range(branches)]
        self.masks = [self._upload((1, TEXT_TOKENS), mask_dtype) for _ in range(branches)]
        self.mask_f = [self._upload((1, TEXT_TOKENS), np.float32) for _ in range(branches)]
        self.hidden = [self._device((1, TEXT_TOKENS, TEXT_HIDDEN)) for _ in range(branches)]
        self.arena, self.arena_host = self._upload((ARENA_SLOTS * SLOT,), np.uint8)
        self.partials = self._device((REDUCE_BLOCKS * 2,), np.float64)
        self.x = self._device((1, c, length))
        self.v = self._device((1, c, length))
        self.v_uncond = self._device((1, c, length)) if key.cfg else None
        self.v_cond = self._device((1, c, length)) if key.cfg else None
        self.loop_noise = self._device((max(key.steps - 1, 1), c, length))
        self.noise0 = self._device((c, length)) if key.mode == "a2a" else None
        self.local_cond = self._device((1, c + 1, length), zero=True)
        self.steps_out = self._device((key.steps, c, length))
        self.init_latents = self._device((1, c, length)) if key.mode != "t2a" else None
        self.keep = self._upload((length,)) if key.mode == "inpaint" else None
        self.audio = self._upload((1, 2, samples)) if key.mode != "t2a" else None
        self.pcm16 = self._device((key.out_samples, 2), np.int16)
        self.pcm16_host = self._host((key.out_samples, 2), np.int16)
        self.steps_host = self._host((key.steps, c, length))
        self.flag_host = self._host((1,), np.uint32)
        self._ports = {}
        self._staged_init = None
        self._shapes: dict[str, dict[str, tuple[int, ...]]] = {}
        self._bind_engines(n_lat, samples)
        self.stream.synchronize()

    def _port(self, runner: EngineRunner, name: str, canonical: DeviceBuffer, n: int,
              is_input: bool) -> int:
        """Address to bind for `name`; a cast buffer sits between when the engine's dtype
        differs from our fp32 buffer."""
        dtype = self._spec_dtype(runner, name)
        if dtype == "float32" or canonical.dtype != np.float32:
            return canonical.ptr
        staged = self._device((n,), _NP_DTYPES[dtype])
        self._ports[(runner.name, name, canonical.ptr)] = (dtype, staged, canonical, n, is_input)
        return staged.ptr

    def _cast_in(self, runner: EngineRunner, name: str, canonical: DeviceBuffer) -> None:
        entry = self._ports.get((runner.name, name, canonical.ptr))
        if entry:
            dtype, staged, src, n, _ = entry
            self.kernels.cast(self.stream, "float32", dtype, staged.ptr, src.ptr, n)

    def _cast_out(self, runner: EngineRunner, name: str, canonical: DeviceBuffer) -> None:
        entry = self._ports.get((runner.name, name, canonical.ptr))
        if entry:
            dtype, staged, dst, n, _ = entry
            self.kernels.cast(self.stream, dtype, "float32", dst.ptr, staged.ptr, n)

    def _shape(self, runner: EngineRunner, name: str, shape: tuple[int, ...]) -> None:
        runner.set_input_shape(name, shape)
        self._shapes.setdefault(runner.name, {})[name] = shape

    def _slot(self, index: int) -> int:
        return self.arena.ptr + index * SLOT

    def _bind_engines(self, n_lat: int, samples: int) -> None:
        key, length = self.key, self.key.latent_len
        text, dit, dec, enc = (self.runners.text, self.runners.dit, self.runners.decoder,
                               self.runners.encoder)
        self._shape(text, "input_ids", (1, TEXT_TOKENS))
        self._shape(text, "attention_mask", (1, TEXT_TOKENS))
        self.text_addr = [
            {"input_ids": self.ids[b][0].ptr, "attention_mask": self.masks[b][0].ptr,
             "hidden_states": self._port(text, "hidden_states", self.hidden[b],
                                         TEXT_TOKENS * TEXT_HIDDEN, False)}
            for b in range(len(self.ids))]
        for name, shape in (("x", (1, LATENT_CHANNELS, length)), ("t", (1,)),
                            ("t5_hidden", (1, TEXT_TOKENS, TEXT_HIDDEN)),
                            ("t5_mask", (1, TEXT_TOKENS)), ("seconds_total", (1,)),
                            ("local_add_cond", (1, LATENT_CHANNELS + 1, length))):
            self._shape(dit, name, shape)
        self.dit_in = {
            "x": self._port(dit, "x", self.x, n_lat, True),
            "t": self._slot(SLOT_T),
            "seconds_total": self._slot(SLOT_SECONDS),
            "local_add_cond": self._port(dit, "local_add_cond", self.local_cond,
                                         (LATENT_CHANNELS + 1) * length, True),
        }
        self.dit_branch = [
            {"t5_hidden": self._port(dit, "t5_hidden", self.hidden[b], TEXT_TOKENS * TEXT_HIDDEN,
                                     True),
             "t5_mask": self.mask_f[b][0].ptr} for b in range(len(self.hidden))]
        targets = [self.v_cond, self.v_uncond] if key.cfg else [self.v]
        self.dit_out = [self._port(dit, "velocity", t, n_lat, False) for t in targets]
        if enc is not None and key.mode != "t2a":
            self._shape(enc, "audio", (1, 2, samples))
            self.enc_addr = {"audio": self._port(enc, "audio", self.audio[0], 2 * samples, True),
                             "latent": self._port(enc, "latent", self.init_latents, n_lat,
                                                  False)}
        self._shape(dec, "latent", (1, LATENT_CHANNELS, length))
        if "limiter_ceiling" in dec.specs:
            self._shape(dec, "limiter_ceiling", tuple(
                d for d in dec.specs["limiter_ceiling"].shape if d != -1))
        self.dec_addr = {"latent": self._port(dec, "latent", self.x, n_lat, True)}
        if "limiter_ceiling" in dec.specs:
            self.dec_addr["limiter_ceiling"] = self._slot(SLOT_LIMITER)
        self.decoder_output = next((n for n in ("pcm", "pcm_unbounded", "audio")
                                    if n in dec.specs), None)
        if self.decoder_output is None:
            raise BackendError(f"The decoder '{dec.name}' has no pcm, pcm_unbounded or audio "
                               f"output; it is not an SA3 decoder.")
        shape = dec.output_shape(self.decoder_output)
        out_dtype = dec.specs[self.decoder_output].dtype
        if self.decoder_output == "audio":
            self.dec_raw = self._device(shape, _NP_DTYPES.get(out_dtype, np.float32))
            self.dec_audio = self.dec_raw if out_dtype == "float32" else self._device(shape)
        else:
            self.dec_raw = self._device(shape, np.int32)
            self.dec_audio = None
        self.dec_addr[self.decoder_output] = self.dec_raw.ptr

    # ------------------------------------------------------------------ inputs
    def write_inputs(self, inputs: PipelineInputs) -> None:
        branches = [(inputs.ids, inputs.mask)]
        if self.key.cfg:
            if inputs.neg_ids is None:
                raise BackendError("CFG needs the negative prompt's tokens.")
            branches.append((inputs.neg_ids, inputs.neg_mask))
        for b, (ids, mask) in enumerate(branches):
            self.ids[b][1].array[...] = ids
            self.masks[b][1].array[...] = mask
            self.mask_f[b][1].array[...] = mask.astype(np.float32)
        arena = self.arena_host.array
        params = np.zeros(PARAM_FLOATS, np.float32)
        params[P_SECONDS] = inputs.seconds
        params[P_CFG] = inputs.cfg
        params[P_APG] = inputs.apg
        params[P_LIMITER] = inputs.limiter_ceiling
        params[P_SIGMA_MAX] = inputs.sigmas[0]
        arena[SLOT_PARAMS * SLOT: SLOT_PARAMS * SLOT + params.nbytes] = params.view(np.uint8)
        for slot, value in ((SLOT_SECONDS, inputs.seconds), (SLOT_LIMITER,
                                                              inputs.limiter_ceiling)):
            arena[slot * SLOT: slot * SLOT + 4] = np.float32(value).reshape(1).view(np.uint8)
        arena[SLOT_SEED * SLOT: SLOT_SEED * SLOT + 4] = \
            np.uint32(inputs.seed).reshape(1).view(np.uint8)
        sigmas = np.asarray(inputs.sigmas, np.float32)
        if sigmas.shape != (self.key.steps + 1,):
            raise BackendError("sigma schedule length does not match the graph's steps")
        arena[SLOT_SIGMAS * SLOT: SLOT_SIGMAS * SLOT + sigmas.nbytes] = sigmas.view(np.uint8)
        if self.keep is not None:
            self.keep[1].array[...] = inputs.keep
        if self.audio is not None and inputs.init_audio is not self._staged_init:
            # Variations reuse the same init audio object: staging it again would cost
            # milliseconds of host copying per take for nothing.
            self.audio[1].array[0] = np.asarray(inputs.init_audio, np.float32).T
            self._staged_init = inputs.init_audio

    # ------------------------------------------------------------------ the work
    def _enqueue(self, runner: EngineRunner, addresses: dict[str, int]) -> None:
        # Contexts are shared by every graph key: restore this key's shapes (host-side, cheap).
        for name, shape in self._shapes.get(runner.name, {}).items():
            runner.set_input_shape(name, shape)
        for name, address in addresses.items():
            runner.set_address(name, address)
        if not runner.enqueue(self.stream.ptr):
            self.enqueue_failures.append(runner.name)

    def _mark(self, index: int, captured: bool) -> None:
        self._events[index].record(self.stream, external=captured)

    def record(self, captured: bool = False) -> None:
        """Issue the complete generation on the stream (eager or under capture)."""
        key, k, s = self.key, self.kernels, self.stream
        c, length = LATENT_CHANNELS, key.latent_len
        n = c * length
        self.enqueue_failures = []
        self._mark(0, captured)
        for device, host in self._uploads:
            call("cuMemcpyHtoDAsync", device.ptr, host.ptr, host.nbytes, s.handle)
        # text
        text = self.runners.text
        for b, addresses in enumerate(self.text_addr):
            self._enqueue(text, addresses)
            self._cast_out(text, "hidden_states", self.hidden[b])
        self._mark(1, captured)
        # init audio
        seed_ptr = self._slot(SLOT_SEED)
        sigmas = self._slot(SLOT_SIGMAS)
        params = self._slot(SLOT_PARAMS)
        if key.mode != "t2a":
            enc = self.runners.encoder
            self._cast_in(enc, "audio", self.audio[0])
            self._enqueue(enc, self.enc_addr)
            self._cast_out(enc, "latent", self.init_latents)
        self._mark(2, captured)
        # noise and start latent
        if key.mode == "a2a":
            k.gaussian(s, self.noise0.ptr, n, seed_ptr, STREAM_INITIAL)
            k.init_mix(s, self.x.ptr, self.init_latents.ptr, self.noise0.ptr, params, n)
        else:
            k.gaussian(s, self.x.ptr, n, seed_ptr, STREAM_INITIAL)
        if key.steps > 1:
            k.gaussian(s, self.loop_noise.ptr, (key.steps - 1) * n, seed_ptr, STREAM_LOOP)
        keep = init = 0
        if key.mode == "inpaint":
            keep, init = self.keep[0].ptr, self.init_latents.ptr
            k.local_cond(s, self.local_cond.ptr, keep, init, c, length)
        # the step loop
        dit = self.runners.dit
        for i in range(key.steps):
            call("cuMemcpyDtoDAsync", self._slot(SLOT_T), sigmas + 4 * i, 4, s.handle)
            self._cast_in(dit, "x", self.x)
            self._cast_in(dit, "local_add_cond", self.local_cond)
            for b in range(2 if key.cfg else 1):
                self._enqueue(dit, {**self.dit_in, **self.dit_branch[b],
                                    "velocity": self.dit_out[b]})
                target = [self.v_cond, self.v_uncond][b] if key.cfg else self.v
                self._cast_out(dit, "velocity", target)
            if key.cfg:
                k.guidance(s, self.v.ptr, self.x.ptr, self.v_cond.ptr, self.v_uncond.ptr,
                           sigmas, i, params, self.partials.ptr, self._slot(SLOT_SUMS), n)
            noise = self.loop_noise.ptr + 4 * i * n if i < key.steps - 1 else 0
            k.pingpong(s, self.x.ptr, self.v.ptr, noise, sigmas, i, keep, init, length, n,
                       self.steps_out.ptr + 4 * i * n)
        call("cuMemsetD8Async", self._slot(SLOT_FLAG), 0, 4, s.handle)
        k.count_nonfinite(s, self.x.ptr, n, self._slot(SLOT_FLAG))
        self._mark(3, captured)
        # decode, narrow, paste-back, copies out
        dec = self.runners.decoder
        self._cast_in(dec, "latent", self.x)
        self._enqueue(dec, self.dec_addr)
        frames = key.out_samples
        total = length * SAMPLES_PER_LATENT
        if self.decoder_output == "audio":
            if self.dec_audio is not self.dec_raw:
                k.cast(s, self.runners.decoder.specs["audio"].dtype, "float32",
                       self.dec_audio.ptr, self.dec_raw.ptr, 2 * total)
            k.float_to_pcm(s, self.pcm16.ptr, self.dec_audio.ptr, total, frames)
        else:
            k.narrow_pcm(s, self.pcm16.ptr, self.dec_raw.ptr, 2 * frames)
        if key.mode == "inpaint":
            k.paste_original(s, self.pcm16.ptr, self.audio[0].ptr, total, frames,
                             self.keep[0].ptr, length, SAMPLES_PER_LATENT, INPAINT_FADE)
        call("cuMemcpyDtoHAsync", self.pcm16_host.ptr, self.pcm16.ptr, self.pcm16_host.nbytes,
             s.handle)
        call("cuMemcpyDtoHAsync", self.steps_host.ptr, self.steps_out.ptr,
             self.steps_host.nbytes, s.handle)
        call("cuMemcpyDtoHAsync", self.flag_host.ptr, self._slot(SLOT_FLAG), 4, s.handle)
        self._mark(4, captured)

    # ------------------------------------------------------------------ running
    def run_eager(self, inputs: PipelineInputs) -> PipelineOutputs:
        self.write_inputs(inputs)
        self.record(captured=False)
        self.stream.synchronize()
        if self.enqueue_failures:
            raise BackendError(f"The engine '{self.enqueue_failures[0]}' refused to run "
                               f"(execute_async_v3 returned False); see the log.")
        return self.collect()

    def capture(self) -> bool:
        """Capture the whole generation; False (and no graph) if any enqueue said False."""
        graph = self.graph or CapturedGraph()
        try:
            graph.capture(self.stream, lambda: self.record(captured=True))
        except Exception:
            graph.destroy()
            self.graph = None
            raise
        if self.enqueue_failures:
            graph.destroy()
            self.graph = None
            return False
        self.graph = graph
        return True

    def replay(self, inputs: PipelineInputs) -> PipelineOutputs:
        self.write_inputs(inputs)
        self.graph.launch(self.stream)
        self.stream.synchronize()
        return self.collect()

    def launch_only(self, inputs: PipelineInputs) -> None:
        """Write inputs and launch without waiting (benchmarks time the sync themselves)."""
        self.write_inputs(inputs)
        self.graph.launch(self.stream)

    def collect(self) -> PipelineOutputs:
        ev = self._events
        gpu_ms = {stage: ev[i + 1].elapsed_ms(ev[i]) for i, stage in enumerate(STAGES)}
        gpu_ms["total"] = ev[-1].elapsed_ms(ev[0])
        return PipelineOutputs(pcm=self.pcm16_host.array.copy(),
                               step_latents=self.steps_host.array.copy(), gpu_ms=gpu_ms,
                               nonfinite=bool(self.flag_host.array[0]))

    def device_bytes(self) -> int:
        return sum(b.capacity for b in self._buffers)

    def free(self) -> None:
        if self.graph is not None:
            self.graph.destroy()
            self.graph = None
        for buf in self._buffers:
            buf.free()
        for buf in self._pinned:
            buf.free()
        for event in self._events:
            event.free()
        self._buffers.clear()
        self._pinned.clear()
        self._uploads.clear()
