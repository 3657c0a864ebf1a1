"""What exists: the model sets, codecs, precisions, backends and decoder tiers, and the file names
(with their aliases) each is stored under. Static tables only; `engines.catalog` searches for them.
"""

from __future__ import annotations

from dataclasses import dataclass

from engines import demo
from engines.constants import MAX_LATENTS, SAMPLE_RATE, SAMPLES_PER_LATENT
from engines.errors import Advice, Remedy

MAX_SECONDS = MAX_LATENTS * SAMPLES_PER_LATENT / SAMPLE_RATE  # about 380.4 s


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

# The model sets the front ends offer, in the order they offer them (the demo first, then small
# to large), and the ones published on the hub (every set but the demo, largest first).
MODEL_CHOICES: tuple[str, ...] = ("demo", "sm-music", "sm-sfx", "medium")
PUBLISHED_SETS: tuple[str, ...] = tuple(key for key in MODEL_SETS if key != "demo")

PRECISIONS: tuple[str, ...] = ("fp16", "fp32", "fp8")
PRECISION_ALIASES = {"fp16": "fp16", "fp16mixed": "fp16", "bf16": "fp16",
                     "fp32": "fp32", "fp8": "fp8"}
# Every precision name a request may give: the canonical ones first, then their aliases.
PRECISION_NAMES: tuple[str, ...] = (*PRECISIONS, *(a for a in PRECISION_ALIASES
                                                   if a not in PRECISIONS))

BACKENDS: tuple[str, ...] = ("tensorrt", "onnxruntime")
BACKEND_ALIASES = {"auto": "auto", "tensorrt": "tensorrt", "trt": "tensorrt",
                   "onnxruntime": "onnxruntime", "ort": "onnxruntime", "onnx": "onnxruntime"}
BACKEND_LABELS = {"tensorrt": "TensorRT", "onnxruntime": "ONNX Runtime"}

TIERS: tuple[str, ...] = ("canonical", "fp8", "fp8_fast", "legacy")
# The fp16 tiers in the order a build or download prefers them (legacy only without canonical),
# and the fp8 tiers (in table order).
FP16_TIER_ORDER: tuple[str, ...] = ("canonical", "legacy")
FP8_TIER_ORDER: tuple[str, ...] = ("fp8", "fp8_fast")
FP8_TIERS = frozenset(FP8_TIER_ORDER)
# The demo's second decoder tier (a coarser quantisation of the demo codec, engines.demo.coarse):
# not an SA3 tier, it exists so tier choice and the by-ear comparison run on every machine.
DEMO_TIERS: tuple[str, ...] = ("canonical", "coarse")
TIER_NAMES: tuple[str, ...] = (*TIERS, "coarse")  # every name a request may give


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
# The branch DiT that serves adapters (LoRA/DoRA): their operands are network inputs, so one
# engine serves every adapter. It lies beside the set's other engines (<sm_XX>/<subdir>/) with
# its layer map, under the official names (the official build writes the map beside the engine
# as branch_map_<set>_lora.json; `<stem>_lora.json`, engines.adapters.branch_files, also counts).
# The official branch engine is fp16: adapters on TensorRT run at fp16 whatever the plain DiT.
BRANCH_PRECISION = "fp16"
BRANCH_DIT_STEM = "dit_fp16_lora"
BRANCH_MAP_NAMES: dict[str, str] = {"medium": "branch_map_medium_lora.json",
                                    "sm-music": "branch_map_sm_music_lora.json",
                                    "sm-sfx": "branch_map_sm_sfx_lora.json"}
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
DEMO_DECODERS: dict[str, str] = {"canonical": demo.DECODER_FILE,
                                 "coarse": demo.DECODER_COARSE_FILE}
DEMO_BUILT_NOTE = "built on first use"


def codec_tiers(decoder: str) -> tuple[str, ...]:
    """The codec tier names that exist for `decoder` (installed or not), in table order."""
    if decoder == "demo":
        return DEMO_TIERS
    return tuple(CODEC_FILES.get(decoder, {}))


def download_remedy(model: str, backend: str = "tensorrt") -> Remedy:
    """The download a reason tells the user to run to fetch a model set."""
    return Remedy.command("models download", model, backend=backend)


def aot_codec_remedy(decoder: str = "same-l") -> Advice:
    """What to do instead of loading a JIT codec engine: a clause naming the AOT engines and
    the download that fetches them (shared by the catalog and the engine loader)."""
    tier = CODEC_FILES[decoder]["canonical"]
    # Codec engines come with the model set that pairs with the codec by default.
    model = next(m.key for m in MODEL_SETS.values() if m.default_decoder == decoder)
    return Advice(f"get the AOT engines {tier.decoder[0]}.trt and {tier.encoder[0]}.trt with "
                  "{0}", download_remedy(model))
