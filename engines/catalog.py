"""What can be generated here: model sets, decoders, precisions and the engine files on disk.

The catalog only looks (stat, and a graph-only ONNX read); it never writes. The one exception
is `Catalog.prepare`, which asks `engines.demo` to build the procedural demo on first use.

Layouts searched, in every root (the models root first, then the extra roots):
  TensorRT     <root>/<sm_XX>/<subdir>/<stem>.trt      (tied to GPU arch and TensorRT version)
  ONNX         <root>/onnx/<subdir>/<stem>.onnx        (arch independent, as on Hugging Face)
  demo         <root>/onnx/demo/{t5gemma,dit_fp32,enc,dec}.onnx + tokenizer.json
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import importlib.util
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from engines import demo
from engines.backends.tensorrt.version import unsupported_reason
from engines.constants import MAX_LATENTS, SAMPLE_RATE, SAMPLES_PER_LATENT
from engines.errors import ModelUnavailableError, RequestError, StudioError
from engines.gpu import GpuInfo, probe_gpu
from engines.gpu import tensorrt_version as installed_tensorrt_version

log = logging.getLogger(__name__)

MAX_SECONDS = MAX_LATENTS * SAMPLES_PER_LATENT / SAMPLE_RATE  # about 380.4 s


# --------------------------------------------------------------------------------------------
# What exists


@dataclass(frozen=True)
class ModelSet:
    key: str
    subdir: str
    label: str
    default_decoder: str
    default_precision: str
    max_seconds: float
    description: str


MODEL_SETS: dict[str, ModelSet] = {
    m.key: m
    for m in (
        ModelSet("medium", "sa3-m", "Stable Audio 3 Medium", "same-l", "fp16", MAX_SECONDS,
                 "The large model: music and sound, best quality, paired with the SAME-L codec."),
        ModelSet("sm-music", "sa3-sm-music", "Stable Audio 3 Small Music", "same-s", "fp16",
                 MAX_SECONDS, "Small and fast, tuned for music, paired with the SAME-S codec."),
        ModelSet("sm-sfx", "sa3-sm-sfx", "Stable Audio 3 Small SFX", "same-s", "fp16",
                 MAX_SECONDS, "Small and fast, tuned for sound effects, paired with SAME-S."),
        ModelSet("demo", "demo", demo.DEMO_LABEL, "demo", "fp32",
                 MAX_SECONDS, "A tiny procedural stand-in that runs anywhere on the CPU, "
                 "so the app can be tried without downloading the real models."),
    )
}


@dataclass(frozen=True)
class DecoderInfo:
    key: str
    subdir: str
    label: str


DECODERS: dict[str, DecoderInfo] = {
    d.key: d
    for d in (
        DecoderInfo("same-l", "same-l", "SAME-L (large codec, deterministic)"),
        DecoderInfo("same-s", "same-s", "SAME-S (small codec, fast)"),
        DecoderInfo("demo", "demo", "Demo codec (procedural)"),
    )
}

PRECISIONS: tuple[str, ...] = ("fp16", "fp32", "fp8")
_PRECISION_ALIASES = {"fp16": "fp16", "fp16mixed": "fp16", "bf16": "fp16",
                      "fp32": "fp32", "fp8": "fp8"}

BACKENDS: tuple[str, ...] = ("tensorrt", "onnxruntime")
_BACKEND_ALIASES = {"auto": "auto", "tensorrt": "tensorrt", "trt": "tensorrt",
                    "onnxruntime": "onnxruntime", "ort": "onnxruntime", "onnx": "onnxruntime"}
BACKEND_LABELS = {"tensorrt": "TensorRT", "onnxruntime": "ONNX Runtime"}

TIERS: tuple[str, ...] = ("canonical", "fp8", "fp8_fast", "legacy")
_FP8_TIERS = frozenset({"fp8", "fp8_fast"})


@dataclass(frozen=True)
class CodecTier:
    """File stems (no extension) of one decoder/encoder tier, aliases in preference order."""

    decoder: tuple[str, ...]
    encoder: tuple[str, ...]


CODEC_FILES: dict[str, dict[str, CodecTier]] = {
    "same-s": {
        "canonical": CodecTier(("dec_bf16_chunkable_limiter",), ("enc_bf16_chunkable",)),
        "fp8": CodecTier(("dec_fp8",), ("enc_fp8",)),
        "fp8_fast": CodecTier(("dec_fp8_fast",), ("enc_fp8_fast",)),
        "legacy": CodecTier(("dec_dynamic_bf16",), ("enc_dynamic_bf16",)),
    },
    # SAME-L has no legacy tier we can run: its pre-chunkable engines are all JIT builds.
    "same-l": {
        "canonical": CodecTier(("dec_fp16_chunkable_limiter",), ("enc_fp16_chunkable",)),
        "fp8": CodecTier(("dec_fp8_chunkable_limiter",), ("enc_fp8_chunkable",)),
    },
}

# SAME-L engines built with the official JIT Triton plugin (samel::diff_attn_swa). They only
# deserialize once Python has registered that plugin through `tensorrt.plugin`, which SA3
# Studio never does, so the catalog recognises them only to refuse them with the AOT remedy.
# (dec_dynamic_fp32 is the fp32 build of the same JIT graph, despite its name.)
JIT_CODEC_FILES: dict[str, CodecTier] = {
    "same-l": CodecTier(("dec_dynamic_triton_swa", "dec_dynamic_fp32"),
                        ("enc_dynamic_triton_swa",)),
}

# The file-name mark of the JIT SAME-L graphs and engines (the ONNX builder skips them).
JIT_PLUGIN_MARKER = "triton_swa"

DIT_STEMS: dict[str, tuple[str, ...]] = {
    "fp16": ("dit_fp16", "dit_fp16mixed", "dit_bf16"),
    "fp32": ("dit_fp32",),
    "fp8": ("dit_fp8",),
}
TEXT_ENCODER_SUBDIR = "t5gemma"
TEXT_ENCODER_STEMS: tuple[str, ...] = ("t5gemma_fp16mixed", "t5gemma_fp16")
ONNX_TEXT_ENCODER_STEMS: tuple[str, ...] = ("t5gemma_fp16", "t5gemma_fp16mixed")  # HF name first
TOKENIZER_NAME = "tokenizer.json"
ONNX_DIR = "onnx"

DEMO_SUBDIR = "demo"
DEMO_TEXT_ENCODER = demo.TEXT_ENCODER_FILE
DEMO_DIT = demo.DIT_FILE
DEMO_ENCODER = demo.ENCODER_FILE
DEMO_DECODER = demo.DECODER_FILE
DEMO_BUILT_NOTE = "built on first use"

# Operator domains ONNX Runtime implements; a node in any other domain is a custom op it lacks.
ORT_DOMAINS = frozenset({"", "ai.onnx", "ai.onnx.ml", "com.microsoft"})

_SM_DIR = re.compile(r"^sm_\d+$")


def download_command(model: str, backend: str = "tensorrt") -> str:
    """The command a reason tells the user to run to fetch a model set."""
    suffix = " --onnx" if backend == "onnxruntime" else ""
    return f"python main.py models download {model}{suffix}"


def aot_codec_remedy(decoder: str = "same-l") -> str:
    """What to do instead of loading a JIT codec engine: a clause naming the AOT engines and
    the command that fetches them (shared by the catalog and the engine loader)."""
    tier = CODEC_FILES[decoder]["canonical"]
    # Codec engines come with the model set that pairs with the codec by default.
    model = next(m.key for m in MODEL_SETS.values() if m.default_decoder == decoder)
    return (f"get the AOT engines {tier.decoder[0]}.trt and {tier.encoder[0]}.trt with "
            f"`{download_command(model)}`")


# --------------------------------------------------------------------------------------------
# Name checks (RequestError: the user typed something that does not exist)


def _choices(names: Iterable[str]) -> str:
    return ", ".join(names)


def get_model_set(name: str) -> ModelSet:
    key = str(name).strip().lower()
    if key not in MODEL_SETS:
        raise RequestError(f"Unknown model '{name}'; choose one of: {_choices(MODEL_SETS)}.")
    return MODEL_SETS[key]


def normalize_decoder(name: str) -> str:
    key = str(name).strip().lower()
    if key not in DECODERS:
        raise RequestError(f"Unknown decoder '{name}'; choose one of: {_choices(DECODERS)}.")
    return key


def normalize_precision(name: str) -> str:
    """Canonical precision name: "fp16mixed" and "bf16" are both "fp16"."""
    key = str(name).strip().lower()
    if key not in _PRECISION_ALIASES:
        raise RequestError(
            f"Unknown precision '{name}'; choose one of: {_choices(PRECISIONS)} "
            f"(fp16mixed and bf16 are accepted as fp16).")
    return _PRECISION_ALIASES[key]


def normalize_backend(name: str) -> str:
    key = str(name).strip().lower()
    if key not in _BACKEND_ALIASES:
        raise RequestError(
            f"Unknown backend '{name}'; choose one of: auto, {_choices(BACKENDS)}.")
    return _BACKEND_ALIASES[key]


def normalize_tier(tier: str | None, decoder: str) -> str | None:
    if tier is None:
        return None
    key = str(tier).strip().lower()
    if key not in TIERS:
        raise RequestError(f"Unknown decoder tier '{tier}'; choose one of: {_choices(TIERS)}.")
    if decoder in CODEC_FILES and key not in CODEC_FILES[decoder]:
        have = _choices(CODEC_FILES[decoder])
        raise RequestError(f"Decoder tier '{key}' does not exist for {decoder}; "
                           f"choose one of: {have}.")
    return key


def paired_decoder(model: str, decoder: str | None = None) -> str:
    """The decoder a model set uses: its default, or a compatible override."""
    model_set = get_model_set(model)
    if decoder is None:
        return model_set.default_decoder
    key = normalize_decoder(decoder)
    if (model_set.key == "demo") != (key == "demo"):
        if model_set.key == "demo":
            raise RequestError(f"The demo model pairs only with the demo decoder, not '{key}'; "
                               f"leave --decoder unset.")
        raise RequestError(f"The demo decoder pairs only with the demo model, not "
                           f"'{model_set.key}'; choose --decoder same-s or same-l.")
    return key


# --------------------------------------------------------------------------------------------
# ONNX graph check


def foreign_onnx_ops(path: Path) -> tuple[str, ...]:
    """Operators ("domain::op") in an ONNX file that ONNX Runtime does not implement.

    Reads the graph only (no external weights); cached by (path, mtime, size).
    Raises OSError or onnx's DecodeError when the file cannot be read.
    """
    stat = Path(path).stat()
    return _foreign_ops_cached(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=128)
def _foreign_ops_cached(path: str, mtime_ns: int, size: int) -> tuple[str, ...]:
    try:
        import onnx
    except ImportError:
        log.debug("onnx is not installed; cannot check %s for custom operators", path)
        return ()
    model = onnx.load(path, load_external_data=False)
    # A call to a model-local function carries the function's own (custom) domain.
    local_functions = {(f.domain, f.name) for f in model.functions}
    found: dict[str, None] = {}

    def visit(nodes: Iterable[onnx.NodeProto]) -> None:
        for node in nodes:
            if (node.domain, node.op_type) not in local_functions and \
                    node.domain not in ORT_DOMAINS:
                found[f"{node.domain}::{node.op_type}"] = None
            for attr in node.attribute:
                if attr.HasField("g"):
                    visit(attr.g.node)
                for graph in attr.graphs:
                    visit(graph.node)

    visit(model.graph.node)
    for function in model.functions:
        visit(function.node)
    return tuple(found)


# --------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class EngineFiles:
    format: str  # "trt" | "onnx"
    text_encoder: Path
    tokenizer: Path
    dit: Path
    decoder: Path
    encoder: Path | None
    decoder_tier: str
    jit_plugin: bool = False

    def all_paths(self) -> tuple[Path, ...]:
        paths = (self.text_encoder, self.tokenizer, self.dit, self.decoder, self.encoder)
        return tuple(p for p in paths if p is not None)


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


class _Unavailable(Exception):
    """Internal: stops a resolution with the one-sentence reason the user will see."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class _Choice:
    model: ModelSet
    decoder: str
    precision: str
    need_encoder: bool
    tier: str | None


