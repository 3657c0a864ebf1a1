"""Where one model set's files are on disk for one backend, or the one-sentence reason they
cannot be used here. It only looks (stat, and a graph-only ONNX read); it never writes.

Layouts searched, in every root (the models root first, then the extra roots):
  TensorRT     <root>/<sm_XX>/<subdir>/<stem>.trt      (tied to GPU arch and TensorRT version)
  ONNX         <root>/onnx/<subdir>/<stem>.onnx        (arch independent, as on Hugging Face)
  demo         <root>/onnx/demo/{t5gemma,dit_fp32,enc,dec,dec_coarse}.onnx + tokenizer.json
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from engines.catalog.branch import branch_engine, branch_refusal
from engines.catalog.tables import (
    BACKEND_LABELS,
    CODEC_FILES,
    DECODERS,
    DEMO_BUILT_NOTE,
    DEMO_DECODERS,
    DEMO_DIT,
    DEMO_ENCODER,
    DEMO_SUBDIR,
    DEMO_TEXT_ENCODER,
    DIT_STEMS,
    FP8_TIERS,
    JIT_CODEC_FILES,
    ONNX_DIR,
    ONNX_TEXT_ENCODER_STEMS,
    TEXT_ENCODER_STEMS,
    TEXT_ENCODER_SUBDIR,
    TOKENIZER_NAME,
    ModelSet,
    aot_codec_remedy,
    download_remedy,
)
from engines.catalog.tensorrt_version import install_command, unsupported_reason
from engines.errors import Remedy, join
from engines.gpu import GpuInfo
from engines.onnx_ops import foreign_onnx_ops

log = logging.getLogger(__name__)

_SM_DIR = re.compile(r"^sm_\d+$")


@dataclass(frozen=True)
class EngineFiles:
    format: str  # "trt" | "onnx"
    text_encoder: Path
    tokenizer: Path
    dit: Path
    decoder: Path
    encoder: Path | None
    codec_tier: str  # the codec tier whose decoder (and encoder) these are
    jit_plugin: bool = False
    branch_dit: Path | None = None  # the DiT that serves adapters (engines.catalog.branch)
    branch_map: Path | None = None

    def all_paths(self) -> tuple[Path, ...]:
        paths = (self.text_encoder, self.tokenizer, self.dit, self.decoder, self.encoder)
        return tuple(p for p in paths if p is not None)


@dataclass(frozen=True)
class Choice:
    """What to look for: a request's names, already checked and paired."""

    model: ModelSet
    decoder: str
    precision: str
    need_encoder: bool
    codec_tier: str | None
    adapters: bool = False  # the request names adapters: the branch DiT must be there


