"""What can be generated here: model sets, decoders, precisions and the engine files on disk.

The catalog only looks (stat, and a graph-only ONNX read); it never writes. The one exception
is `Catalog.prepare`, which asks `engines.demo` to build the procedural demo on first use.

Its parts live in their own modules and are re-exported here, so callers import from this one:
  engines.catalog.tables   what exists, and the file names each is stored under
  engines.catalog.names    checks of the names a request names
  engines.catalog.search   where one choice's files are on disk, for TensorRT or ONNX Runtime
  engines.onnx_ops         which operators of an ONNX graph ONNX Runtime lacks
Beside them, imported by name (not re-exported):
  engines.catalog.tiers        each codec tier and precision in words, and the default rule
  engines.catalog.tier_choice  which tiers and precisions are installed and runnable here
  engines.catalog.tensorrt_version  which TensorRT SA3 Studio drives, and which an engine file needs
"""

from __future__ import annotations

import dataclasses
import enum
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from engines import demo  # demo.ensure_demo_models read at call time: tests replace it there
from engines.catalog.branch import adapters_status, onnx_branch_refusal
from engines.catalog.names import (
    get_model_set,
    normalize_backend,
    normalize_decoder,
    normalize_precision,
    normalize_tier,
    paired_decoder,
)
from engines.catalog.search import (
    Choice,
    EngineFiles,
    EngineSearch,
    Unavailable,
    demo_files,
)
from engines.catalog.tables import (
    BACKEND_LABELS,
    BACKENDS,
    CODEC_FILES,
    DECODERS,
    DEMO_BUILT_NOTE,
    DEMO_DECODER,
    DEMO_DECODERS,
    DEMO_DIT,
    DEMO_ENCODER,
    DEMO_SUBDIR,
    DEMO_TEXT_ENCODER,
    DIT_STEMS,
    JIT_CODEC_FILES,
    JIT_PLUGIN_MARKER,
    MAX_SECONDS,
    MODEL_SETS,
    ONNX_DIR,
    ONNX_TEXT_ENCODER_STEMS,
    PRECISIONS,
    TEXT_ENCODER_STEMS,
    TEXT_ENCODER_SUBDIR,
    TIER_NAMES,
    TIERS,
    TOKENIZER_NAME,
    CodecTier,
    DecoderInfo,
    ModelSet,
    aot_codec_remedy,
    codec_tiers,
    download_remedy,
)
from engines.catalog.tensorrt_version import install_command, unsupported_reason
from engines.errors import Advice, ModelUnavailableError, StudioError, join
from engines.gpu import GpuInfo, probe_gpu
from engines.gpu import tensorrt_version as installed_tensorrt_version
from engines.onnx_ops import ORT_DOMAINS, foreign_onnx_ops

__all__ = [
    # the catalog and its answers
    "PROBE", "Availability", "Catalog", "EngineFiles",
    # what exists (engines.catalog.tables)
    "BACKENDS", "BACKEND_LABELS", "CODEC_FILES", "DECODERS", "DEMO_BUILT_NOTE", "DEMO_DECODER",
    "DEMO_DECODERS", "DEMO_DIT", "DEMO_ENCODER", "DEMO_SUBDIR", "DEMO_TEXT_ENCODER", "DIT_STEMS",
    "JIT_CODEC_FILES", "JIT_PLUGIN_MARKER", "MAX_SECONDS", "MODEL_SETS", "ONNX_DIR",
    "ONNX_TEXT_ENCODER_STEMS", "PRECISIONS", "TEXT_ENCODER_STEMS", "TEXT_ENCODER_SUBDIR", "TIERS",
    "TIER_NAMES", "TOKENIZER_NAME", "CodecTier", "DecoderInfo", "ModelSet", "aot_codec_remedy",
    "codec_tiers", "download_remedy",
    # name checks (engines.catalog.names)
    "get_model_set", "normalize_backend", "normalize_decoder", "normalize_precision",
    "normalize_tier", "paired_decoder",
    # the ONNX graph check (engines.onnx_ops)
    "ORT_DOMAINS", "foreign_onnx_ops",
]


@dataclass(frozen=True)
class Availability:
    model: str
    decoder: str
    precision: str
    backend: str  # "tensorrt" | "onnxruntime"
    runnable: bool
    reason: str | None = None
    files: EngineFiles | None = None
    notes: tuple[str, ...] = ()

    @property
    def supports_audio_input(self) -> bool:
        """Audio-to-audio and inpainting need an encoder."""
        return self.runnable and self.files is not None and self.files.encoder is not None

    @property
    def status(self) -> str:
        """"ready" or the reason, for lists and pickers."""
        return "ready" if self.runnable else (self.reason or "unavailable")


