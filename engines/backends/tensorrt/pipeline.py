"""One generation as captured CUDA graphs: one per text (prompt, negative prompt) for the text
encoder, and one for everything after it: init-audio encode, the whole step loop with both CFG
passes, decode, clamp/narrow, paste-back and the copies into pinned host memory.

`GenerationPipeline` owns the buffers of one graph key (pipeline_buffers.py), its execution
contexts and its captured graphs. `record_text()` and `record_body()` issue the work on the
stream; they run eagerly (warm-up, fallback) or under stream capture, so replay and eager
execution launch exactly the same kernels and give the same bits. Before a replay only
host->device inputs change: token ids and masks, the scalar block (seed, seconds, cfg, apg,
limiter ceiling, sigmas), the keep mask and its span bounds, and the init audio.

The text encoder is a graph of its own so that a take whose texts did not change, or are in the
backend's text cache, skips it: its hidden states are already in the buffer, or are copied there
from the cache, and only the body graph replays (nothing is captured again).
"""

from __future__ import annotations

import logging

from engines.backends.tensorrt.branch_operands import BranchOperands
from engines.backends.tensorrt.device_text_cache import DeviceTextCache
from engines.backends.tensorrt.kernels import SamplerKernels
from engines.backends.tensorrt.pipeline_buffers import GraphBuffers
from engines.backends.tensorrt.pipeline_data import (
    GraphKey,
    PipelineInputs,
    PipelineOutputs,
    Runners,
)
from engines.backends.tensorrt.runners import ContextRunner
from engines.backends.tensorrt.step_copies import StepCopies
from engines.backends.tensorrt.text_stage import TextStage
from engines.constants import LATENT_CHANNELS, SAMPLES_PER_LATENT
from engines.cuda.api import call
from engines.cuda.graph import CapturedGraph, CaptureFailed
from engines.cuda.stream import Event, Stream
from engines.errors import BackendError

log = logging.getLogger(__name__)

MAX_STEPS = 50
INPAINT_FADE = 1024
STAGES = ("text", "encode", "sample", "decode")


