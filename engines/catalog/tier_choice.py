"""Which precisions and codec tiers can run here, and what the default rule picks (and why).

The catalog answers one combination at a time; these functions ask it once per tier, so a
picker (the GUI, `models list`) shows every tier with its speed and quality in words, whether
it is available on this machine, and the catalog's own one-sentence reason when it is not
(not installed, this GPU has no FP8 tensor cores, ONNX Runtime cannot run it, ...).
"""

from __future__ import annotations

from dataclasses import dataclass

from engines.catalog import (
    BACKEND_LABELS,
    DECODERS,
    PRECISIONS,
    Availability,
    Catalog,
    codec_tiers,
    get_model_set,
    paired_decoder,
)
from engines.catalog.tiers import DEFAULT_RULE, PRECISION_INFO, TierInfo, codec_info
from engines.errors import Remedy, join


@dataclass(frozen=True)
class TierOption:
    """One precision or codec tier as offered on this machine."""

    info: TierInfo  # speed and quality in words (engines.catalog.tiers)
    available: bool
    reason: str | None  # why not, one sentence (None when available)
    default: bool  # the default rule picks this one here
    availability: Availability  # the catalog's full answer (files used, notes)

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def status(self) -> str:
        return "ready" if self.available else (self.reason or "unavailable")


def codec_tier_options(catalog: Catalog, model: str, decoder: str | None = None,
                       precision: str | None = None, backend: str = "auto") -> list[TierOption]:
    """Every codec tier of the model's (or the given) decoder, in table order, each available
    or not with the reason. `default` marks the tier the default rule uses for this precision
    (the fp8 DiT prefers the fp8 codec tier when it is installed)."""
    decoder_key = paired_decoder(model, decoder)
    picked = catalog.resolve(model, decoder_key, precision, backend)
    picked_tier = picked.files.codec_tier if picked.runnable and picked.files else None
    options = []
    for tier in codec_tiers(decoder_key):
        answer = catalog.resolve(model, decoder_key, precision, backend, codec_tier=tier)
        default = tier == picked_tier if picked_tier else codec_info(decoder_key, tier).default
        options.append(TierOption(codec_info(decoder_key, tier), answer.runnable,
                                  None if answer.runnable else answer.reason, default, answer))
    return options


def precision_options(catalog: Catalog, model: str, decoder: str | None = None,
                      backend: str = "auto") -> list[TierOption]:
    """Every DiT precision with the default codec rule, each available or not with the reason.
    The demo has fp32 weights only, so its one available precision is also its default."""
    default = get_model_set(model).default_precision
    options = []
    for precision in PRECISIONS:
        answer = catalog.resolve(model, decoder, precision, backend)
        options.append(TierOption(PRECISION_INFO[precision], answer.runnable,
                                  None if answer.runnable else answer.reason,
                                  precision == default, answer))
    return options


def default_pick(catalog: Catalog, model: str, decoder: str | None = None,
                 backend: str = "auto") -> tuple[Availability, str]:
    """What a request that names no precision and no codec tier runs here, and why, in one
    sentence: (the catalog's answer, the reason). When nothing can run, the reason is the
    catalog's own (what is missing and how to get it)."""
    answer = catalog.resolve(model, decoder, backend=backend)
    if not answer.runnable or answer.files is None:
        return answer, answer.reason or f"{model} cannot run here."
    dit = PRECISION_INFO[answer.precision]
    tier = answer.files.codec_tier
    codec = DECODERS[answer.decoder].label.split(" (")[0].removesuffix(" codec")
    why = ("it is the default on every machine" if model != "demo" else
           "the demo has fp32 weights and its canonical codec")
    if tier == "legacy":
        why = "the canonical codec is not installed, so the older legacy build stands in"
    where = BACKEND_LABELS.get(answer.backend, answer.backend)
    text = f"{dit.label} DiT + {tier} {codec} codec on {where}: {why}"
    faster = _faster_installed(catalog, model, decoder, backend, answer)
    if faster:
        text = join(text, "; also installed: ", faster)
    return answer, join(text, ".")


def _faster_installed(catalog: Catalog, model: str, decoder: str | None, backend: str,
                      picked: Availability) -> str:
    """The installed speed tiers the default leaves alone, as "fp8 DiT (...)"; "" for none
    (an Advice: each names the setting that asks for it)."""
    if picked.backend != "tensorrt":
        return ""  # fp8 engines are TensorRT only
    found: list[object] = []
    fp8 = catalog.resolve(model, decoder, "fp8", "tensorrt")
    if fp8.runnable:
        found += [f"the fp8 DiT ({PRECISION_INFO['fp8'].speed}; choose ",
                  Remedy.value("precision", "fp8"), ")"]
    for tier in codec_tiers(picked.decoder):
        if tier in ("canonical", "legacy") or tier == (picked.files.codec_tier
                                                       if picked.files else None):
            continue
        if catalog.resolve(model, decoder, backend="tensorrt", codec_tier=tier).runnable:
            info = codec_info(picked.decoder, tier)
            found += [", " if found else "", f"the {tier} codec tier ({info.summary}; choose ",
                      Remedy.value("codec_tier", tier), ")"]
    return join(*found)


def pick_lines(catalog: Catalog, model: str) -> list[str]:
    """`models list` lines for one model set: the default pick with its reason, then (when the
    set runs here at all) each codec tier with its speed, quality and state here."""
    answer, reason = default_pick(catalog, model)
    if not answer.runnable:
        return [join("default here: none - ", reason)]
    lines = [join("default here: ", reason)]
    for option in codec_tier_options(catalog, model):
        state = "ready" if option.available else join("not available - ", option.reason)
        lines.append(join(f"  codec tier {option.name:9} {option.info.summary} - ", state))
    return lines


__all__ = ["DEFAULT_RULE", "TierOption", "codec_tier_options", "default_pick", "pick_lines",
           "precision_options"]
