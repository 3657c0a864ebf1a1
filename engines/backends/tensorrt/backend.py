"""The TensorRT backend: SA3 engines driven torch-free with cuda-python, one graph replay per take.

Every CUDA and TensorRT object here is created and used on the thread that calls `generate`
(the GUI's one GPU worker thread).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from engines import sampling
from engines.adapters.bases import bases_beside
from engines.adapters.branch_map import load_branch_map
from engines.adapters.errors import ADAPTER_KEY, nonfinite_latents_error
from engines.backends.base import CancelFn, ProgressFn
from engines.backends.tensorrt import decode_only
from engines.backends.tensorrt.branch_dit import BranchDit
from engines.backends.tensorrt.codecs import (
    DEFAULT_CODECS,
    CodecCache,
    LoadCodec,
    LoadedCodec,
    codec_key,
    load_trt_codec,
)
from engines.backends.tensorrt.device_text_cache import DeviceTextCache
from engines.backends.tensorrt.engine import TrtEngine
from engines.backends.tensorrt.graph_cache import (
    DEFAULT_CAPACITY,
    GraphCache,
    NonFiniteOutput,
    run_generation,
)
from engines.backends.tensorrt.kernels import SamplerKernels
from engines.backends.tensorrt.pipeline import GenerationPipeline
from engines.backends.tensorrt.pipeline_data import GraphKey, PipelineInputs, Runners
from engines.backends.tensorrt.runners import EngineRunner
from engines.catalog import EngineFiles
from engines.constants import TEXT_TOKENS
from engines.cuda.api import ensure_context, mem_info
from engines.cuda.memory import DeviceBuffer
from engines.cuda.stream import Stream
from engines.errors import CancelledError, ModelUnavailableError, Remedy, join
from engines.generation_result import GenerationResult
from engines.lazy import lazy_import
from engines.paths import cache_dir
from engines.request import ValidatedRequest
from engines.tokenizer import PromptTokenizer

log = logging.getLogger(__name__)
pynvml = lazy_import("pynvml")  # nvidia-ml-py, optional

TOKEN_CACHE_SIZE = 64


def load_trt_runners(files: EngineFiles, gpu_sm: str | None) -> Runners:
    loaded: list[TrtEngine] = []

    def load(path):
        if path is None:
            return None
        engine = TrtEngine(path, gpu_sm=gpu_sm)
        loaded.append(engine)
        return engine

    try:
        return Runners(text=load(files.text_encoder), dit=load(files.dit),
                       decoder=load(files.decoder), encoder=load(files.encoder))
    except BaseException:
        for engine in loaded:  # a failed load must not keep the others' VRAM
            engine.close()
        raise


LoadBranch = Callable[[Path, str | None], EngineRunner]
"""load_branch(branch DiT path, gpu sm) -> the loaded branch engine (tests pass doubles)."""


def load_trt_branch(path: Path, gpu_sm: str | None) -> EngineRunner:
    return TrtEngine(path, gpu_sm=gpu_sm)


def resident_vram_bytes() -> int | None:
    """Device memory in use: cuMemGetInfo in the context every take runs in (microseconds),
    NVML only when that fails. Asked after every take: NVML's init and shutdown cost about
    10 ms a take on an H200, five times live audition's whole budget for re-render overhead."""
    try:
        free, total = mem_info()
        return total - free
    except Exception:  # noqa: BLE001 - no context on this thread: ask NVML
        pass
    try:
        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            return int(pynvml.nvmlDeviceGetMemoryInfo(handle).used)
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - NVML missing or refused
        return None