class GenerationPipeline:
    """Every buffer, execution context and captured graph of one graph key."""

    def __init__(self, key: GraphKey, engines: Runners, kernels: SamplerKernels,
                 stream: Stream, scratch: tuple[int, int] | None = None,
                 text_cache: DeviceTextCache | None = None,
                 operands: BranchOperands | None = None) -> None:
        if key.steps > MAX_STEPS:
            raise BackendError(f"{key.steps} steps exceed this runtime's {MAX_STEPS}; use fewer.")
        if key.mode != "t2a" and engines.encoder is None:
            raise BackendError("Audio-to-audio and inpainting need the encoder engine; install "
                               "it for this decoder.")
        self.key = key
        self.kernels = kernels
        self.stream = stream
        self.graph: CapturedGraph | None = None  # the body: everything after the text encoder
        self.text_graphs: list[CapturedGraph] = []  # one per text branch
        self.eager_only_reason: str | None = None
        self.eager_notice_given = False
        self.enqueue_failures: list[str] = []
        self.capture_failure: str | None = None
        self._recording: str = ""
        self.buffers: GraphBuffers | None = None
        self._events: list[Event] = []
        self.step_copies: StepCopies | None = None
        self.runners = engines.new_contexts()
        try:
            for context in self.runners.all():
                if scratch is not None:
                    context.bind_scratch(*scratch)
            self._events = [Event() for _ in range(len(STAGES) + 1)]
            self.step_copies = StepCopies(key.steps)  # step latents out beside later steps
            self.buffers = GraphBuffers(key, self.runners, kernels, stream, operands)
            self.text = TextStage(self.buffers.branches, text_cache)
        except BaseException:
            self.free()
            raise

    # ------------------------------------------------------------------ the work
    def _enqueue(self, runner: ContextRunner, addresses: dict[str, int]) -> None:
        for name, address in addresses.items():
            runner.set_address(name, address)
        self._recording = runner.name
        if not runner.enqueue(self.stream.ptr):
            self.enqueue_failures.append(runner.name)

    def _mark(self, index: int, captured: bool) -> None:
        self._events[index].record(self.stream, external=captured)

    def record_text(self, branch: int, captured: bool = False) -> None:
        """One text through the text encoder into its branch's hidden buffer, with its own copy
        of the branch's token ids and mask (the text graph runs before the body's input copy)."""
        buf, s = self.buffers, self.stream
        device, pinned, nbytes = buf.text_input_span(branch)
        call("cuMemcpyHtoDAsync", device, pinned, nbytes, s.handle)
        text = self.runners.text
        self._enqueue(text, buf.text_addr[branch])
        buf.cast_out(text, "hidden_states", buf.hidden[branch])

    def record_body(self, captured: bool = False, sync_stages: bool = False) -> None:
        """Everything after the text encoder, on the stream (eager or under capture).

        `sync_stages` (eager only) waits for the GPU after every stage and step, the way a
        stage-by-stage runtime that hands control back to the host behaves.
        """
        key, k, s, buf = self.key, self.kernels, self.stream, self.buffers
        c, length = LATENT_CHANNELS, key.latent_len
        n = c * length
        io, out = buf.inputs, buf.outputs

        def stage_done() -> None:
            if sync_stages and not captured:
                s.synchronize()

        self._mark(1, captured)  # the text stage ended: the body's own clock starts here
        call("cuMemcpyHtoDAsync", io.device.ptr, io.pinned.ptr, io.nbytes, s.handle)
        # init audio
        seed_ptr, sigmas, params = io["seed"].ptr, io["sigmas"].ptr, io["params"].ptr
        if key.mode != "t2a":
            enc = self.runners.encoder
            buf.cast_in(enc, "audio", buf.init_audio["audio"])
            self._enqueue(enc, buf.enc_addr)
            buf.cast_out(enc, "latent", buf.init_latents)
            stage_done()
            self._mark(2, captured)  # text-to-audio has no encode stage: one node fewer
        # noise and start latent
        start = buf.noise0.ptr if key.mode == "a2a" else buf.x.ptr
        k.gaussian_two(s, start, n, buf.loop_noise.ptr, (key.steps - 1) * n, seed_ptr)
        if key.mode == "a2a":
            k.init_mix(s, buf.x.ptr, buf.init_latents.ptr, buf.noise0.ptr, params, n)
        keep = init = 0
        if key.mode == "inpaint":
            keep, init = io["keep"].ptr, buf.init_latents.ptr
            k.local_cond(s, buf.local_cond.ptr, keep, init, c, length)
        # the step loop: `t` is bound to this step's sigma slot, no copy node needed
        dit = self.runners.dit
        for b in range(buf.branches):  # only for a DiT that declares t5_hidden narrower
            buf.cast_in(dit, "t5_hidden", buf.hidden[b])
        for i in range(key.steps):
            buf.cast_in(dit, "x", buf.x)
            buf.cast_in(dit, "local_add_cond", buf.local_cond)
            for b in range(buf.branches):
                self._enqueue(dit, {**buf.dit_in, **buf.dit_branch[b], "t": io[f"t{i}"].ptr,
                                    "velocity": buf.dit_out[b]})
                target = [buf.v_cond, buf.v_uncond][b] if key.cfg else buf.v
                buf.cast_out(dit, "velocity", target)
            last = i == key.steps - 1
            noise = 0 if last else buf.loop_noise.ptr + 4 * i * n
            flags = out["flags"].ptr if last else 0
            step_out = out["steps"].ptr + 4 * i * n
            if key.cfg:
                k.guided_pingpong(s, buf.x.ptr, buf.v_cond.ptr, buf.v_uncond.ptr, buf.sums.ptr,
                                  noise, sigmas, i, params, keep, init, length, n, step_out,
                                  flags)
            else:
                k.pingpong(s, buf.x.ptr, buf.v.ptr, noise, sigmas, i, keep, init, length, n,
                           step_out, flags)
            self.step_copies.send(s, i, buf.pinned_address(out["steps"]) + 4 * i * n, step_out,
                                  4 * n)
            stage_done()
        self._mark(3, captured)
        # decode, narrow, paste-back, one copy of every output to pinned memory
        dec = self.runners.decoder
        buf.cast_in(dec, "latent", buf.x)
        self._enqueue(dec, buf.dec_addr)
        frames = key.out_samples
        total = length * SAMPLES_PER_LATENT
        pcm = out["pcm"].ptr
        pcm32 = 0
        if buf.decoder_output == "audio":
            if buf.dec_audio is not buf.dec_raw:
                k.cast(s, self.runners.decoder.specs["audio"].dtype, "float32",
                       buf.dec_audio.ptr, buf.dec_raw.ptr, 2 * total)
            k.float_to_pcm(s, pcm, buf.dec_audio.ptr, total, frames)
        elif key.mode == "inpaint":
            pcm32 = buf.dec_raw.ptr  # the paste-back kernel narrows as it goes
        else:
            k.narrow_pcm(s, pcm, buf.dec_raw.ptr, 2 * frames)
        if key.mode == "inpaint":
            k.paste_original(s, pcm, pcm32, buf.init_audio["audio"].ptr, total, frames,
                             io["keep"].ptr, io["bounds"].ptr, SAMPLES_PER_LATENT, INPAINT_FADE)
        # The PCM and the flags (the end of the output block) in one copy, then the copy
        # stream joins back: the take ends when its last step latents are on the host too.
        tail = out["pcm"].ptr
        call("cuMemcpyDtoHAsync", buf.pinned_address(out["pcm"]), tail,
             out.device.ptr + out.nbytes - tail, s.handle)
        self.step_copies.join(s)
        self._mark(4, captured)

    # ------------------------------------------------------------------ runs
    def enqueue(self, inputs: PipelineInputs, eager: bool = False, sync_stages: bool = False,
                fresh_text: bool = False) -> None:
        """Issue one generation on the stream without waiting for it: the text stage (skipped
        or copied from the text cache when it can be, `fresh_text` never), then the body,
        replayed or (`eager`) recorded."""
        self.buffers.write_inputs(inputs)
        self.enqueue_failures = []
        self._events[0].record(self.stream)
        try:
            self.text.prepare(inputs.texts, self.buffers.hidden, self.stream,
                              lambda b: self._encode_text(b, eager, sync_stages), fresh_text)
            if eager:
                self.record_body(captured=False, sync_stages=sync_stages)
            else:
                self.graph.launch(self.stream)
        except BaseException:
            self.text.forget()  # what ran is unknown now
            raise

    def _encode_text(self, branch: int, eager: bool, sync_stages: bool) -> bool:
        """Run the text encoder for one branch; False when its engine refused to run."""
        refused = len(self.enqueue_failures)
        if eager:
            self.record_text(branch)
            if sync_stages:
                self.stream.synchronize()
        else:
            self.text_graphs[branch].launch(self.stream)
        return len(self.enqueue_failures) == refused

    def run_eager(self, inputs: PipelineInputs, sync_stages: bool = False) -> PipelineOutputs:
        self.enqueue(inputs, eager=True, sync_stages=sync_stages)
        self.stream.synchronize()
        if self.enqueue_failures:
            raise BackendError(f"The engine '{self.enqueue_failures[0]}' refused to run "
                               f"(execute_async_v3 returned False); see the log.")
        return self.collect()

    def capture(self) -> bool:
        """Capture the text graphs and the body graph. False, with `capture_failure` saying why
        and no graph left behind, when an engine said False under capture or CUDA invalidated
        the capture (an engine made a call that capture forbids: every later call then fails
        with 901)."""
        self.drop_graphs()
        self._recording = ""
        self.capture_failure = None
        self.enqueue_failures = []
        graphs = [CapturedGraph() for _ in range(self.buffers.branches + 1)]
        records = [lambda b=b: self.record_text(b, captured=True)
                   for b in range(self.buffers.branches)]
        records.append(lambda: self.record_body(captured=True))
        try:
            for graph, record in zip(graphs, records, strict=True):
                graph.capture(self.stream, record)
        except CaptureFailed as err:
            for graph in graphs:
                graph.destroy()
            after = f" after '{self._recording}' was enqueued" if self._recording else ""
            self.capture_failure = f"CUDA invalidated the capture with {err.name}{after}"
            log.warning("graph capture of %s failed: %s", self.key, err)
            return False
        except BaseException:
            for graph in graphs:
                graph.destroy()
            raise
        if self.enqueue_failures:
            for graph in graphs:
                graph.destroy()
            names = ", ".join(f"'{n}'" for n in sorted(set(self.enqueue_failures)))
            self.capture_failure = f"{names} returned False from execute_async_v3 under capture"
            return False
        for graph in graphs:
            graph.upload(self.stream)
        self.text_graphs, self.graph = graphs[:-1], graphs[-1]
        return True

    def drop_graphs(self) -> None:
        """Destroy the captured graphs (the key then runs eagerly, or is captured again)."""
        for graph in [*self.text_graphs, self.graph]:
            if graph is not None:
                graph.destroy()
        self.text_graphs, self.graph = [], None

    def replay(self, inputs: PipelineInputs, fresh_text: bool = False) -> PipelineOutputs:
        self.enqueue(inputs, fresh_text=fresh_text)
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
        out = self.buffers.outputs
        return PipelineOutputs(pcm=out["pcm"].host.copy(), step_latents=out["steps"].host.copy(),
                               gpu_ms=gpu_ms, nonfinite=bool(out["flags"].host.any()))

    def gpu_ms(self) -> float:
        """GPU time of the last run (events), without copying any output."""
        return self._events[-1].elapsed_ms(self._events[0])

    def body_gpu_ms(self) -> float:
        """GPU time of the last run's body: everything after the text encoder."""
        return self._events[-1].elapsed_ms(self._events[1])

    def free(self) -> None:
        self.drop_graphs()
        if self.buffers is not None:
            self.buffers.free()
        for event in self._events:
            event.free()
        if self.step_copies is not None:
            self.step_copies.free()
        for context in self.runners.all():  # after the graph that recorded their work
            context.close()
        self._events.clear()