class Unavailable(Exception):
    """Stops a search with the one-sentence reason the user will see (an Advice when it
    carries remedies, for each front end to word)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SearchSite(Protocol):
    """What a search reads from the catalog: its roots and the machine facts. The facts are
    probed on first read, so a search reads each only once it gets far enough to need it."""

    @property
    def roots(self) -> tuple[Path, ...]: ...

    @property
    def models_root(self) -> Path: ...

    @property
    def gpu(self) -> GpuInfo | None: ...

    @property
    def known_gpu(self) -> GpuInfo | None: ...

    @property
    def tensorrt_version(self) -> str | None: ...

    @property
    def onnxruntime_available(self) -> bool: ...


def _find(dirs: Iterable[Path], names: Sequence[str]) -> Path | None:
    for folder in dirs:
        for name in names:
            candidate = folder / name
            if candidate.is_file():
                return candidate
    return None


class EngineSearch:
    """Finds a choice's files for TensorRT or ONNX Runtime under the site's roots; raises
    Unavailable with the reason when one is missing or cannot run here."""

    def __init__(self, site: SearchSite) -> None:
        self.site = site

    def _missing(self, choice: Choice, backend: str, name: str, folder: Path) -> Unavailable:
        what = choice.model.key
        return Unavailable(join(
            f"{what} on {BACKEND_LABELS[backend]} needs '{name}' in {folder}; download it with ",
            download_remedy(what, backend), "."))

    def _tensorrt_too(self, *fixes: Remedy) -> list[Remedy]:
        """`fixes`, and TensorRT as one more only where it can run: on an NVIDIA GPU."""
        if self.site.gpu is None:
            return list(fixes)
        return [*fixes, Remedy.value("backend", "tensorrt")]

    # TensorRT

    def tensorrt_files(self, choice: Choice, notes: list[str]) -> EngineFiles:
        if choice.model.key == "demo":
            raise Unavailable(join("The demo runs on ONNX Runtime only; choose ",
                                   Remedy.value("backend", "onnxruntime"), " (or auto)."))
        gpu = self.site.gpu
        if gpu is None:
            raise Unavailable(join("No NVIDIA GPU was found (or its driver is not loaded), so "
                                   "TensorRT cannot run; use ",
                                   Remedy.value("backend", "onnxruntime"), " or the demo."))
        if self.site.tensorrt_version is None:
            raise Unavailable("TensorRT is not installed; install it with "
                              f"`{install_command()}`.")
        unsupported = unsupported_reason(self.site.tensorrt_version)
        if unsupported is not None:  # TensorRT 11 and others: the engines cannot be driven
            raise Unavailable(unsupported)
        fp8_dit, fp8_codec = choice.precision == "fp8", choice.codec_tier in FP8_TIERS
        if (fp8_dit or fp8_codec) and not gpu.has_fp8:
            what = "fp8 precision" if fp8_dit else f"The {choice.codec_tier} decoder tier"
            fixes = [fix for fix, wanted in ((Remedy.value("precision", "fp16"), fp8_dit),
                                             (Remedy.value("codec_tier", "canonical"), fp8_codec))
                     if wanted]
            raise Unavailable(join(
                f"{what} needs FP8 tensor cores (compute capability 8.9 "
                f"or newer) but this GPU ({gpu.name}, {gpu.sm}) is {gpu.major}.{gpu.minor}; "
                f"choose ", *_listed(fixes, " and "), "."))
        sm = gpu.sm
        bases = [root / sm for root in self.site.roots]

        def need(subdir: str, stems: Sequence[str]) -> Path:
            names = [f"{s}.trt" for s in stems]
            found = _find((b / subdir for b in bases), names)
            if found is None:
                raise self._missing_engine(choice, subdir, names)
            return found

        text_encoder = need(TEXT_ENCODER_SUBDIR, TEXT_ENCODER_STEMS)
        tokenizer = self._tokenizer(choice, bases, "tensorrt")
        dit = need(choice.model.subdir, DIT_STEMS[choice.precision])
        branch = branch_engine(bases, choice.model)
        if choice.adapters and (why := branch_refusal(choice.model, choice.precision, branch,
                                                      bases[0])):
            raise Unavailable(why)
        decoder, encoder, tier = self._codec(choice, bases, ".trt", "tensorrt")
        self._codec_notes(choice, decoder, encoder, tier, ".trt", notes)
        return EngineFiles("trt", text_encoder, tokenizer, dit, decoder, encoder, tier, False,
                           *(branch or (None, None)))

    def _missing_engine(self, choice: Choice, subdir: str, names: Sequence[str]) -> Unavailable:
        """A missing engine: either built for another arch, or not there at all."""
        gpu = self.site.gpu
        assert gpu is not None
        model_subdir = choice.model.subdir
        # Only when this arch has none of the set's engines are another arch's engines the
        # story; otherwise the set is here but incomplete, and the file is simply missing.
        none_here = not any(any((root / gpu.sm / model_subdir).glob("*.trt"))
                            for root in self.site.roots)
        for root in self.site.roots:
            try:
                arch_dirs = sorted(p for p in root.iterdir() if _SM_DIR.match(p.name))
            except OSError:
                continue
            for arch_dir in arch_dirs:
                if arch_dir.name == gpu.sm:
                    continue
                if none_here and (any((arch_dir / subdir / n).is_file() for n in names)
                                  or any((arch_dir / model_subdir).glob("*.trt"))):
                    return Unavailable(join(
                        f"The {choice.model.key} engines in {arch_dir} were built for another "
                        f"GPU; this GPU is {gpu.sm} ({gpu.name}), so get engines for {gpu.sm} "
                        f"with ", download_remedy(choice.model.key), "."))
        return self._missing(choice, "tensorrt", names[0], self.site.roots[0] / gpu.sm / subdir)

    def _tokenizer(self, choice: Choice, bases: Sequence[Path], backend: str) -> Path:
        # The tokenizer is arch independent: accept it from either layout.
        other = [root / ONNX_DIR for root in self.site.roots]
        known_gpu = self.site.known_gpu
        if known_gpu is not None:
            other += [root / known_gpu.sm for root in self.site.roots]
        folders = []
        for base in [*bases, *other]:
            folders += [base / TEXT_ENCODER_SUBDIR, base / choice.model.subdir]
        found = _find(folders, [TOKENIZER_NAME])
        if found is None:
            raise self._missing(choice, backend, TOKENIZER_NAME, bases[0] / TEXT_ENCODER_SUBDIR)
        return found

    def _codec(self, choice: Choice, bases: Sequence[Path], ext: str,
               backend: str) -> tuple[Path, Path | None, str]:
        tiers = CODEC_FILES[choice.decoder]
        if choice.codec_tier is not None:
            order = [choice.codec_tier]
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
        named_tier = choice.codec_tier or "canonical"
        names = [s + ext for s in tiers[named_tier].decoder]
        if backend == "tensorrt":
            raise self._missing_engine(choice, DECODERS[choice.decoder].subdir, names)
        raise self._missing(choice, backend, names[0], folders[0])

    def _refuse_jit_codec(self, choice: Choice, folders: Sequence[Path]) -> None:
        """When this arch's only codec engines are JIT plugin builds, say so (a plain "missing
        file" would hide that the files on disk can never load here)."""
        jit = JIT_CODEC_FILES.get(choice.decoder)
        if jit is None:
            return
        for folder in folders:
            found = [stem + ".trt" for stem in (*jit.decoder, *jit.encoder)
                     if (folder / f"{stem}.trt").is_file()]
            if found:
                raise Unavailable(_jit_codec_reason(found, folder, choice.decoder))

    def _codec_notes(self, choice: Choice, decoder: Path, encoder: Path | None, tier: str,
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

    def onnx_files(self, choice: Choice, notes: list[str]) -> EngineFiles:
        if choice.decoder == "same-l":
            # TensorRT first, as before, where it can run; the SAME-S codec runs anywhere.
            fixes = [*self._tensorrt_too(), Remedy.value("decoder", "same-s")]
            raise Unavailable(join(
                "The SAME-L codec uses the samel::diff_attn_swa TensorRT plugin, which ONNX "
                "Runtime cannot run; use ", *_listed(fixes, " or "), "."))
        if choice.model.key == "demo":
            return self._demo_files(choice, notes)
        if choice.precision == "fp8":
            fixes = self._tensorrt_too(Remedy.value("precision", "fp16", "fp32"))
            raise Unavailable(join("fp8 is a TensorRT speed tier that ONNX Runtime cannot run; "
                                   "choose ", *_listed(fixes, ", or "), "."))
        if choice.codec_tier in FP8_TIERS:
            fixes = self._tensorrt_too(Remedy.value("codec_tier", "canonical"))
            raise Unavailable(join(f"The {choice.codec_tier} codec tier is a TensorRT engine that "
                                   f"ONNX Runtime cannot run; choose ",
                                   *_listed(fixes, ", or "), "."))
        if not self.site.onnxruntime_available:
            raise Unavailable("ONNX Runtime is not installed; install it with "
                              "`pip install onnxruntime`.")
        bases = [root / ONNX_DIR for root in self.site.roots]

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

    def _check_onnx_ops(self, choice: Choice, files: EngineFiles) -> None:
        for path in files.all_paths():
            if path.suffix != ".onnx":
                continue
            try:
                foreign = foreign_onnx_ops(path)
            except Exception as exc:  # unreadable or corrupt protobuf
                log.debug("could not read %s: %s", path, exc)
                raise Unavailable(join(
                    f"'{path.name}' in {path.parent} could not be read as an ONNX model; "
                    f"download it again with ", download_remedy(choice.model.key, "onnxruntime"),
                    ".")) from exc
            if foreign:
                what = (f"'{path.name}' in {path.parent} uses the operator {foreign[0]}, which "
                        f"ONNX Runtime cannot run")
                if self.site.gpu is None:
                    raise Unavailable(f"{what}, and no NVIDIA GPU was found for TensorRT, so it "
                                      f"cannot run here.")
                raise Unavailable(join(f"{what}; use ", Remedy.value("backend", "tensorrt"), "."))

    def _demo_files(self, choice: Choice, notes: list[str]) -> EngineFiles:
        if choice.precision != "fp32":
            raise Unavailable(join(f"The demo has fp32 weights only, not {choice.precision}; "
                                   "choose ", Remedy.value("precision", "fp32"),
                                   " or leave it unset."))
        tier = choice.codec_tier or "canonical"
        if tier not in DEMO_DECODERS:
            raise Unavailable(f"The demo has no '{tier}' codec tier; choose "
                              f"{' or '.join(DEMO_DECODERS)}, or leave the tier unset.")
        if not self.site.onnxruntime_available:
            raise Unavailable("ONNX Runtime is not installed; install it with "
                              "`pip install onnxruntime`.")
        for root in self.site.roots:
            files = demo_files(root / ONNX_DIR / DEMO_SUBDIR, tier)
            # No operator check: our own builder wrote these graphs with standard operators
            # only (test_demo_models holds it), and reading them would import onnx, a second
            # of start-up for every take.
            if all(p.is_file() for p in files.all_paths()):
                return files
        demo_dir = self.site.models_root / ONNX_DIR / DEMO_SUBDIR
        notes.append(f"The demo models are {DEMO_BUILT_NOTE} in {demo_dir}.")
        return demo_files(demo_dir, tier)


def _jit_codec_reason(names: Sequence[str], folder: Path, decoder: str) -> str:
    listed = " and ".join(f"'{name}'" for name in names)
    what = "is a JIT build" if len(names) == 1 else "are JIT builds"
    need = "needs" if len(names) == 1 else "need"
    return join(f"{listed} in {folder} {what} of {decoder.upper()} that {need} its Triton "
                f"plugin registered from Python, which SA3 Studio cannot load; ",
                aot_codec_remedy(decoder), ".")


def _listed(fixes: Sequence[Remedy], between: str) -> list[object]:
    """Remedies with `between` between them, as parts for join."""
    return [part for fix in fixes for part in (between, fix)][1:]


def demo_files(demo_dir: Path, tier: str = "canonical") -> EngineFiles:
    """The demo set's files in demo_dir (with the decoder of codec `tier`), whether or not they
    have been built yet. Both demo tiers share the one demo encoder."""
    return EngineFiles(
        format="onnx",
        text_encoder=demo_dir / DEMO_TEXT_ENCODER,
        tokenizer=demo_dir / TOKENIZER_NAME,
        dit=demo_dir / DEMO_DIT,
        decoder=demo_dir / DEMO_DECODERS[tier],
        encoder=demo_dir / DEMO_ENCODER,
        codec_tier=tier,
        jit_plugin=False,
    )