def _find(dirs: Iterable[Path], names: Sequence[str]) -> Path | None:
    for folder in dirs:
        for name in names:
            candidate = folder / name
            if candidate.is_file():
                return candidate
    return None


def _strip_period(sentence: str) -> str:
    return sentence[:-1] if sentence.endswith(".") else sentence


def _lower_first(sentence: str) -> str:
    """Lower-case a plain first word ("The", "No") so a sentence can be embedded; keep names
    such as "TensorRT", "ONNX" or "SAME-L" as they are."""
    word = sentence.split(" ", 1)[0]
    if len(word) > 1 and word[1:].islower():
        return sentence[:1].lower() + sentence[1:]
    return sentence


# --------------------------------------------------------------------------------------------
# The catalog


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

    # -- public queries --

    def resolve(
        self,
        model: str,
        decoder: str | None = None,
        precision: str | None = None,
        backend: str = "auto",
        need_encoder: bool = False,
        tier: str | None = None,
    ) -> Availability:
        """Whether this combination can run and from which files; never raises for missing
        files (RequestError only for names that do not exist or cannot pair)."""
        model_set = get_model_set(model)
        decoder_key = paired_decoder(model_set.key, decoder)
        precision_key = (model_set.default_precision if precision is None
                         else normalize_precision(precision))
        backend_key = normalize_backend(backend)
        tier_key = normalize_tier(tier, decoder_key)
        choice = _Choice(model_set, decoder_key, precision_key, bool(need_encoder), tier_key)
        if backend_key == "auto":
            return self._resolve_auto(choice)
        return self._resolve_on(backend_key, choice)

    def require(
        self,
        model: str,
        decoder: str | None = None,
        precision: str | None = None,
        backend: str = "auto",
        need_encoder: bool = False,
        tier: str | None = None,
    ) -> Availability:
        """Like resolve, but the answer is runnable with every file on disk, or it raises
        ModelUnavailableError carrying the reason."""
        availability = self.resolve(model, decoder, precision, backend, need_encoder, tier)
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
        from engines.demo import ensure_demo_models

        try:
            built_dir = Path(ensure_demo_models(root))
        except StudioError:
            raise
        except OSError as exc:
            raise ModelUnavailableError(
                f"The demo models could not be written to {demo_dir} "
                f"({exc.strerror or exc}); check free disk space and write access.") from exc
        files = _demo_files(built_dir)
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
        """Human readable listing for `generate --list-models`."""
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
            if entry.runnable and entry.notes:
                status += " (" + "; ".join(_strip_period(n) for n in entry.notes) + ")"
            lines.append(f"{entry.model:<{key_width}}  {label:<{label_width}}  "
                         f"{entry.backend:<{backend_width}}  {status}")
        return "\n".join(lines)

    # -- resolution --

    def _resolve_auto(self, choice: _Choice) -> Availability:
        on_trt = self._resolve_on("tensorrt", choice)
        if on_trt.runnable:
            return on_trt
        on_ort = self._resolve_on("onnxruntime", choice)
        if choice.model.key == "demo":
            return on_ort
        missing_runtime = self._tensorrt_missing_runtime()
        if on_ort.runnable:
            why = missing_runtime or _strip_period(_lower_first(on_trt.reason or ""))
            note = f"TensorRT is not used: {why}."
            return dataclasses.replace(on_ort, notes=(*on_ort.notes, note))
        if missing_runtime is None:
            return on_trt  # GPU and TensorRT exist: what TensorRT lacks is the useful answer
        reason = (f"{choice.model.key} cannot run here: {missing_runtime}, and "
                  f"{_lower_first(on_ort.reason or '')}")
        return dataclasses.replace(on_trt, reason=reason)

    def _tensorrt_missing_runtime(self) -> str | None:
        """A short clause when this machine cannot run TensorRT at all, else None."""
        if self.gpu is None:
            return "no NVIDIA GPU was found for TensorRT"
        if self.tensorrt_version is None:
            return "TensorRT is not installed (`pip install 'sa3-studio[tensorrt]'`)"
        if unsupported_reason(self.tensorrt_version) is not None:
            return f"TensorRT {self.tensorrt_version} is installed but SA3 Studio needs TensorRT 10"
        return None

    def _resolve_on(self, backend: str, choice: _Choice) -> Availability:
        notes: list[str] = []
        try:
            if backend == "tensorrt":
                files = self._tensorrt_files(choice, notes)
            else:
                files = self._onnx_files(choice, notes)
        except _Unavailable as stop:
            return Availability(choice.model.key, choice.decoder, choice.precision, backend,
                                runnable=False, reason=stop.reason)
        return Availability(choice.model.key, choice.decoder, choice.precision, backend,
                            runnable=True, reason=None, files=files, notes=tuple(notes))

    def _missing(self, choice: _Choice, backend: str, name: str, folder: Path) -> _Unavailable:
        what = choice.model.key
        return _Unavailable(
            f"{what} on {BACKEND_LABELS[backend]} needs '{name}' in {folder}; download it with "
            f"`{download_command(what, backend)}`.")

    # TensorRT

    def _tensorrt_files(self, choice: _Choice, notes: list[str]) -> EngineFiles:
        if choice.model.key == "demo":
            raise _Unavailable("The demo runs on ONNX Runtime only; choose --backend "
                               "onnxruntime (or auto).")
        gpu = self.gpu
        if gpu is None:
            raise _Unavailable("No NVIDIA GPU was found (or its driver is not loaded), so "
                               "TensorRT cannot run; use --backend onnxruntime or the demo.")
        if self.tensorrt_version is None:
            raise _Unavailable("TensorRT is not installed; install it with "
                               "`pip install 'sa3-studio[tensorrt]'`.")
        unsupported = unsupported_reason(self.tensorrt_version)
        if unsupported is not None:  # TensorRT 11 and others: the engines cannot be driven
            raise _Unavailable(unsupported)
        wants_fp8 = choice.precision == "fp8" or choice.tier in _FP8_TIERS
        if wants_fp8 and not gpu.has_fp8:
            what = "fp8 precision" if choice.precision == "fp8" else \
                f"The {choice.tier} decoder tier"
            raise _Unavailable(
                f"{what} needs FP8 tensor cores (compute capability 8.9 "
                f"or newer) but this GPU ({gpu.name}, {gpu.sm}) is {gpu.major}.{gpu.minor}; "
                f"choose --precision fp16.")
        sm = gpu.sm
        bases = [root / sm for root in self.roots]

        def need(subdir: str, stems: Sequence[str]) -> Path:
            names = [f"{s}.trt" for s in stems]
            found = _find((b / subdir for b in bases), names)
            if found is None:
                raise self._missing_engine(choice, subdir, names)
            return found

        text_encoder = need(TEXT_ENCODER_SUBDIR, TEXT_ENCODER_STEMS)
        tokenizer = self._tokenizer(choice, bases, "tensorrt")
        dit = need(choice.model.subdir, DIT_STEMS[choice.precision])
        decoder, encoder, tier = self._codec(choice, bases, ".trt", "tensorrt")
        self._codec_notes(choice, decoder, encoder, tier, ".trt", notes)
        return EngineFiles("trt", text_encoder, tokenizer, dit, decoder, encoder, tier)

    def _missing_engine(self, choice: _Choice, subdir: str, names: Sequence[str]) -> _Unavailable:
        """A missing engine: either built for another arch, or not there at all."""
        gpu = self.gpu
        assert gpu is not None
        model_subdir = choice.model.subdir
        # Only when this arch has none of the set's engines are another arch's engines the
        # story; otherwise the set is here but incomplete, and the file is simply missing.
        none_here = not any(any((root / gpu.sm / model_subdir).glob("*.trt"))
                            for root in self.roots)
        for root in self.roots:
            try:
                arch_dirs = sorted(p for p in root.iterdir() if _SM_DIR.match(p.name))
            except OSError:
                continue
            for arch_dir in arch_dirs:
                if arch_dir.name == gpu.sm:
                    continue
                if none_here and (any((arch_dir / subdir / n).is_file() for n in names)
                                  or any((arch_dir / model_subdir).glob("*.trt"))):
                    return _Unavailable(
                        f"The {choice.model.key} engines in {arch_dir} were built for another "
                        f"GPU; this GPU is {gpu.sm} ({gpu.name}), so get engines for {gpu.sm} "
                        f"with `{download_command(choice.model.key)}`.")
        return self._missing(choice, "tensorrt", names[0], self.roots[0] / gpu.sm / subdir)

    def _tokenizer(self, choice: _Choice, bases: Sequence[Path], backend: str) -> Path:
        # The tokenizer is arch independent: accept it from either layout.
        other = [root / ONNX_DIR for root in self.roots]
        if self._gpu is not PROBE and self.gpu is not None:
            other += [root / self.gpu.sm for root in self.roots]
        folders = []
        for base in [*bases, *other]:
            folders += [base / TEXT_ENCODER_SUBDIR, base / choice.model.subdir]
        found = _find(folders, [TOKENIZER_NAME])
        if found is None:
            raise self._missing(choice, backend, TOKENIZER_NAME, bases[0] / TEXT_ENCODER_SUBDIR)
        return found

    def _codec(self, choice: _Choice, bases: Sequence[Path], ext: str,
               backend: str) -> tuple[Path, Path | None, str]:
        tiers = CODEC_FILES[choice.decoder]
        if choice.tier is not None:
            order = [choice.tier]
        elif choice.precision == "fp8" and backend == "tensorrt":
            order = ["fp8", "canonical", "legacy"]
        else:
            order = ["canonical", "legacy"]
        order = [tier for tier in order if tier in tiers]  # SAME-L has no legacy tier
        folders = [b / DECODERS[choice.decoder].subdir for b in bases]
        without_encoder: tuple[str, Path] | None = None
        for tier in order:
            files = tiers[tier]
            decoder = _find(folders, [s + ext for s in files.decoder])
            if decoder is None:
                continue
            encoder = _find(folders, [s + ext for s in files.encoder])
            if encoder is None and choice.need_encoder:
                without_encoder = without_encoder or (tier, decoder)
                continue
            return decoder, encoder, tier
        if without_encoder is not None:
            tier = without_encoder[0]
            name = tiers[tier].encoder[0] + ext
            if backend == "tensorrt":
                raise self._missing_engine(choice, DECODERS[choice.decoder].subdir, [name])
            raise self._missing(choice, backend, name, folders[0])
        if backend == "tensorrt":
            self._refuse_jit_codec(choice, folders)
        named_tier = choice.tier or "canonical"
        names = [s + ext for s in tiers[named_tier].decoder]
        if backend == "tensorrt":
            raise self._missing_engine(choice, DECODERS[choice.decoder].subdir, names)
        raise self._missing(choice, backend, names[0], folders[0])

    def _refuse_jit_codec(self, choice: _Choice, folders: Sequence[Path]) -> None:
        """When this arch's only codec engines are JIT plugin builds, say so (a plain "missing
        file" would hide that the files on disk can never load here)."""
        jit = JIT_CODEC_FILES.get(choice.decoder)
        if jit is None:
            return
        for folder in folders:
            found = [stem + ".trt" for stem in (*jit.decoder, *jit.encoder)
                     if (folder / f"{stem}.trt").is_file()]
            if found:
                raise _Unavailable(_jit_codec_reason(found, folder, choice.decoder))

    def _codec_notes(self, choice: _Choice, decoder: Path, encoder: Path | None, tier: str,
                     ext: str, notes: list[str]) -> None:
        if tier == "legacy":
            canonical = CODEC_FILES[choice.decoder]["canonical"].decoder[0] + ext
            notes.append(f"Using the legacy decoder '{decoder.name}'; '{canonical}' is the "
                         f"current one.")
        if encoder is None:
            name = CODEC_FILES[choice.decoder][tier].encoder[0] + ext
            notes.append(f"No encoder '{name}' was found, so audio-to-audio and inpainting are "
                         f"unavailable.")

    # ONNX Runtime

    def _onnx_files(self, choice: _Choice, notes: list[str]) -> EngineFiles:
        if choice.decoder == "same-l":
            raise _Unavailable(
                "The SAME-L codec uses the samel::diff_attn_swa TensorRT plugin, which ONNX "
                "Runtime cannot run; use --backend tensorrt or --decoder same-s.")
        if choice.model.key == "demo":
            return self._demo_files(choice, notes)
        if choice.precision == "fp8" or choice.tier in _FP8_TIERS:
            raise _Unavailable("fp8 is a TensorRT speed tier that ONNX Runtime cannot run; "
                               "choose --precision fp16 or fp32, or --backend tensorrt.")
        if not self.onnxruntime_available:
            raise _Unavailable("ONNX Runtime is not installed; install it with "
                               "`pip install onnxruntime`.")
        bases = [root / ONNX_DIR for root in self.roots]

        def need(subdir: str, stems: Sequence[str]) -> Path:
            names = [f"{s}.onnx" for s in stems]
            found = _find((b / subdir for b in bases), names)
            if found is None:
                raise self._missing(choice, "onnxruntime", names[0], bases[0] / subdir)
            return found

        text_encoder = need(TEXT_ENCODER_SUBDIR, ONNX_TEXT_ENCODER_STEMS)
        tokenizer = self._tokenizer(choice, bases, "onnxruntime")
        dit = need(choice.model.subdir, DIT_STEMS[choice.precision])
        decoder, encoder, tier = self._codec(choice, bases, ".onnx", "onnxruntime")
        self._codec_notes(choice, decoder, encoder, tier, ".onnx", notes)
        files = EngineFiles("onnx", text_encoder, tokenizer, dit, decoder, encoder, tier, False)
        self._check_onnx_ops(choice, files)
        return files

    def _check_onnx_ops(self, choice: _Choice, files: EngineFiles) -> None:
        for path in files.all_paths():
            if path.suffix != ".onnx":
                continue
            try:
                foreign = foreign_onnx_ops(path)
            except Exception as exc:  # unreadable or corrupt protobuf
                log.debug("could not read %s: %s", path, exc)
                raise _Unavailable(
                    f"'{path.name}' in {path.parent} could not be read as an ONNX model; "
                    f"download it again with "
                    f"`{download_command(choice.model.key, 'onnxruntime')}`.") from exc
            if foreign:
                raise _Unavailable(
                    f"'{path.name}' in {path.parent} uses the operator {foreign[0]}, which ONNX "
                    f"Runtime cannot run; use --backend tensorrt.")

    def _demo_files(self, choice: _Choice, notes: list[str]) -> EngineFiles:
        if choice.precision != "fp32":
            raise _Unavailable(f"The demo has fp32 weights only, not {choice.precision}; "
                               f"choose --precision fp32 or leave it unset.")
        if choice.tier not in (None, "canonical"):
            raise _Unavailable(f"The demo has no '{choice.tier}' decoder tier; leave the tier "
                               f"unset.")
        if not self.onnxruntime_available:
            raise _Unavailable("ONNX Runtime is not installed; install it with "
                               "`pip install onnxruntime`.")
        for root in self.roots:
            files = _demo_files(root / ONNX_DIR / DEMO_SUBDIR)
            if all(p.is_file() for p in files.all_paths()):
                self._check_onnx_ops(choice, files)
                return files
        demo_dir = self.models_root / ONNX_DIR / DEMO_SUBDIR
        notes.append(f"The demo models are {DEMO_BUILT_NOTE} in {demo_dir}.")
        return _demo_files(demo_dir)


def _jit_codec_reason(names: Sequence[str], folder: Path, decoder: str) -> str:
    listed = " and ".join(f"'{name}'" for name in names)
    what = "is a JIT build" if len(names) == 1 else "are JIT builds"
    need = "needs" if len(names) == 1 else "need"
    return (f"{listed} in {folder} {what} of {decoder.upper()} that {need} its Triton plugin "
            f"registered from Python, which SA3 Studio cannot load; "
            f"{aot_codec_remedy(decoder)}.")


def _demo_files(demo_dir: Path) -> EngineFiles:
    return EngineFiles(
        format="onnx",
        text_encoder=demo_dir / DEMO_TEXT_ENCODER,
        tokenizer=demo_dir / TOKENIZER_NAME,
        dit=demo_dir / DEMO_DIT,
        decoder=demo_dir / DEMO_DECODER,
        encoder=demo_dir / DEMO_ENCODER,
        decoder_tier="canonical",
        jit_plugin=False,
    )
