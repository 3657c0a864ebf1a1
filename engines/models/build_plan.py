"""What to build: the engines `build_engine` makes from the SA3 ONNX graphs present on disk.

`plan_builds` turns the ONNX files present under `models/onnx/<subdir>/` into `BuildSpec`s whose
engine names are the ones `engines.catalog` looks for under `models/<sm_XX>/<subdir>/`, each with
the optimization profiles of its role. It only looks: nothing is written and tensorrt is not
imported, so the CLI and the window can say what a build would do before it starts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engines import catalog, demo
from engines.backends.tensorrt.engine_paths import shown_path
from engines.catalog.tables import FP8_TIER_ORDER, FP8_TIERS, FP16_TIER_ORDER
from engines.constants import (
    CHANNELS,
    LATENT_CHANNELS,
    MAX_LATENTS,
    MIN_CODEC_LATENTS,
    SAMPLES_PER_LATENT,
)
from engines.errors import ModelUnavailableError, Remedy, RequestError, join

Shape = tuple[int, ...]
ProfileShapes = tuple[Shape, Shape, Shape]

ROLES: tuple[str, ...] = ("text", "dit", "encoder", "decoder")
BUILD_PRECISIONS: tuple[str, ...] = catalog.PRECISIONS
OPT_LATENTS = 1292  # about 120 s: the length the published profiles optimise for
WIDE_MAX_LATENTS = 8192  # "wide" codec builds (SA3_CONTRACTS section 3)

_ARCH = re.compile(r"^sm_\d+$")


def default_profiles(role: str, wide: bool = False) -> dict[str, ProfileShapes]:
    """Optimization profile (min, opt, max) per dynamic input of an SA3 engine role.

    DiT x/local_add_cond L 1/1292/4096 (the model's range: `wide` changes nothing); encoder audio
    N 32/1292/4096 latents of samples (wide: up to 8192); decoder latent 32/1292/4096 (wide:
    1/1292/8192); the text encoder is static and has no profile.
    """
    def ranged(rows: tuple[int, int], low: int, high: int, scale: int = 1) -> ProfileShapes:
        return tuple((*rows, n * scale) for n in (low, OPT_LATENTS, high))  # type: ignore[return-value]

    if role == "text":
        return {}
    if role == "dit":
        return {"x": ranged((1, LATENT_CHANNELS), 1, MAX_LATENTS),
                "local_add_cond": ranged((1, LATENT_CHANNELS + 1), 1, MAX_LATENTS)}
    if role == "encoder":
        high = WIDE_MAX_LATENTS if wide else MAX_LATENTS
        return {"audio": ranged((1, CHANNELS), MIN_CODEC_LATENTS, high, SAMPLES_PER_LATENT)}
    if role == "decoder":
        low, high = (1, WIDE_MAX_LATENTS) if wide else (MIN_CODEC_LATENTS, MAX_LATENTS)
        return {"latent": ranged((1, LATENT_CHANNELS), low, high)}
    raise ValueError(f"unknown engine role {role!r}; expected one of {', '.join(ROLES)}")


@dataclass(frozen=True)
class BuildSpec:
    """One engine to build: from which ONNX file, to which engine file, with which typing."""

    onnx_path: Path
    engine_path: Path
    role: str  # one of ROLES
    precision: str  # one of BUILD_PRECISIONS
    profiles: dict[str, ProfileShapes] = field(default_factory=dict)
    workspace_bytes: int | None = None  # builder scratch limit; None = TensorRT's default
    companion: Path | None = None  # copied beside the engine once built (a branch DiT's map)

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"unknown engine role {self.role!r}")
        if self.precision not in BUILD_PRECISIONS:
            raise ValueError(f"unknown build precision {self.precision!r}")
        for name, shapes in self.profiles.items():
            if len(shapes) != 3 or len({len(s) for s in shapes}) != 1 or any(
                not lo <= mid <= hi for lo, mid, hi in zip(*shapes, strict=True)
            ):
                raise ValueError(f"profile of {name!r} must be (min, opt, max) of one rank with "
                                 f"min <= opt <= max, not {shapes}")

    @property
    def label(self) -> str:
        """<sm_XX>/<subdir>/<file>, the part of the engine path a user recognises."""
        return shown_path(self.engine_path)


def plan_builds(models_dir: Path, sets: Iterable[str], arch: str, precision: str, *,
                wide: bool = False) -> list[BuildSpec]:
    """The engines to build for `sets` at `precision` on `arch` ("sm_90"), from the ONNX files
    under `<models_dir>/onnx/`. Shared engines (the text encoder, a codec two sets use) appear
    once. The encoder is planned when its ONNX file is there (it is only needed for audio-to-
    audio and inpainting); a missing text encoder, DiT or decoder raises ModelUnavailableError.
    `wide` gives the codec engines the wide profile. Only looks; writes nothing."""
    if not _ARCH.match(str(arch)):
        raise RequestError(f"'{arch}' is not a GPU architecture folder name; use the form sm_90.")
    root = Path(models_dir)
    precision = catalog.normalize_precision(precision)
    if precision not in BUILD_PRECISIONS:
        raise RequestError(f"Cannot build precision '{precision}'; choose fp16, fp32 or fp8.")
    specs: dict[Path, BuildSpec] = {}
    for key in sets:
        model_set = catalog.get_model_set(key)
        if model_set.key == catalog.DEMO_SUBDIR:
            planned = _plan_demo(root, arch)
        else:
            planned = _plan_set(root, arch, model_set, precision, wide)
        for spec in planned:
            specs.setdefault(spec.engine_path, spec)
    return list(specs.values())


def _find_onnx(folder: Path, stems: Iterable[str]) -> Path | None:
    for stem in stems:
        candidate = folder / f"{stem}.onnx"
        if candidate.is_file():
            return candidate
    return None


def _missing(model: str, folder: Path, name: str) -> ModelUnavailableError:
    return ModelUnavailableError(join(
        f"Building {model} needs '{name}' in {folder}; download the ONNX files with ",
        catalog.download_remedy(model, "onnxruntime"), "."))


def _plan_set(root: Path, arch: str, model_set: catalog.ModelSet, precision: str,
              wide: bool) -> list[BuildSpec]:
    onnx_root = root / catalog.ONNX_DIR
    engines = root / arch
    specs = []

    text_dir = onnx_root / catalog.TEXT_ENCODER_SUBDIR
    text = _find_onnx(text_dir, catalog.ONNX_TEXT_ENCODER_STEMS)
    if text is None:
        raise _missing(model_set.key, text_dir, f"{catalog.ONNX_TEXT_ENCODER_STEMS[0]}.onnx")
    # The text encoder is fp16mixed at every precision; the catalog accepts this name.
    text_engine = engines / catalog.TEXT_ENCODER_SUBDIR / "t5gemma_fp16.trt"
    specs.append(BuildSpec(text, text_engine, "text", "fp16", default_profiles("text")))

    dit_dir = onnx_root / model_set.subdir
    stems = catalog.DIT_STEMS[precision]
    dit = _find_onnx(dit_dir, stems)
    if dit is None:
        raise _missing(model_set.key, dit_dir, f"{stems[0]}.onnx")
    dit_engine = engines / model_set.subdir / f"{stems[0]}.trt"  # canonical name of the tier
    specs.append(BuildSpec(dit, dit_engine, "dit", precision, default_profiles("dit")))

    decoder = model_set.default_decoder
    codec_dir = onnx_root / catalog.DECODERS[decoder].subdir
    codec_engines = engines / catalog.DECODERS[decoder].subdir
    tiers = catalog.CODEC_FILES[decoder]
    planned = has_encoder = False
    for tier in _codec_tiers(precision, tiers):
        files = tiers[tier]
        # The JIT SAME-L graphs need the Python plugin to parse; build the AOT tiers instead.
        dec = _find_onnx(codec_dir, [s for s in files.decoder
                                     if catalog.JIT_PLUGIN_MARKER not in s])
        enc = _find_onnx(codec_dir, [s for s in files.encoder
                                     if catalog.JIT_PLUGIN_MARKER not in s])
        fp8_tier = tier in FP8_TIERS
        # Every fp8 tier present; then the first fp16 tier, or a later one whose encoder the
        # planned tiers lack (the catalog pairs a decoder and an encoder of one tier).
        if dec is None or not (fp8_tier or not planned or (enc is not None and not has_encoder)):
            continue
        tier_precision = "fp8" if fp8_tier else ("fp32" if dec.stem.endswith("fp32") else "fp16")
        specs.append(BuildSpec(dec, codec_engines / f"{dec.stem}.trt", "decoder",
                               tier_precision, default_profiles("decoder", wide)))
        if enc is not None:
            specs.append(BuildSpec(enc, codec_engines / f"{enc.stem}.trt", "encoder",
                                   tier_precision, default_profiles("encoder", wide)))
        planned, has_encoder = True, has_encoder or enc is not None
    if not planned:
        raise _missing(model_set.key, codec_dir, f"{tiers['canonical'].decoder[0]}.onnx")
    return specs


def _codec_tiers(precision: str, tiers: Mapping[str, Any]) -> list[str]:
    """Tiers in the order the catalog prefers them at this precision."""
    order = [*FP16_TIER_ORDER]
    if precision == "fp8":
        order = [*FP8_TIER_ORDER, *order]
    return [tier for tier in order if tier in tiers]


def _plan_demo(root: Path, arch: str) -> list[BuildSpec]:
    """The procedural demo set (fp32 graphs with the SA3 I/O): the GPU self-test's engines."""
    onnx_dir = demo.demo_dir(root)
    engines = root / arch / catalog.DEMO_SUBDIR
    specs = []
    for name, role in ((demo.TEXT_ENCODER_FILE, "text"), (demo.DIT_FILE, "dit"),
                       (demo.ENCODER_FILE, "encoder"), (demo.DECODER_FILE, "decoder")):
        path = onnx_dir / name
        if not path.is_file():
            raise ModelUnavailableError(join(
                f"The demo graph '{name}' is not in {onnx_dir}; run the demo once on the CPU "
                "(", Remedy.command("demo once"), ") to create it."))
        engine = engines / f"{Path(name).stem}.trt"
        specs.append(BuildSpec(path, engine, role, "fp32", default_profiles(role)))
    return specs
