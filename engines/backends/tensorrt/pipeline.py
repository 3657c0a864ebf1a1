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

import numpy as np

from engines.backends.tensorrt import dtypes
from engines.backends.tensorrt.engine import ContextRunner
from engines.backends.tensorrt.kernels import (
    P_APG,
    P_CFG,
    P_LIMITER,
    P_SECONDS,
    P_SIGMA_MAX,
    PARAM_FLOATS,
    REDUCE_BLOCKS,
    SamplerKernels,
    grid_for,
)
from engines.backends.tensorrt.pipeline_data import (
    GraphKey,
    PipelineInputs,
    PipelineOutputs,
    Runners,
)
from engines.constants import LATENT_CHANNELS, SAMPLES_PER_LATENT, TEXT_HIDDEN, TEXT_TOKENS
from engines.cuda.api import call
from engines.cuda.graph import CapturedGraph, CaptureFailed
from engines.cuda.memory import Arena, DeviceBuffer
from engines.cuda.stream import Event, Stream
from engines.errors import BackendError

log = logging.getLogger(__name__)

MAX_STEPS = 50
INPAINT_FADE = 1024
STAGES = ("text", "encode", "sample", "decode")



class GenerationPipeline:
    """Every buffer, execution context and the captured graph of one graph key."""

    def __init__(self, key: GraphKey, engines: Runners, kernels: SamplerKernels,
                 stream: Stream, scratch: tuple[int, int] | None = None) -> None:
        if key.steps > MAX_STEPS:
            raise BackendError(f"{key.steps} steps exceed this runtime's {MAX_STEPS}; use fewer.")
        if key.mode != "t2a" and engines.encoder is None:
            raise BackendError("Audio-to-audio and inpainting need the encoder engine; install "
                               "it for this decoder.")
        self.key = key
        self.kernels = kernels
        self.stream = stream
        self.graph: CapturedGraph | None = None
        self.eager_only_reason: str | None = None
        self.eager_notice_given = False
        self.enqueue_failures: list[str] = []
        self.capture_failure: str | None = None
        self._recording: str = ""
        self._buffers: list[DeviceBuffer] = []
        self._arenas: list[Arena] = []
        self._events: list[Event] = []
        self.runners = engines.new_contexts()
        try:
            for context in self.runners.all():
                if scratch is not None:
                    context.bind_scratch(*scratch)
            self._events = [Event() for _ in range(len(STAGES) + 1)]
            self._allocate()
        except BaseException:
            self.free()
            raise

    # ------------------------------------------------------------------ buffers
    def _device(self, shape, dtype=np.float32, zero: bool = False) -> DeviceBuffer:
        buf = DeviceBuffer(shape=tuple(shape), dtype=dtype)
        buf.reshape(tuple(shape))
        if zero:
            call("cuMemsetD8Async", buf.ptr, 0, buf.nbytes, self.stream.handle)
        self._buffers.append(buf)
        return buf

    def _spec_dtype(self, runner: ContextRunner, name: str) -> str:
        if name not in runner.specs:
            raise BackendError(f"The engine '{runner.name}' has no tensor '{name}'; it does not "
                               f"follow the SA3 engine contract.")
        return runner.specs[name].dtype

    def _allocate(self) -> None:
        key, c, length = self.key, LATENT_CHANNELS, self.key.latent_len
        n_lat = c * length
        samples = length * SAMPLES_PER_LATENT
        text, dit, dec = self.runners.text, self.runners.dit, self.runners.decoder
        # Inputs bound straight to an engine are stored in the type the engine declares.
        self.types = {
            "ids": self._bound_type(text, "input_ids", dtypes.INTEGER_TYPES),
            "mask": self._bound_type(text, "attention_mask", dtypes.INTEGER_TYPES),
            "maskf": self._bound_type(dit, "t5_mask", dtypes.FLOAT_TYPES),
            "seconds": self._bound_type(dit, "seconds_total", dtypes.FLOAT_TYPES),
            "t": self._bound_type(dit, "t", dtypes.FLOAT_TYPES),
            "limiter": (self._bound_type(dec, "limiter_ceiling", dtypes.FLOAT_TYPES)
                        if "limiter_ceiling" in dec.specs else "float32"),
        }
        host = {role: dtypes.HOST_TYPES[name] for role, name in self.types.items()}
        self.branches = 2 if key.cfg else 1
        # Every host->device input in one pinned block and one copy; every output likewise.
        layout = []
        for b in range(self.branches):
            layout += [(f"ids{b}", (1, TEXT_TOKENS), host["ids"]),
                       (f"mask{b}", (1, TEXT_TOKENS), host["mask"]),
                       (f"maskf{b}", (1, TEXT_TOKENS), host["maskf"])]
        layout += [("params", (PARAM_FLOATS,), np.float32), ("seconds", (1,), host["seconds"]),
                   ("limiter", (), host["limiter"]), ("seed", (1,), np.uint32),
                   ("sigmas", (key.steps + 1,), np.float32)]
        layout += [(f"t{i}", (1,), host["t"]) for i in range(key.steps)]
        if key.mode == "inpaint":
            layout.append(("keep", (length,), np.float32))
        self.inputs = Arena(layout, mirrored=True)
        self._step_t = [self.inputs[f"t{i}"].host for i in range(key.steps)]
        # The init audio (up to 128 MB) has its own block, copied when it changes rather than
        # by every replay: variations of one init audio replay without moving it again.
        self.init_audio = (Arena([("audio", (1, 2, samples), np.float32)], mirrored=True)
                           if key.mode != "t2a" else None)
        self.outputs = Arena([("pcm", (key.out_samples, 2), np.int16),
                              ("steps", (key.steps, c, length), np.float32),
                              ("flags", (grid_for(n_lat),), np.uint32)], mirrored=True)
        self._arenas += [a for a in (self.inputs, self.init_audio, self.outputs) if a]
        self.hidden = [self._device((1, TEXT_TOKENS, TEXT_HIDDEN)) for _ in range(self.branches)]
        self.sums = self._device((REDUCE_BLOCKS * 2,), np.float64)
        self.x = self._device((1, c, length))
        self.v = self._device((1, c, length))
        self.v_uncond = self._device((1, c, length)) if key.cfg else None
        self.v_cond = self._device((1, c, length)) if key.cfg else None
        self.loop_noise = self._device((max(key.steps - 1, 1), c, length))
        self.noise0 = self._device((c, length)) if key.mode == "a2a" else None
        self.local_cond = self._device((1, c + 1, length), zero=True)
        self.init_latents = self._device((1, c, length)) if key.mode != "t2a" else None
        self._ports = {}
        self._staged_init = None
        self._bind_engines(n_lat, samples)
        self.stream.synchronize()

    def _bound_type(self, runner: ContextRunner, name: str, allowed: tuple[str, ...]) -> str:
        dtype = self._spec_dtype(runner, name)
        dtypes.host_type(runner.name, name, dtype, allowed)  # refuses what we cannot feed
        return dtype

    def _port(self, runner: ContextRunner, name: str, canonical: DeviceBuffer, n: int,
              is_input: bool) -> int:
        """Address to bind for `name`; a cast buffer sits between when the engine's dtype
        differs from our fp32 buffer."""
        dtype = self._spec_dtype(runner, name)
        if dtype == "float32" or canonical.dtype != np.float32:
            return canonical.ptr
        dtypes.host_type(runner.name, name, dtype, dtypes.FLOAT_TYPES)
        staged = self._device((n,), dtypes.HOST_TYPES[dtype])
        self._ports[(runner.name, name, canonical.ptr)] = (dtype, staged, canonical, n, is_input)
        return staged.ptr

    def _cast_in(self, runner: ContextRunner, name: str, canonical: DeviceBuffer) -> None:
        entry = self._ports.get((runner.name, name, canonical.ptr))
        if entry:
            dtype, staged, src, n, _ = entry
            self.kernels.cast(self.stream, "float32", dtype, staged.ptr, src.ptr, n)

    def _cast_out(self, runner: ContextRunner, name: str, canonical: DeviceBuffer) -> None:
        entry = self._ports.get((runner.name, name, canonical.ptr))
        if entry:
            dtype, staged, dst, n, _ = entry
            self.kernels.cast(self.stream, dtype, "float32", dst.ptr, staged.ptr, n)

    def _shape(self, runner: ContextRunner, name: str, shape: tuple[int, ...]) -> None:
        # Set once, before the first run: this key's contexts never see another shape.
        runner.set_input_shape(name, shape)

    def _bind_engines(self, n_lat: int, samples: int) -> None:
        key, length = self.key, self.key.latent_len
        text, dit, dec, enc = (self.runners.text, self.runners.dit, self.runners.decoder,
                               self.runners.encoder)
        self._shape(text, "input_ids", (1, TEXT_TOKENS))
        self._shape(text, "attention_mask", (1, TEXT_TOKENS))
        io = self.inputs
        self.text_addr = [
            {"input_ids": io[f"ids{b}"].ptr, "attention_mask": io[f"mask{b}"].ptr,
             "hidden_states": self._port(text, "hidden_states", self.hidden[b],
                                         TEXT_TOKENS * TEXT_HIDDEN, False)}
            for b in range(self.branches)]
        for name, shape in (("x", (1, LATENT_CHANNELS, length)), ("t", (1,)),
                            ("t5_hidden", (1, TEXT_TOKENS, TEXT_HIDDEN)),
                            ("t5_mask", (1, TEXT_TOKENS)), ("seconds_total", (1,)),
                            ("local_add_cond", (1, LATENT_CHANNELS + 1, length))):
            self._shape(dit, name, shape)
        self.dit_in = {
            "x": self._port(dit, "x", self.x, n_lat, True),
            "seconds_total": io["seconds"].ptr,
            "local_add_cond": self._port(dit, "local_add_cond", self.local_cond,
                                         (LATENT_CHANNELS + 1) * length, True),
        }
        self.dit_branch = [
            {"t5_hidden": self._port(dit, "t5_hidden", self.hidden[b], TEXT_TOKENS * TEXT_HIDDEN,
                                     True),
             "t5_mask": io[f"maskf{b}"].ptr} for b in range(self.branches)]
        targets = [self.v_cond, self.v_uncond] if key.cfg else [self.v]
        self.dit_out = [self._port(dit, "velocity", t, n_lat, False) for t in targets]
        if enc is not None and key.mode != "t2a":
            self._shape(enc, "audio", (1, 2, samples))
            audio = self.init_audio["audio"]
            self.enc_addr = {"audio": self._port(enc, "audio", audio, 2 * samples, True),
                             "latent": self._port(enc, "latent", self.init_latents, n_lat,
                                                  False)}
        self._shape(dec, "latent", (1, LATENT_CHANNELS, length))
        if "limiter_ceiling" in dec.specs:
            self._shape(dec, "limiter_ceiling", tuple(
                d for d in dec.specs["limiter_ceiling"].shape if d != -1))
        self.dec_addr = {"latent": self._port(dec, "latent", self.x, n_lat, True)}
        if "limiter_ceiling" in dec.specs:
            self.dec_addr["limiter_ceiling"] = io["limiter"].ptr
        self.decoder_output = next((n for n in ("pcm", "pcm_unbounded", "audio")
                                    if n in dec.specs), None)
        if self.decoder_output is None:
            raise BackendError(f"The decoder '{dec.name}' has no pcm, pcm_unbounded or audio "
                               f"output; it is not an SA3 decoder.")
        shape = dec.output_shape(self.decoder_output)
        out_dtype = dec.specs[self.decoder_output].dtype
        if self.decoder_output != "audio" and out_dtype != "int32":
            raise BackendError(f"The decoder '{dec.name}' gives '{self.decoder_output}' as "
                               f"{out_dtype}, not int32; use a decoder built from the SA3 ONNX "
                               f"files.")
        if self.decoder_output == "audio":
            dtypes.host_type(dec.name, "audio", out_dtype, dtypes.FLOAT_TYPES)
            self.dec_raw = self._device(shape, dtypes.HOST_TYPES[out_dtype])
            self.dec_audio = self.dec_raw if out_dtype == "float32" else self._device(shape)
        else:
            self.dec_raw = self._device(shape, np.int32)
            self.dec_audio = None
        self.dec_addr[self.decoder_output] = self.dec_raw.ptr

    # ------------------------------------------------------------------ inputs
    def write_inputs(self, inputs: PipelineInputs) -> None:
        """Fill the pinned input block (cached numpy views; nothing is allocated here)."""
        io = self.inputs
        branches = [(inputs.ids, inputs.mask)]
        if self.key.cfg:
            if inputs.neg_ids is None:
                raise BackendError("CFG needs the negative prompt's tokens.")
            branches.append((inputs.neg_ids, inputs.neg_mask))
        types = self.types
        for b, (ids, mask) in enumerate(branches):
            io[f"ids{b}"].host[...] = ids
            io[f"mask{b}"].host[...] = mask
            dtypes.store(io[f"maskf{b}"].host, mask, types["maskf"])
        params = io["params"].host
        params[P_SECONDS] = inputs.seconds
        params[P_CFG] = inputs.cfg
        params[P_APG] = inputs.apg
        params[P_LIMITER] = inputs.limiter_ceiling
        params[P_SIGMA_MAX] = inputs.sigmas[0]
        dtypes.store(io["seconds"].host, inputs.seconds, types["seconds"])
        dtypes.store(io["limiter"].host, inputs.limiter_ceiling, types["limiter"])
        io["seed"].host[...] = inputs.seed
        sigmas = io["sigmas"].host
        if len(inputs.sigmas) != len(sigmas):
            raise BackendError("sigma schedule length does not match the graph's steps")
        sigmas[...] = inputs.sigmas
        for i, view in enumerate(self._step_t):  # each step's sigma, bound as that step's `t`
            dtypes.store(view, sigmas[i], types["t"])
        if self.key.mode == "inpaint":
            io["keep"].host[...] = inputs.keep
        if self.init_audio is not None and inputs.init_audio is not self._staged_init:
            # Variations reuse the same init audio object: staging it again would cost
            # milliseconds of copying per take for nothing. The copy is ordered on the stream
            # before the work (eager or replay) that reads it.
            block = self.init_audio
            block["audio"].host[0] = np.asarray(inputs.init_audio, np.float32).T
            call("cuMemcpyHtoDAsync", block.device.ptr, block.pinned.ptr, block.nbytes,
                 self.stream.handle)
            self._staged_init = inputs.init_audio

    # ------------------------------------------------------------------ the work
    def _enqueue(self, runner: ContextRunner, addresses: dict[str, int]) -> None:
        for name, address in addresses.items():
            runner.set_address(name, address)
        self._recording = runner.name
        if not runner.enqueue(self.stream.ptr):
            self.enqueue_failures.append(runner.name)

    def _mark(self, index: int, captured: bool) -> None:
        self._events[index].record(self.stream, external=captured)

    def record(self, captured: bool = False, sync_stages: bool = False) -> None:
        """Issue the complete generation on the stream (eager or under capture).

        `sync_stages` (eager only) waits for the GPU after every stage and step, the way a
        stage-by-stage runtime that hands control back to the host behaves.
        """
        key, k, s = self.key, self.kernels, self.stream
        c, length = LATENT_CHANNELS, key.latent_len
        n = c * length
        io, out = self.inputs, self.outputs

        def stage_done() -> None:
            if sync_stages and not captured:
                s.synchronize()

        self.enqueue_failures = []
        self._mark(0, captured)
        call("cuMemcpyHtoDAsync", io.device.ptr, io.pinned.ptr, io.nbytes, s.handle)
        # text
        text = self.runners.text
        for b, addresses in enumerate(self.text_addr):
            self._enqueue(text, addresses)
            self._cast_out(text, "hidden_states", self.hidden[b])
            stage_done()
        self._mark(1, captured)
        # init audio
        seed_ptr, sigmas, params = io["seed"].ptr, io["sigmas"].ptr, io["params"].ptr
        if key.mode != "t2a":
            enc = self.runners.encoder
            self._cast_in(enc, "audio", self.init_audio["audio"])
            self._enqueue(enc, self.enc_addr)
            self._cast_out(enc, "latent", self.init_latents)
            stage_done()
            self._mark(2, captured)  # text-to-audio has no encode stage: one node fewer
        # noise and start latent
        start = self.noise0.ptr if key.mode == "a2a" else self.x.ptr
        k.gaussian_two(s, start, n, self.loop_noise.ptr, (key.steps - 1) * n, seed_ptr)
        if key.mode == "a2a":
            k.init_mix(s, self.x.ptr, self.init_latents.ptr, self.noise0.ptr, params, n)
        keep = init = 0
        if key.mode == "inpaint":
            keep, init = io["keep"].ptr, self.init_latents.ptr
            k.local_cond(s, self.local_cond.ptr, keep, init, c, length)
        # the step loop: `t` is bound to this step's sigma slot, no copy node needed
        dit = self.runners.dit
        steps_out = out["steps"].ptr
        for i in range(key.steps):
            self._cast_in(dit, "x", self.x)
            self._cast_in(dit, "local_add_cond", self.local_cond)
            for b in range(self.branches):
                self._enqueue(dit, {**self.dit_in, **self.dit_branch[b], "t": io[f"t{i}"].ptr,
                                    "velocity": self.dit_out[b]})
                target = [self.v_cond, self.v_uncond][b] if key.cfg else self.v
                self._cast_out(dit, "velocity", target)
            if key.cfg:
                k.guidance(s, self.v.ptr, self.x.ptr, self.v_cond.ptr, self.v_uncond.ptr,
                           sigmas, i, params, self.sums.ptr, n)
            last = i == key.steps - 1
            noise = 0 if last else self.loop_noise.ptr + 4 * i * n
            k.pingpong(s, self.x.ptr, self.v.ptr, noise, sigmas, i, keep, init, length, n,
                       steps_out + 4 * i * n, out["flags"].ptr if last else 0)
            stage_done()
        self._mark(3, captured)
        # decode, narrow, paste-back, one copy of every output to pinned memory
        dec = self.runners.decoder
        self._cast_in(dec, "latent", self.x)
        self._enqueue(dec, self.dec_addr)
        frames = key.out_samples
        total = length * SAMPLES_PER_LATENT
        pcm = out["pcm"].ptr
        pcm32 = 0
        if self.decoder_output == "audio":
            if self.dec_audio is not self.dec_raw:
                k.cast(s, self.runners.decoder.specs["audio"].dtype, "float32",
                       self.dec_audio.ptr, self.dec_raw.ptr, 2 * total)
            k.float_to_pcm(s, pcm, self.dec_audio.ptr, total, frames)
        elif key.mode == "inpaint":
            pcm32 = self.dec_raw.ptr  # the paste-back kernel narrows as it goes
        else:
            k.narrow_pcm(s, pcm, self.dec_raw.ptr, 2 * frames)
        if key.mode == "inpaint":
            k.paste_original(s, pcm, pcm32, self.init_audio["audio"].ptr, total, frames,
                             io["keep"].ptr, length, SAMPLES_PER_LATENT, INPAINT_FADE)
        call("cuMemcpyDtoHAsync", out.pinned.ptr, out.device.ptr, out.nbytes, s.handle)
        self._mark(4, captured)

    # ------------------------------------------------------------------ running
    def run_eager(self, inputs: PipelineInputs, sync_stages: bool = False) -> PipelineOutputs:
        self.write_inputs(inputs)
        self.record(captured=False, sync_stages=sync_stages)
        self.stream.synchronize()
        if self.enqueue_failures:
            raise BackendError(f"The engine '{self.enqueue_failures[0]}' refused to run "
                               f"(execute_async_v3 returned False); see the log.")
        return self.collect()

    def capture(self) -> bool:
        """Capture the whole generation. False, with `capture_failure` saying why and no graph
        left behind, when an engine said False under capture or CUDA invalidated the capture
        (an engine made a call that capture forbids: every later call then fails with 901)."""
        graph = self.graph or CapturedGraph()
        self._recording = ""
        self.capture_failure = None
        try:
            graph.capture(self.stream, lambda: self.record(captured=True))
        except CaptureFailed as err:
            graph.destroy()
            self.graph = None
            after = f" after '{self._recording}' was enqueued" if self._recording else ""
            self.capture_failure = f"CUDA invalidated the capture with {err.name}{after}"
            log.warning("graph capture of %s failed: %s", self.key, err)
            return False
        except BaseException:
            graph.destroy()
            self.graph = None
            raise
        if self.enqueue_failures:
            graph.destroy()
            self.graph = None
            names = ", ".join(f"'{n}'" for n in sorted(set(self.enqueue_failures)))
            self.capture_failure = f"{names} returned False from execute_async_v3 under capture"
            return False
        graph.upload(self.stream)
        self.graph = graph
        return True

    def replay(self, inputs: PipelineInputs) -> PipelineOutputs:
        self.write_inputs(inputs)
        self.graph.launch(self.stream)
        self.stream.synchronize()
        return self.collect()

    def collect(self) -> PipelineOutputs:
        """Owned copies of the outputs (never views of pinned memory) and the stage timings."""
        ev = self._events
        if self.key.mode == "t2a":
            gpu_ms = {"text": ev[1].elapsed_ms(ev[0]), "encode": 0.0,
                      "sample": ev[3].elapsed_ms(ev[1]), "decode": ev[4].elapsed_ms(ev[3])}
        else:
            gpu_ms = {stage: ev[i + 1].elapsed_ms(ev[i]) for i, stage in enumerate(STAGES)}
        gpu_ms["total"] = ev[-1].elapsed_ms(ev[0])
        out = self.outputs
        return PipelineOutputs(pcm=out["pcm"].host.copy(), step_latents=out["steps"].host.copy(),
                               gpu_ms=gpu_ms, nonfinite=bool(out["flags"].host.any()))

    def gpu_ms(self) -> float:
        """GPU time of the last run (events), without copying any output."""
        return self._events[-1].elapsed_ms(self._events[0])

    def free(self) -> None:
        if self.graph is not None:
            self.graph.destroy()
            self.graph = None
        for buf in self._buffers:
            buf.free()
        for arena in self._arenas:
            arena.free()
        for event in self._events:
            event.free()
        for context in self.runners.all():  # after the graph that recorded their work
            context.close()
        self._buffers.clear()
        self._arenas.clear()
        self._events.clear()
