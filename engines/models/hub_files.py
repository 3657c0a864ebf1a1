"""What to download for each model set: files picked from the Hugging Face listing, and where
each one goes under the models folder.

Hub layout (`stabilityai/stable-audio-3-optimized`)    local layout (the catalog's)
  tensorRT/<sm_XX>/<subdir>/<stem>.trt                   <models>/<sm_XX>/<subdir>/<stem>.trt
  onnx/<subdir>/<stem>.onnx (+ <stem>.onnx.data)         <models>/onnx/<subdir>/<stem>.onnx

File names and their aliases come from `engines.catalog`; this module only chooses among them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from engines.catalog import (
    CODEC_FILES,
    DECODERS,
    DIT_STEMS,
    MODEL_SETS,
    ONNX_DIR,
    ONNX_TEXT_ENCODER_STEMS,
    TEXT_ENCODER_STEMS,
    TEXT_ENCODER_SUBDIR,
    TOKENIZER_NAME,
    download_remedy,
    normalize_precision,
)
from engines.catalog.tables import FP16_TIER_ORDER, PUBLISHED_SETS
from engines.errors import ModelUnavailableError, Remedy, RequestError, join
from engines.models.hub_branch import branch_files

REPO = "stabilityai/stable-audio-3-optimized"
TOKENIZER_FALLBACK_REPO = "google/t5gemma-b-b-ul2"
HUB_TRT_DIR = "tensorRT"
TEXT_ENCODER_SET = "t5gemma"
DOWNLOAD_SETS: tuple[str, ...] = (*PUBLISHED_SETS, TEXT_ENCODER_SET)
FORMATS: tuple[str, ...] = ("trt", "onnx")
# ONNX graphs over 2 GB keep their weights beside them; both spellings occur in the wild.
ONNX_DATA_SUFFIXES: tuple[str, ...] = (".onnx.data", ".onnx_data")

_SM_DIR = re.compile(r"^sm_\d+$")


@dataclass(frozen=True)
class RemoteFile:
    """One file on the hub. `local` is its path relative to the models folder (POSIX form);
    empty means "derived from `path`" (see `local_relpath`). A `size` of 0 means unknown until
    the download asks the hub."""

    path: str
    size: int
    sha256: str | None = None
    repo: str = REPO
    local: str = ""

    @property
    def local_rel(self) -> str:
        return self.local or local_relpath(self.path)

    def local_path(self, models_dir: Path) -> Path:
        return Path(models_dir).joinpath(*PurePosixPath(self.local_rel).parts)


def _safe_parts(path: str) -> tuple[str, ...]:
    """The parts of a relative POSIX path; refuses anything that could leave the models folder."""
    pure = PurePosixPath(path)
    parts = pure.parts
    if not parts or pure.is_absolute() or any(p in ("", ".", "..") or "\\" in p for p in parts):
        raise ValueError(f"'{path}' is not a safe relative path")
    return parts


def local_relpath(path: str) -> str:
    """Local path (relative to the models folder) of a hub path:
    `tensorRT/sm_90/sa3-m/dit_fp16.trt` -> `sm_90/sa3-m/dit_fp16.trt`,
    `onnx/sa3-m/dit_fp16.onnx` -> `onnx/sa3-m/dit_fp16.onnx`. ValueError for other paths."""
    parts = _safe_parts(path)
    if len(parts) >= 3 and parts[0] == HUB_TRT_DIR and _SM_DIR.match(parts[1]):
        return "/".join(parts[1:])
    if len(parts) >= 2 and parts[0] == ONNX_DIR:
        return "/".join(parts)
    raise ValueError(f"'{path}' is neither under {HUB_TRT_DIR}/<sm_XX>/ nor under {ONNX_DIR}/")


def hub_archs(listing: Iterable[RemoteFile]) -> list[str]:
    """The sm_XX folders the hub has TensorRT engines for, in numeric order."""
    found = set()
    for f in listing:
        parts = f.path.split("/")
        if len(parts) >= 3 and parts[0] == HUB_TRT_DIR and _SM_DIR.match(parts[1]):
            found.add(parts[1])
    return sorted(found, key=lambda sm: int(sm[3:]))


# --------------------------------------------------------------------------------------------
# Normalising the request


def normalize_sets(sets: Iterable[str]) -> list[str]:
    """Known set names in request order, each once, with the text encoder set always included
    (every model set needs it)."""
    keys: list[str] = []
    for name in sets:
        key = str(name).strip().lower()
        if key not in DOWNLOAD_SETS:
            raise RequestError(f"Unknown download set '{name}'; choose among: "
                               f"{', '.join(DOWNLOAD_SETS)}.")
        if key not in keys:
            keys.append(key)
    if not keys:
        raise RequestError(f"No set was named; choose among: {', '.join(DOWNLOAD_SETS)}.")
    if TEXT_ENCODER_SET not in keys:
        keys.append(TEXT_ENCODER_SET)
    return keys


def _normalize_precisions(precisions: Sequence[str] | None) -> list[str]:
    found = list(dict.fromkeys(normalize_precision(p) for p in (precisions or ())))
    return found or [MODEL_SETS["medium"].default_precision]


def _normalize_format(fmt: str) -> str:
    key = str(fmt).strip().lower()
    if key not in FORMATS:
        raise RequestError(f"Unknown file format '{fmt}'; choose trt or onnx.")
    return key


# --------------------------------------------------------------------------------------------
# Planning


class _Picker:
    """Looks files up in one listing for one (format, arch) and collects the chosen ones."""

    def __init__(self, listing: Iterable[RemoteFile], fmt: str, arch: str) -> None:
        self.index = {f.path: f for f in listing}
        self.fmt = fmt
        self.arch = arch
        if fmt == "trt":
            self.remote_base, self.local_base, self.ext = f"{HUB_TRT_DIR}/{arch}", arch, ".trt"
        else:
            self.remote_base, self.local_base, self.ext = ONNX_DIR, ONNX_DIR, ".onnx"
        self.picked: dict[tuple[str, str], RemoteFile] = {}

    def where(self, subdir: str) -> str:
        return f"{self.remote_base}/{subdir}"

    def first(self, subdir: str, stems: Sequence[str]) -> RemoteFile | None:
        for stem in stems:
            found = self.index.get(f"{self.where(subdir)}/{stem}{self.ext}")
            if found is not None:
                return found
        return None

    def add(self, remote: RemoteFile, local: str | None = None) -> None:
        planned = replace(remote, local=local or local_relpath(remote.path))
        self.picked.setdefault((planned.repo, planned.path), planned)
        if self.fmt == "onnx" and remote.path.endswith(".onnx"):
            for suffix in ONNX_DATA_SUFFIXES:
                data = self.index.get(remote.path[: -len(".onnx")] + suffix)
                if data is not None:
                    self.add(data)


def find_tokenizer(listing: Iterable[RemoteFile], arch: str, fmt: str) -> RemoteFile | None:
    """tokenizer.json in the main repo: beside the text encoder of the requested format first,
    then in the other layout (it is arch independent)."""
    index = {f.path: f for f in listing}
    fmt = _normalize_format(fmt)
    trt_here = f"{HUB_TRT_DIR}/{arch}/{TEXT_ENCODER_SUBDIR}/{TOKENIZER_NAME}" if arch else None
    onnx_here = f"{ONNX_DIR}/{TEXT_ENCODER_SUBDIR}/{TOKENIZER_NAME}"
    order = [trt_here, onnx_here] if fmt == "trt" else [onnx_here, trt_here]
    order += [f"{HUB_TRT_DIR}/{sm}/{TEXT_ENCODER_SUBDIR}/{TOKENIZER_NAME}"
              for sm in hub_archs(index.values())]
    for path in order:
        if path is not None and path in index:
            return index[path]
    return None


def _add_text_encoder(pick: _Picker, fallback_listing: Iterable[RemoteFile] | None) -> None:
    stems = TEXT_ENCODER_STEMS if pick.fmt == "trt" else ONNX_TEXT_ENCODER_STEMS
    encoder = pick.first(TEXT_ENCODER_SUBDIR, stems)
    if encoder is None:
        raise ModelUnavailableError(
            f"The hub has no T5Gemma text encoder in {pick.where(TEXT_ENCODER_SUBDIR)} (looked "
            f"for {', '.join(s + pick.ext for s in stems)}); try another arch or the ONNX files.")
    pick.add(encoder)
    local = f"{pick.local_base}/{TEXT_ENCODER_SUBDIR}/{TOKENIZER_NAME}"
    tokenizer = find_tokenizer(pick.index.values(), pick.arch, pick.fmt)
    if tokenizer is not None:
        pick.add(tokenizer, local)
        return
    # Not in our repo: the tokenizer of the original T5Gemma release is the same file.
    fallback = {f.path: f for f in fallback_listing or ()}
    tokenizer = fallback.get(TOKENIZER_NAME) or RemoteFile(TOKENIZER_NAME, 0)
    pick.add(replace(tokenizer, repo=TOKENIZER_FALLBACK_REPO), local)


def _codec_tiers(decoder: str, precision: str, pick: _Picker) -> list[str]:
    """Codec tiers to fetch for one precision: the fp8 tiers for fp8 (all that exist), else the
    canonical tier, with the legacy tier when the canonical files are not published."""
    tiers = CODEC_FILES[decoder]
    subdir = DECODERS[decoder].subdir

    def present(tier: str) -> bool:
        return pick.first(subdir, tiers[tier].decoder) is not None

    if precision == "fp8":
        fp8 = [t for t in tiers if t.startswith("fp8") and present(t)]
        if fp8:
            return fp8
    for tier in FP16_TIER_ORDER:
        if tier in tiers and present(tier):
            return [tier]
    return []


def _add_model_set(pick: _Picker, key: str, precisions: Sequence[str]) -> None:
    model_set = MODEL_SETS[key]
    decoder = model_set.default_decoder
    subdir = DECODERS[decoder].subdir
    for precision in precisions:
        dit = pick.first(model_set.subdir, DIT_STEMS[precision])
        if dit is None:
            names = ", ".join(s + pick.ext for s in DIT_STEMS[precision])
            raise ModelUnavailableError(
                f"The hub has no {precision} DiT for {key} in {pick.where(model_set.subdir)} "
                f"(looked for {names}); choose another precision.")
        pick.add(dit)
        tiers = _codec_tiers(decoder, precision, pick)
        if not tiers:
            names = ", ".join(s + pick.ext for s in CODEC_FILES[decoder]["canonical"].decoder)
            raise ModelUnavailableError(
                f"The hub has no {decoder.upper()} decoder for {key} in {pick.where(subdir)} "
                f"(looked for {names}); try another arch or the ONNX files.")
        for tier in tiers:
            files = CODEC_FILES[decoder][tier]
            pick.add(pick.first(subdir, files.decoder))  # type: ignore[arg-type]
            encoder = pick.first(subdir, files.encoder)
            if encoder is not None:  # optional: only audio-to-audio and inpainting need it
                pick.add(encoder)


def plan_files(
    sets: list[str],
    arch: str,
    precisions: list[str],
    fmt: str,
    listing: list[RemoteFile],
    fallback_listing: list[RemoteFile] | None = None,
    adapters: bool = False,
) -> list[RemoteFile]:
    """The files to fetch for these sets, each with its local path set (`RemoteFile.local`).

    sets: among medium, sm-music, sm-sfx, t5gemma (t5gemma is always added). arch: the sm_XX
    folder (ignored for onnx). precisions: fp16 (fp16mixed, bf16), fp32, fp8; empty means fp16.
    fmt: "trt" or "onnx". listing: `download.hub_listing(REPO)`. fallback_listing: the listing
    of TOKENIZER_FALLBACK_REPO, used only when our repo lacks tokenizer.json; without it the
    fallback tokenizer is planned with an unknown size. adapters: also each set's branch DiT
    and its map (engines.models.hub_branch), refused where the hub has none.

    Raises RequestError for unknown names and ModelUnavailableError when the hub lacks a
    required file (each one sentence).
    """
    fmt = _normalize_format(fmt)
    keys = normalize_sets(sets)
    wanted = _normalize_precisions(precisions)
    arch = str(arch or "").strip()
    if fmt == "trt":
        if not _SM_DIR.match(arch):
            raise RequestError(f"'{arch}' is not an engine arch folder; use e.g. sm_90 or sm_120.")
        archs = hub_archs(listing)
        if arch not in archs:
            published = ", ".join(archs) or "none"
            first = next(k for k in keys if k != TEXT_ENCODER_SET) if len(keys) > 1 else "medium"
            raise ModelUnavailableError(
                join(f"The hub has no TensorRT engines for {arch} (published: {published}); "
                     f"download the ONNX files with ", download_remedy(first, "onnxruntime"),
                     " and build engines for this GPU with ", Remedy.command("models build", first),
                     "."))
    pick = _Picker(listing, fmt, arch)
    for key in keys:
        if key == TEXT_ENCODER_SET:
            _add_text_encoder(pick, fallback_listing)
        else:
            _add_model_set(pick, key, wanted)
            if adapters:
                for found in branch_files(pick.index, pick.fmt, arch, MODEL_SETS[key]):
                    pick.add(found)
    return list(pick.picked.values())