class TensorRTBackend:
    """One text encoder + DiT on the GPU, with the codec tiers asked for (see codecs.py): a tier
    change loads that tier's decoder beside the others and keys new graphs by it; the graphs
    already captured with another tier stay cached, and decode-only comparisons
    (`decode_latents`) run no graph at all."""

    name = "tensorrt"

    def __init__(self, files: EngineFiles, *, cache_size: int = DEFAULT_CAPACITY,
                 free_engines_after_use: bool = False, gpu_sm: str | None = None,
                 load_runners: Callable[[EngineFiles, str | None], Runners] = load_trt_runners,
                 load_codec: LoadCodec = load_trt_codec, codec_capacity: int = DEFAULT_CODECS,
                 kernel_cache_dir=None, load_branch: LoadBranch = load_trt_branch) -> None:
        self.files = files
        self.free_engines_after_use = free_engines_after_use
        self._gpu_sm = gpu_sm
        self._load_runners = load_runners
        self._load_codec = load_codec
        self._load_branch = load_branch
        self.branch: BranchDit | None = None  # loaded by the first take with adapters
        self._codec_capacity = codec_capacity
        self._cache_size = cache_size
        self.tokenizer = PromptTokenizer(files.tokenizer)
        if kernel_cache_dir is None:
            kernel_cache_dir = cache_dir() / "nvrtc"
        self._kernel_cache_dir = kernel_cache_dir
        self._ready = False
        self._token_cache: dict[str, object] = {}
        # This backend's one text encoder's outputs, by text, on the GPU (allocated when used).
        self.text_cache = DeviceTextCache()

    # ------------------------------------------------------------------ lifecycle
    def _activate(self) -> None:
        if self._ready:
            return
        ensure_context()
        self.stream = Stream()
        try:
            self.kernels = SamplerKernels(self._kernel_cache_dir)
        except BaseException:
            self.stream.free()
            raise
        try:
            self.runners = self._load_runners(self.files, self._gpu_sm)
        except BaseException:  # a refused engine leaves nothing allocated behind
            self.kernels.free()
            self.stream.free()
            raise
        need = max(r.scratch_bytes for r in self.runners.all())
        # Every context of every engine and graph key runs one after another on one stream,
        # so they all share one scratch allocation sized for the largest engine.
        self.scratch = DeviceBuffer(need) if need else None
        self.cache = GraphCache(self._cache_size)
        self.codecs = CodecCache(self._codec_capacity)
        self.codecs.adopt(codec_key(self.files),
                          LoadedCodec(self.runners.decoder, self.runners.encoder))
        self._ready = True

    def use_codec(self, files: EngineFiles) -> None:
        """Generate and decode with the codec tier of `files` from now on (its text encoder and
        DiT must be this backend's). Loads the tier's engines once; nothing is recaptured."""
        if not self._ready:
            self.files = files  # _activate loads this codec with the rest
            return
        key = codec_key(files)
        codec = self.codecs.get(key)
        if codec is None:
            codec = self._load_codec(files, self._gpu_sm)
            self.codecs.adopt(key, codec)
            for old_key, old in self.codecs.over_capacity():
                log.info("unloading codec %s", old_key)
                self.cache.drop(lambda k, gone=old_key: k.codec == gone)
                old.close()  # after the graphs (and their contexts) that used it
            self._fit_scratch(codec.scratch_bytes)
        self.runners = Runners(text=self.runners.text, dit=self.runners.dit,
                               decoder=codec.decoder, encoder=codec.encoder)
        self.files = files  # only now: a codec that failed to load leaves the old one in use

    def _fit_scratch(self, need: int) -> None:
        """Grow the shared scratch for a codec that needs more than any engine before it. Every
        cached graph is bound to the old address, so they all go (and are captured again on
        next use); codecs of one decoder need about the same, so this is rare."""
        have = self.scratch.capacity if self.scratch is not None else 0
        if need <= have:
            return
        log.info("growing the shared scratch from %d to %d bytes", have, need)
        self.cache.clear()
        for codec in self.codecs.all():
            codec.close_decode_context()  # bound to the old scratch too
        if self.scratch is not None:
            self.scratch.free()
        self.scratch = DeviceBuffer(need)

    def _branch_for(self, request: ValidatedRequest) -> BranchDit | None:
        """The branch DiT holding `request`'s adapters (loaded on first use), or None: a take
        without adapters runs the plain DiT, and the branch engine is never loaded for it."""
        if not request.adapters:
            return None
        if self.branch is None:
            files = self.files
            if files.branch_dit is None or files.branch_map is None:
                raise ModelUnavailableError(join(
                    f"Adapters need the branch engine beside '{files.dit.name}' in "
                    f"{files.dit.parent}, and it is not there; remove the adapters (",
                    Remedy.setting(ADAPTER_KEY), ")."))
            bmap = load_branch_map(files.branch_map)
            engine = self._load_branch(files.branch_dit, self._gpu_sm)
            try:
                self._fit_scratch(engine.scratch_bytes)
                self.branch = BranchDit(engine, bmap, self.stream, files.branch_map.name,
                                        self._kernel_cache_dir, bases_beside(files.branch_map))
            except BaseException:
                engine.close()
                raise
        return self.branch

    def _runners_for(self, key: GraphKey) -> Runners:
        if not key.adapter_rank:
            return self.runners
        return dataclasses.replace(self.runners, dit=self.branch.engine)

    def close(self) -> None:
        if not self._ready:
            return
        self.cache.clear()
        if self.branch is not None:  # after the graphs bound to its operands
            self.branch.close()
            self.branch = None
        self.runners.text.close()
        self.runners.dit.close()
        self.codecs.close_all()  # every loaded tier's decoder and encoder
        self.text_cache.free()
        if self.scratch is not None:
            self.scratch.free()
        self.kernels.free()
        self.stream.free()
        self._ready = False

    # ------------------------------------------------------------------ generation
    def _tokens(self, text: str):
        """Tokenized prompts are cached: variations and rerolls reuse the same prompt."""
        cached = self._token_cache.pop(text, None)
        if cached is None:
            cached = self.tokenizer.encode(text)
        self._token_cache[text] = cached
        while len(self._token_cache) > TOKEN_CACHE_SIZE:
            self._token_cache.pop(next(iter(self._token_cache)))
        return cached

    def inputs_for(self, req: ValidatedRequest, warnings: list[str]) -> PipelineInputs:
        cond = self._tokens(req.prompt)
        if cond.truncated:
            warnings.append(f"The prompt has {cond.token_count} tokens; only the first "
                            f"{TEXT_TOKENS} were used.")
        neg = self._tokens(req.negative_prompt) if req.use_cfg else None
        if neg is not None and neg.truncated:
            warnings.append(f"The negative prompt has {neg.token_count} tokens; only the first "
                            f"{TEXT_TOKENS} were used.")
        return PipelineInputs(
            ids=cond.input_ids, mask=cond.attention_mask, seed=req.seed,
            sigmas=sampling.schedule(req.steps, req.sigma_max, req.latent_len),
            seconds=req.seconds, limiter_ceiling=req.limiter_ceiling, cfg=req.cfg, apg=req.apg,
            neg_ids=None if neg is None else neg.input_ids,
            neg_mask=None if neg is None else neg.attention_mask,
            keep=req.keep_mask() if req.mode == "inpaint" else None,
            init_audio=req.init_audio if req.mode != "t2a" else None,
            texts=(req.prompt,) if neg is None else (req.prompt, req.negative_prompt))

    def key_for(self, req: ValidatedRequest) -> GraphKey:
        rank = self.branch.capture_rank if req.adapters and self.branch is not None else 0
        return GraphKey(latent_len=req.latent_len, steps=req.steps, mode=req.mode,
                        cfg=req.use_cfg, out_samples=req.out_samples,
                        codec=codec_key(self.files), adapter_rank=rank)

    def generate(self, request: ValidatedRequest, progress: ProgressFn | None = None,
                 cancel: CancelFn | None = None) -> GenerationResult:
        """One take as one CUDA graph replay (or one eager run of every stage): see the
        progress and cancel contract in engines.backends.base. Cancel is looked at before the
        engines load and again before the take is enqueued; once enqueued, the take runs to
        its end (a launched graph cannot be stopped part way)."""
        report = progress or (lambda stage, done, total: None)
        if cancel is not None and cancel():
            raise CancelledError()
        started = time.perf_counter()
        self._activate()
        if cancel is not None and cancel():  # loading can take a while: ask again
            if self.free_engines_after_use:
                self.close()
            raise CancelledError()
        warnings: list[str] = []
        branch = self._branch_for(request)
        if branch is not None:  # buffer writes only: the graph replays as captured
            warnings += branch.apply(request.adapters)
        inputs = self.inputs_for(request, warnings)
        key = self.key_for(request)
        report("sample", 0, request.steps)  # the one report before the graph runs
        scratch = None if self.scratch is None else (self.scratch.ptr, self.scratch.capacity)
        operands = branch.operands if branch is not None else None
        try:
            out, path = run_generation(
                self.cache, key, lambda k: GenerationPipeline(
                    k, self._runners_for(k), self.kernels, self.stream, scratch,
                    self.text_cache, operands), inputs)
        except NonFiniteOutput as err:
            if branch is None:
                raise
            raise nonfinite_latents_error() from err
        # Every stage ended inside the graph; their ends are told now, in stage order.
        report("text", 1, 1)
        if request.mode != "t2a":
            report("encode", 1, 1)
        report("sample", request.steps, request.steps)
        report("decode", 1, 1)
        wall = (time.perf_counter() - started) * 1e3
        timings = {stage: ms for stage, ms in out.gpu_ms.items() if stage != "total"}
        if request.mode == "t2a":
            timings.pop("encode", None)
        timings["total"] = wall
        result = GenerationResult(
            pcm=out.pcm, latents=np.array(out.latents), step_latents=out.step_latents,
            seed=request.seed, timings_ms=timings, backend=self.name, request=request,
            files=self.files, warnings=warnings + out.warnings,
            details={"path": path, "gpu_ms": out.gpu_ms, "vram_bytes": resident_vram_bytes(),
                     "graphs_cached": len(self.cache)})
        if self.free_engines_after_use:
            self.close()
        return result

    def decode_latents(self, latents: np.ndarray, request: ValidatedRequest,
                       files: EngineFiles) -> tuple[np.ndarray, float]:
        """A take's final latents decoded through the codec tier of `files`, eagerly, with no
        text encoder, DiT or graph involved: (int16 PCM, GPU decode ms)."""

        self.use_codec(files)
        self._activate()
        codec = self.codecs.get(codec_key(files))
        assert codec is not None
        if codec.decode_context is None:
            codec.decode_context = codec.decoder.create_context()
        scratch = None if self.scratch is None else (self.scratch.ptr, self.scratch.capacity)
        try:
            return decode_only.decode_latents(codec.decode_context, self.kernels, self.stream,
                                              scratch, latents, request)
        finally:
            if self.free_engines_after_use:
                self.close()
