"""Every buffer and engine binding of one graph key, and the pinned inputs a replay reads.

Allocated once when the key is first used and never moved: the addresses bound to the execution
contexts (and recorded into the captured graph) must stay valid for the graph's whole life. Where
an engine declares a type other than our float32 buffer, a cast buffer sits between (a "port"),
and the pipeline records the cast kernels around the engine's enqueue.
"""

from __future__ import annotations

import numpy as np

from engines.backends.tensorrt import dtypes
from engines.backends.tensorrt.branch_operands import BranchOperands
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
    span_bounds,
)
from engines.backends.tensorrt.pipeline_data import GraphKey, PipelineInputs, Runners
from engines.backends.tensorrt.runners import ContextRunner
from engines.constants import LATENT_CHANNELS, SAMPLES_PER_LATENT, TEXT_HIDDEN, TEXT_TOKENS
from engines.cuda.api import call
from engines.cuda.memory import Arena, DeviceBuffer, Region
from engines.cuda.stream import Stream
from engines.errors import BackendError


class GraphBuffers:
    """The device buffers, pinned input/output blocks and tensor addresses of one graph key,
    bound to that key's own execution contexts (`runners`)."""

    def __init__(self, key: GraphKey, runners: Runners, kernels: SamplerKernels,
                 stream: Stream, operands: BranchOperands | None = None) -> None:
        self.key = key
        self.runners = runners
        self.operands = operands  # the branch DiT's adapter inputs (shared, bound as they are)
        self.kernels = kernels
        self.stream = stream
        self._buffers: list[DeviceBuffer] = []
        self._arenas: list[Arena] = []
        try:
            self._allocate()
        except BaseException:
            self.free()
            raise

    def _device(self, shape, dtype=np.float32, zero: bool = False) -> DeviceBuffer:
        buf = DeviceBuffer(shape=tuple(shape), dtype=dtype)
        buf.reshape(tuple(shape))
        if zero:
            call("cuMemsetD8Async", buf.ptr, 0, buf.nbytes, self.stream.handle)
        self._buffers.append(buf)
        return buf

    def spec_dtype(self, runner: ContextRunner, name: str) -> str:
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
            layout += [("keep", (length,), np.float32), ("bounds", (length, 2), np.int32)]
        self.inputs = Arena(layout, mirrored=True)
        self._step_t = [self.inputs[f"t{i}"].host for i in range(key.steps)]
        # The init audio (up to 128 MB) has its own block, copied when it changes rather than
        # by every replay: variations of one init audio replay without moving it again.
        self.init_audio = (Arena([("audio", (1, 2, samples), np.float32)], mirrored=True)
                           if key.mode != "t2a" else None)
        # Step latents first: each step's go to the host as soon as it is made (beside the
        # later steps); the PCM and the flags after them, in one copy at the end.
        self.outputs = Arena([("steps", (key.steps, c, length), np.float32),
                              ("pcm", (key.out_samples, 2), np.int16),
                              ("flags", (grid_for(n_lat),), np.uint32)], mirrored=True)
        self._arenas += [a for a in (self.inputs, self.init_audio, self.outputs) if a]
        self.hidden = [self._device((1, TEXT_TOKENS, TEXT_HIDDEN)) for _ in range(self.branches)]
        self.sums = self._device((REDUCE_BLOCKS * 2,), np.float64)
        self.x = self._device((1, c, length))
        # With CFG the guided velocity lives in registers only (kernels: guided_pingpong).
        self.v = self._device((1, c, length)) if not key.cfg else None
        self.v_uncond = self._device((1, c, length)) if key.cfg else None
        self.v_cond = self._device((1, c, length)) if key.cfg else None
        self.loop_noise = self._device((max(key.steps - 1, 1), c, length))
        self.noise0 = self._device((c, length)) if key.mode == "a2a" else None
        self.local_cond = self._device((1, c + 1, length), zero=True)
        self.init_latents = self._device((1, c, length)) if key.mode != "t2a" else None
        self._ports = {}
        self._staged_init = None
        self._bind_engines(n_lat, samples)
        self.stream.synchronize()  # the zeroed buffers are ready before any work

    def _bound_type(self, runner: ContextRunner, name: str, allowed: tuple[str, ...]) -> str:
        dtype = self.spec_dtype(runner, name)
        dtypes.host_type(runner.name, name, dtype, allowed)  # refuses what we cannot feed
        return dtype

    def _port(self, runner: ContextRunner, name: str, canonical: DeviceBuffer, n: int,
              is_input: bool) -> int:
        """Address to bind for `name`; a cast buffer sits between when the engine's dtype
        differs from our fp32 buffer."""
        dtype = self.spec_dtype(runner, name)
        if dtype == "float32" or canonical.dtype != np.float32:
            return canonical.ptr
        dtypes.host_type(runner.name, name, dtype, dtypes.FLOAT_TYPES)
        staged = self._device((n,), dtypes.HOST_TYPES[dtype])
        self._ports[(runner.name, name, canonical.ptr)] = (dtype, staged, canonical, n, is_input)
        return staged.ptr

    def cast_in(self, runner: ContextRunner, name: str, canonical: DeviceBuffer) -> None:
        entry = self._ports.get((runner.name, name, canonical.ptr))
        if entry:
            dtype, staged, src, n, _ = entry
            self.kernels.cast(self.stream, "float32", dtype, staged.ptr, src.ptr, n)

    def cast_out(self, runner: ContextRunner, name: str, canonical: DeviceBuffer) -> None:
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
        if key.adapter_rank:
            self._bind_operands(dit)
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

    def _bind_operands(self, dit: ContextRunner) -> None:
        """The branch DiT's adapter operands: device buffers the backend owns and writes between
        takes, bound here at the captured rank (each graph reads them where they are)."""
        if self.operands is None or self.operands.rank != self.key.adapter_rank:
            raise BackendError("The branch DiT has no adapter operands at the graph's rank.")
        for name, shape in self.operands.shapes().items():
            self._shape(dit, name, shape)
        self.dit_in.update(self.operands.addresses())

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
            io["bounds"].host[...] = span_bounds(inputs.keep)
        if self.init_audio is not None and inputs.init_audio is not self._staged_init:
            # Variations reuse the same init audio object: staging it again would cost
            # milliseconds of copying per take for nothing. The copy is ordered on the stream
            # before the work (eager or replay) that reads it.
            block = self.init_audio
            block["audio"].host[0] = np.asarray(inputs.init_audio, np.float32).T
            call("cuMemcpyHtoDAsync", block.device.ptr, block.pinned.ptr, block.nbytes,
                 self.stream.handle)
            self._staged_init = inputs.init_audio

    def text_input_span(self, branch: int) -> tuple[int, int, int]:
        """(device address, pinned address, bytes) of one branch's token ids and mask, which
        lie side by side in the input block: what that branch's text graph copies for itself."""
        first, last = self.inputs[f"ids{branch}"], self.inputs[f"mask{branch}"]
        offset = first.ptr - self.inputs.device.ptr
        return first.ptr, self.inputs.pinned.ptr + offset, last.ptr + last.nbytes - first.ptr

    def pinned_address(self, region: Region) -> int:
        """The pinned host address that mirrors `region` of the output block."""
        return self.outputs.pinned.ptr + (region.ptr - self.outputs.device.ptr)

    def free(self) -> None:
        for buf in self._buffers:
            buf.free()
        for arena in self._arenas:
            arena.free()
        self._buffers.clear()
        self._arenas.clear()
