"""Checks of the names a request names: model set, decoder, precision, backend and decoder tier.

A RequestError here means the user typed something that does not exist (or cannot pair); whether
an existing name can run on this machine is the catalog's question, not these checks'.
"""

from __future__ import annotations

from collections.abc import Iterable

from engines.catalog.tables import (
    BACKEND_ALIASES,
    BACKENDS,
    DECODERS,
    MODEL_SETS,
    PRECISION_ALIASES,
    PRECISIONS,
    TIER_NAMES,
    ModelSet,
    codec_tiers,
)
from engines.errors import Remedy, RequestError, join


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
    if key not in PRECISION_ALIASES:
        raise RequestError(
            f"Unknown precision '{name}'; choose one of: {_choices(PRECISIONS)} "
            f"(fp16mixed and bf16 are accepted as fp16).")
    return PRECISION_ALIASES[key]


def normalize_backend(name: str) -> str:
    key = str(name).strip().lower()
    if key not in BACKEND_ALIASES:
        raise RequestError(
            f"Unknown backend '{name}'; choose one of: auto, {_choices(BACKENDS)}.")
    return BACKEND_ALIASES[key]


def normalize_tier(tier: str | None, decoder: str) -> str | None:
    """Canonical codec tier name, checked against the decoder it must pair with (SAME-L has no
    fp8_fast or legacy tier; the demo codec has canonical and coarse). None stays None: the
    catalog's default rule then picks the tier."""
    if tier is None:
        return None
    key = str(tier).strip().lower().replace("-", "_")
    if key not in TIER_NAMES:
        raise RequestError(f"Unknown codec tier '{tier}'; choose one of: "
                           f"{_choices(TIER_NAMES)}.")
    have = codec_tiers(decoder)
    if key not in have:
        raise RequestError(f"Codec tier '{key}' does not exist for {decoder}; choose one of: "
                           f"{_choices(have)}.")
    return key


def paired_decoder(model: str, decoder: str | None = None) -> str:
    """The decoder a model set uses: its default, or a compatible override."""
    model_set = get_model_set(model)
    if decoder is None:
        return model_set.default_decoder
    key = normalize_decoder(decoder)
    if (model_set.key == "demo") != (key == "demo"):
        if model_set.key == "demo":
            raise RequestError(join(f"The demo model pairs only with the demo decoder, not "
                                    f"'{key}'; leave ", Remedy.setting("decoder"), " unset."))
        raise RequestError(join(f"The demo decoder pairs only with the demo model, not "
                                f"'{model_set.key}'; choose ",
                                Remedy.value("decoder", "same-s", "same-l"), "."))
    return key
