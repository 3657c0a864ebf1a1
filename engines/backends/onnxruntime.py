"""ONNX Runtime backend: runs any engine set given as ONNX files with the SA3 I/O contract.

The embedded demo runs here on CPU; so do published SA3 ONNX graphs whose operators ONNX Runtime
has (the catalog refuses the rest before anything loads). Input dtypes are read from each graph,
never assumed, and every decoder output flavour (`pcm`, `pcm_unbounded`, `audio`) is handled.

A take with adapters runs the set's branch DiT (the same graph with a low-rank branch on its
adaptable linears, the adapters' operands as inputs; engines.adapters); a take without runs the
plain DiT, so no adapter costs nothing. The branch DiT loads on the first take that needs it.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import numpy as np

from engines.adapters.bases import bases_beside
from engines.adapters.branch_files import branch_files
from engines.adapters.branch_map import load_branch_map
from engines.adapters.errors import ADAPTER_KEY
from engines.adapters.stack_cache import StackCache
from engines.audio_io import pcm16_from_float, pcm16_from_int32
from engines.backends.base import CancelFn, ProgressFn
from engines.backends.eager_pipeline import decode_take, run_pipeline
from engines.backends.text_cache import TextEncodingCache
from engines.catalog import EngineFiles
from engines.errors import BackendError, ModelUnavailableError, Remedy, join
from engines.generation_result import GenerationResult
from engines.lazy import lazy_import
from engines.request import ValidatedRequest
from engines.tokenizer import PromptTokenizer

log = logging.getLogger(__name__)
ort = lazy_import("onnxruntime")

_NUMPY_TYPES = {
    "tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bfloat16)": np.float32,
}
DECODER_OUTPUTS = ("pcm", "pcm_unbounded", "audio")


def _model_source(path: Path) -> str | bytes:
    """What ONNX Runtime opens: the path, or the file's bytes when the path holds bytes that
    are not UTF-8 (ORT only takes UTF-8 path strings; a self-contained graph loads the same
    from memory)."""
    text = str(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return Path(path).read_bytes()
    return text


class _Session:
    """One ONNX graph; casts named inputs to the dtypes the graph declares."""

    def __init__(self, path: Path, options, role: str) -> None:
        try:
            self.session = ort.InferenceSession(_model_source(path), options,
                                                providers=["CPUExecutionProvider"])
        except Exception as exc:  # ORT raises its own exception types with long texts
            log.exception("loading %s failed", path)
            raise ModelUnavailableError(
                f"ONNX Runtime could not load the {role} '{path.name}' ({str(exc)[:160]}); "
                f"check the file or download it again.") from exc
        self.path = path
        self.inputs = {i.name: _NUMPY_TYPES.get(i.type, np.float32)
                       for i in self.session.get_inputs()}
        self.outputs = [o.name for o in self.session.get_outputs()]

    def run(self, feeds: dict[str, np.ndarray], outputs: list[str] | None = None):
        typed = {name: np.asarray(value, dtype=self.inputs[name])
                 for name, value in feeds.items() if name in self.inputs}
        missing = set(self.inputs) - set(typed)
        if missing:
            raise BackendError(f"The engine '{self.path.name}' needs inputs "
                               f"{sorted(missing)} that the SA3 contract does not define; it is "
                               f"not an SA3 engine.")
        try:
            return self.session.run(outputs, typed)
        except Exception as exc:
            log.exception("running %s failed", self.path)
            raise BackendError(f"The engine '{self.path.name}' failed while running "
                               f"({str(exc)[:160]}); see the log for details.") from exc


class _Codec:
    """The decoder (and, loaded on first use, the encoder) of one codec tier."""

    def __init__(self, files: EngineFiles, options) -> None:
        self.files = files
        self.decoder = _Session(files.decoder, options, "decoder")
        self.encoder: _Session | None = None
        flavours = [name for name in DECODER_OUTPUTS if name in self.decoder.outputs]
        if not flavours:
            raise ModelUnavailableError(
                f"The decoder '{files.decoder.name}' has none of the outputs "
                f"{', '.join(DECODER_OUTPUTS)}; it is not an SA3 decoder.")
        self.decoder_output = flavours[0]


class OnnxRuntimeBackend:
    """Loads the engines once and generates any number of takes with them.

    The text encoder and DiT belong to the backend; codecs (one per codec tier) are loaded as
    `use_codec` asks for them and kept, so switching tiers back and forth, or decoding a take's
    latents through another tier (`decode_latents`), never reloads the DiT.
    """

    name = "onnxruntime"

    def __init__(self, files: EngineFiles, threads: int | None = None) -> None:
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = threads or min(os.cpu_count() or 1, 8)
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._options = options
        self.tokenizer = PromptTokenizer(files.tokenizer)
        # This backend's one text encoder: its encodings stay valid for the backend's life.
        self.text_cache = TextEncodingCache()
        self._text = _Session(files.text_encoder, options, "text encoder")
        self._dit = _Session(files.dit, options, "DiT")
        self._plain_dit = self._dit
        self._branch: tuple[_Session, StackCache] | None = None
        self._dit_feeds: dict[str, np.ndarray] = {}  # the adapters' operands, while a take runs
        self._codecs: dict[tuple[Path, Path | None], _Codec] = {}
        self.use_codec(files)

    def use_codec(self, files: EngineFiles) -> None:
        """Decode (and encode) with the codec tier of `files` from now on."""
        key = (files.decoder, files.encoder)
        codec = self._codecs.get(key)
        if codec is None:
            codec = _Codec(files, self._options)
            self._codecs[key] = codec
        self._codec = codec
        self.files = files

    @property
    def decoder_output(self) -> str:
        return self._codec.decoder_output

    # EngineStages -------------------------------------------------------------------------
    def encode_text(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        feeds = {"input_ids": input_ids, "attention_mask": attention_mask}
        return np.asarray(self._text.run(feeds, ["hidden_states"])[0], dtype=np.float32)

    def dit(self, x, t, hidden, mask, seconds, local_cond) -> np.ndarray:
        feeds = {"x": x, "t": t, "t5_hidden": hidden, "t5_mask": mask,
                 "seconds_total": seconds, "local_add_cond": local_cond, **self._dit_feeds}
        return np.asarray(self._dit.run(feeds, ["velocity"])[0], dtype=np.float32)

    def encode_audio(self, audio: np.ndarray) -> np.ndarray:
        codec = self._codec
        if codec.encoder is None:
            if codec.files.encoder is None:
                raise ModelUnavailableError("This decoder set has no encoder, so audio-to-audio "
                                            "and inpainting are unavailable; install its encoder.")
            codec.encoder = _Session(codec.files.encoder, self._options, "encoder")
        return np.asarray(codec.encoder.run({"audio": audio}, ["latent"])[0], dtype=np.float32)

    def decode(self, latent: np.ndarray, limiter_ceiling: float) -> np.ndarray:
        feeds = {"latent": latent, "limiter_ceiling": np.array(limiter_ceiling, np.float32)}
        out = self._codec.decoder.run(feeds, [self.decoder_output])[0]
        if self.decoder_output == "audio":  # legacy float (1, 2, N) in [-1, 1]
            audio = np.asarray(out[0], dtype=np.float32).T
            if not np.all(np.isfinite(audio)):
                raise BackendError("The decoder produced invalid values (NaN or Inf); no audio "
                                   "was written.")
            return pcm16_from_float(audio)
        return pcm16_from_int32(np.asarray(out[0]))

    # Backend --------------------------------------------------------------------------------
    def generate(self, request: ValidatedRequest, progress: ProgressFn | None = None,
                 cancel: CancelFn | None = None) -> GenerationResult:
        """Stage by stage through run_pipeline: progress after every sampler step, cancel
        after every step and between stages (engines.backends.base says exactly where)."""
        adapter_warnings = self._bind_adapters(request)
        try:
            out = run_pipeline(self, self.tokenizer, request, progress, cancel, self.text_cache)
        finally:
            self._dit, self._dit_feeds = self._plain_dit, {}
        return GenerationResult(pcm=out.pcm, latents=out.latents, step_latents=out.step_latents,
                                seed=request.seed, timings_ms=out.timings_ms, backend=self.name,
                                request=request, files=self.files,
                                warnings=[*adapter_warnings, *out.warnings])

    def _bind_adapters(self, request: ValidatedRequest) -> list[str]:
        """Point `dit` at the branch DiT with the request's adapters bound (their operands fed
        with every step), or leave the plain DiT for a take without adapters. Returns the
        stack's warnings. AdapterError when the stack is refused."""
        choices = tuple(request.adapters)
        if not choices:
            return []
        session, stacks = self._branch or self._load_branch()
        stack = stacks.stack_for(choices)
        self._dit, self._dit_feeds = session, stack.operands()
        return list(stack.warnings)

    def _load_branch(self) -> tuple[_Session, StackCache]:
        files = self.files
        dit, branch_map = getattr(files, "branch_dit", None), getattr(files, "branch_map", None)
        if dit is None or branch_map is None:
            found = branch_files(files.dit)
            if found is None:
                raise ModelUnavailableError(join(
                    f"This model set has no branch DiT beside '{files.dit.name}', so it cannot "
                    f"apply adapters; remove the adapters (", Remedy.setting(ADAPTER_KEY),
                    ") or install the set's branch DiT."))
            dit, branch_map = found.dit, found.map
        loaded = load_branch_map(branch_map)
        self._branch = (_Session(dit, self._options, "branch DiT"),
                        StackCache(loaded, bases_beside(branch_map)))
        return self._branch

    def decode_latents(self, latents: np.ndarray, request: ValidatedRequest,
                       files: EngineFiles) -> tuple[np.ndarray, float]:
        """A take's final latents (256, L) decoded through the codec tier of `files`, exactly
        as the take's own decode step ran: (int16 PCM, decode ms)."""
        self.use_codec(files)
        started = time.perf_counter()
        pcm = decode_take(self, latents, request)
        return pcm, (time.perf_counter() - started) * 1e3

    def close(self) -> None:
        self._text = self._dit = self._plain_dit = None  # type: ignore[assignment]
        self._branch = None
        self._codecs.clear()
        self.text_cache.clear()
