"""Speed and quality of every DiT precision and codec tier, in plain words, from the published
figures; and the rule that picks the default combination.

One table, so the CLI, the sidecar and the GUI all say the same thing. Speed figures are the
published ones (SA3_CONTRACTS and the SA3 model card): codec tiers are measured against the bf16
SAME-S (fp16 SAME-L) decode, the fp8 DiT on sm_120. Nothing here is measured on this machine.
What is installed and runnable here is engines.catalog.tier_choice's question.
"""

from __future__ import annotations

from dataclasses import dataclass

from engines.catalog.names import normalize_precision
from engines.catalog.tables import codec_tiers

DEFAULT_RULE = (
    "the fp16mixed DiT with the canonical codec tier, on every GPU; the legacy codec only when "
    "the canonical one is not installed; the fp8 DiT only when asked for (it then prefers the "
    "fp8 codec tier when that is installed); fp8_fast and the demo's coarse tier only when "
    "asked for")


@dataclass(frozen=True)
class TierInfo:
    """One precision or codec tier as a person chooses it."""

    kind: str  # "precision" (the DiT) or "codec" (decoder, and the encoder of the same tier)
    name: str  # the name a request gives: "fp16", "fp8", "canonical", "fp8_fast", ...
    label: str  # what a picker shows
    speed: str  # plain words, e.g. "about 1.2x faster decode"
    quality: str  # plain words, e.g. "audible artifacts"
    figures: str = ""  # the published numbers behind the words ("" where none were published)
    needs_fp8: bool = False  # FP8 tensor cores: compute capability 8.9 or newer
    default: bool = False  # what the default rule picks when nothing is asked for

    @property
    def summary(self) -> str:
        """"about 1.2x faster decode, audible artifacts" - one line for lists and tooltips."""
        return f"{self.speed}, {self.quality}"


PRECISION_INFO: dict[str, TierInfo] = {
    "fp16": TierInfo("precision", "fp16", "fp16mixed (default)", "normal speed",
                     "full quality, the everyday choice", default=True),
    "fp32": TierInfo("precision", "fp32", "fp32 (reference)", "slower than fp16mixed",
                     "the fidelity reference the other precisions are judged against"),
    "fp8": TierInfo("precision", "fp8", "fp8 (speed tier)", "about 1.4-2x faster sampling",
                    "a speed tier, not a fidelity upgrade: takes can sound slightly different "
                    "from fp16mixed", "1.43-1.95x DiT speed-up measured on sm_120",
                    needs_fp8=True),
}

CODEC_INFO: dict[tuple[str, str], TierInfo] = {
    ("same-s", "canonical"): TierInfo(
        "codec", "canonical", "canonical (bf16, default)", "normal decode speed",
        "the reference SAME-S sound", default=True),
    ("same-s", "fp8"): TierInfo(
        "codec", "fp8", "fp8", "about 1.14x faster decode", "near-transparent",
        "1.14x; 30.9 / 41.0 dB against the bf16 decode", needs_fp8=True),
    ("same-s", "fp8_fast"): TierInfo(
        "codec", "fp8_fast", "fp8_fast", "about 1.2x faster decode", "audible artifacts",
        "1.22x; 26.1 / 36.5 dB against the bf16 decode", needs_fp8=True),
    ("same-s", "legacy"): TierInfo(
        "codec", "legacy", "legacy (older build)", "normal decode speed",
        "an older SAME-S build, used only when the canonical one is missing"),
    ("same-l", "canonical"): TierInfo(
        "codec", "canonical", "canonical (fp16, default)", "normal decode speed",
        "the reference SAME-L sound, bit-deterministic", default=True),
    ("same-l", "fp8"): TierInfo(
        "codec", "fp8", "fp8", "about 1.15x faster decode", "near-transparent",
        "1.15x; 43.4 dB against the fp16 decode", needs_fp8=True),
    ("demo", "canonical"): TierInfo(
        "codec", "canonical", "canonical (demo, default)", "instant on the CPU",
        "the demo codec as designed", default=True),
    ("demo", "coarse"): TierInfo(
        "codec", "coarse", "coarse (demo tier)", "the same speed (a demo stand-in)",
        "audibly rougher: coarsely quantised bands, quiet partials gone",
        "demo only, not Stable Audio 3: 2 mantissa bits per band coefficient"),
}

ENCODER_NOTE = ("A codec tier also chooses the encoder of the same tier for audio-to-audio and "
                "inpainting, where one is installed.")


def precision_info(precision: str) -> TierInfo:
    """The table row of a DiT precision ("fp16mixed" and "bf16" are fp16)."""
    return PRECISION_INFO[normalize_precision(precision)]


def codec_info(decoder: str, tier: str) -> TierInfo:
    """The table row of one codec tier of `decoder` (KeyError for a pair that does not exist:
    engines.catalog.names.normalize_tier refuses those in words)."""
    return CODEC_INFO[(decoder, tier)]


def codec_infos(decoder: str) -> list[TierInfo]:
    """Every codec tier of `decoder`, in table order."""
    return [CODEC_INFO[(decoder, tier)] for tier in codec_tiers(decoder)]


def tier_table_lines(decoders: tuple[str, ...] = ("same-s", "same-l", "demo")) -> list[str]:
    """The whole table as text lines, for the command line."""
    lines = ["DiT precisions:"]
    for info in PRECISION_INFO.values():
        lines.append(_line(info))
    for decoder in decoders:
        lines.append(f"{decoder.upper()} codec tiers:")
        lines += [_line(info) for info in codec_infos(decoder)]
    lines.append(ENCODER_NOTE)
    return lines


def _line(info: TierInfo) -> str:
    extra = f" [{info.figures}]" if info.figures else ""
    fp8 = " (needs compute capability 8.9+)" if info.needs_fp8 else ""
    return f"  {info.name:10} {info.summary}{extra}{fp8}"