class _Probe(enum.Enum):
    PROBE = "probe"


PROBE = _Probe.PROBE  # default for Catalog(gpu=..., tensorrt_version=...): ask the machine


def _strip_period(sentence: str) -> str:
    if isinstance(sentence, Advice):  # keep its remedies
        return sentence.edited(_strip_period)
    return sentence[:-1] if sentence.endswith(".") else sentence


def _lower_first(sentence: str) -> str:
    """Lower-case a plain first word ("The", "No") so a sentence can be embedded; keep names
    such as "TensorRT", "ONNX" or "SAME-L" as they are."""
    if isinstance(sentence, Advice):  # keep its remedies
        return sentence.edited(_lower_first)
    word = sentence.split(" ", 1)[0]
    if len(word) > 1 and word[1:].islower():
        return sentence[:1].lower() + sentence[1:]
    return sentence


class Catalog:
    """Answers "can model X run here, and from which files?" for every model set and backend."""

    def __init__(
        self,
        models_root: Path,
        extra_roots: Sequence[Path] = (),
        gpu: GpuInfo | None | _Probe = PROBE,
        tensorrt_version: str | None | _Probe = PROBE,
        onnxruntime_available: bool | None = None,
    ) -> None:
        self.models_root = Path(models_root)
        self.roots: tuple[Path, ...] = (self.models_root, *(Path(r) for r in extra_roots))
        self._gpu = gpu
        self._tensorrt_version = tensorrt_version
        self._onnxruntime_available = onnxruntime_available

    # -- machine facts (probed lazily so constructing a catalog stays instant) --

    @property
    def gpu(self) -> GpuInfo | None:
        if self._gpu is PROBE:
            self._gpu = probe_gpu()
        return self._gpu

    @property
    def tensorrt_version(self) -> str | None:
        if self._tensorrt_version is PROBE:
            self._tensorrt_version = installed_tensorrt_version()
        return self._tensorrt_version

    @property
    def onnxruntime_available(self) -> bool:
        if self._onnxruntime_available is None:
            self._onnxruntime_available = importlib.util.find_spec("onnxruntime") is not None
        return self._onnxruntime_available

    @property
    def known_gpu(self) -> GpuInfo | None:
        """The GPU when it was given or already probed, else None: for searches that can use
        it but do not need it, so they never probe."""
        return None if self._gpu is PROBE else self.gpu

    # -- public queries --

    def resolve(
        self,
        model: str,
        decoder: str | None = None,
        precision: str | None = None,
        backend: str = "auto",
        need_encoder: bool = False,
        codec_tier: str | None = None,
    ) -> Availability:
        """Whether this combination can run and from which files; never raises for missing
        files (RequestError only for names that do not exist or cannot pair)."""
        model_set = get_model_set(model)
        decoder_key = paired_decoder(model_set.key, decoder)
        precision_key = (model_set.default_precision if precision is None
                         else normalize_precision(precision))
        backend_key = normalize_backend(backend)
        codec_tier = normalize_tier(codec_tier, decoder_key)
        choice = Choice(model_set, decoder_key, precision_key, bool(need_encoder), codec_tier)
        return self._resolve_choice(choice, backend_key)

    def require_choice(self, choice: Choice, backend: str) -> Availability:
        """require for names a checked request already made canonical and paired (backend
        included): nothing is normalised a second time."""
        return self.prepare(self._resolve_choice(choice, backend))

    def _resolve_choice(self, choice: Choice, backend: str) -> Availability:
        if backend == "auto":
            return self._resolve_auto(choice)
        return self._resolve_on(backend, choice)

    def require(
        self,
        model: str,
        decoder: str | None = None,
        precision: str | None = None,
        backend: str = "auto",
        need_encoder: bool = False,
        codec_tier: str | None = None,
    ) -> Availability:
        """Like resolve, but the answer is runnable with every file on disk, or it raises
        ModelUnavailableError carrying the reason."""
        availability = self.resolve(model, decoder, precision, backend, need_encoder, codec_tier)
        return self.prepare(availability)

    def prepare(self, availability: Availability) -> Availability:
        """Make a runnable answer's files exist: builds the demo on first use."""
        if not availability.runnable:
            raise ModelUnavailableError(availability.reason or "This model cannot run here.")
        if availability.model != "demo":
            return availability
        assert availability.files is not None
        demo_dir = availability.files.dit.parent
        root = demo_dir.parent.parent
        try:
            built_dir = Path(demo.ensure_demo_models(root))
        except StudioError:
            raise
        except OSError as exc:
            raise ModelUnavailableError(
                f"The demo models could not be written to {demo_dir} "
                f"({exc.strerror or exc}); check free disk space and write access.") from exc
        files = demo_files(built_dir, availability.files.codec_tier)
        missing = [p.name for p in files.all_paths() if not p.is_file()]
        if missing:
            raise ModelUnavailableError(
                f"Building the demo left {', '.join(missing)} missing in {built_dir}; "
                f"delete that folder and try again.")
        notes = tuple(n for n in availability.notes if DEMO_BUILT_NOTE not in n)
        return dataclasses.replace(availability, files=files, notes=notes)

    def entries(self) -> list[Availability]:
        """One answer per (model set, backend) with default decoder and precision."""
        return [self.resolve(key, backend=backend) for key in MODEL_SETS for backend in BACKENDS]

    def gpu_line(self) -> str:
        gpu = self.gpu
        if gpu is None:
            return "GPU: none found - TensorRT backend unavailable"
        version = self.tensorrt_version
        trt = ("TensorRT " + ".".join(version.split(".")[:2])) if version else \
            "TensorRT not installed"
        return f"GPU: {gpu.name} ({gpu.sm}), {trt}"

    def format_table(self) -> str:
        """Human readable listing, in plain words (format_lines keeps the remedies)."""
        return "\n".join(self.format_lines())

    def format_lines(self) -> list[str]:
        """The listing for `generate --list-models`, one line each (an Advice where a line
        carries remedies, for the front end to word)."""
        lines = [
            self.gpu_line(),
            "ONNX Runtime: " + ("installed" if self.onnxruntime_available else "not installed"),
            "Models: " + ", ".join(str(r) for r in self.roots),
            "",
        ]
        entries = self.entries()
        key_width = max(len(k) for k in MODEL_SETS)
        label_width = max(len(m.label) for m in MODEL_SETS.values())
        backend_width = max(len(b) for b in BACKENDS)
        for entry in entries:
            label = MODEL_SETS[entry.model].label
            status = entry.status
            said = list(entry.notes)
            if entry.runnable and entry.backend == "tensorrt" and entry.files is not None:
                said.append(adapters_status(entry.files.branch_dit))  # loaded only when used
            if entry.runnable and said:
                notes = [part for n in said for part in ("; ", _strip_period(n))][1:]
                status = join(status, " (", *notes, ")")
            lines.append(join(f"{entry.model:<{key_width}}  {label:<{label_width}}  "
                              f"{entry.backend:<{backend_width}}  ", status))
        return lines

    # -- resolution --

    def _resolve_auto(self, choice: Choice) -> Availability:
        on_trt = self._resolve_on("tensorrt", choice)
        if on_trt.runnable:
            return on_trt
        on_ort = self._resolve_on("onnxruntime", choice)
        if choice.model.key == "demo":
            return on_ort
        missing_runtime = self._tensorrt_missing_runtime()
        if on_ort.runnable:
            why = missing_runtime or _strip_period(_lower_first(on_trt.reason or ""))
            note = join("TensorRT is not used: ", why, ".")
            return dataclasses.replace(on_ort, notes=(*on_ort.notes, note))
        if missing_runtime is None:
            return on_trt  # GPU and TensorRT exist: what TensorRT lacks is the useful answer
        reason = join(f"{choice.model.key} cannot run here: {missing_runtime}, and ",
                      _lower_first(on_ort.reason or ""))
        return dataclasses.replace(on_trt, reason=reason)

    def _tensorrt_missing_runtime(self) -> str | None:
        """A short clause when this machine cannot run TensorRT at all, else None."""
        if self.gpu is None:
            return "no NVIDIA GPU was found for TensorRT"
        if self.tensorrt_version is None:
            return f"TensorRT is not installed (`{install_command()}`)"
        if unsupported_reason(self.tensorrt_version) is not None:
            return f"TensorRT {self.tensorrt_version} is installed but SA3 Studio needs TensorRT 10"
        return None

    def _resolve_on(self, backend: str, choice: Choice) -> Availability:
        notes: list[str] = []
        search = EngineSearch(self)
        try:
            if backend == "tensorrt":
                files = search.tensorrt_files(choice, notes)
            else:
                files = search.onnx_files(choice, notes)
                if choice.adapters and (why := onnx_branch_refusal(choice.model, files.dit)):
                    raise Unavailable(why)
        except Unavailable as stop:
            return Availability(choice.model.key, choice.decoder, choice.precision, backend,
                                runnable=False, reason=stop.reason)
        return Availability(choice.model.key, choice.decoder, choice.precision, backend,
                            runnable=True, reason=None, files=files, notes=tuple(notes))
