"""What to get for this machine: one model set, precision and kind of file, chosen from its GPU.

The rule (figures are the published ones: VRAM resident with the default precision, small set
about 8 GB, medium about 14 GB; downloads medium about 6.6 GB, each small set about 1.7 GB):
- no NVIDIA GPU: TensorRT cannot run. The demo already works; the real model on this machine
  means the ONNX graphs of the small SFX set, run by ONNX Runtime on the processor (slow).
- a GPU with room for the medium set and some headroom: medium, the best quality.
- a GPU with room for a small set (an "8 GB" card, tight): small SFX, the set a game designer
  reaches for first; small music is the same size.
- a GPU with less memory than that: as with no GPU, saying why.
- precision: the set's default (fp16, the fidelity default); fp8 is a speed option left to the
  user, since the engines built from ONNX here need fp8-quantized graphs to be fp8 at all.
- TensorRT engines are published for a few architectures only; any other card downloads the
  ONNX graphs and builds its engines here (minutes, once).
No Qt: the Models dialog shows these sentences, and the command line may too.
"""

from __future__ import annotations

from dataclasses import dataclass

from engines.catalog import MODEL_SETS
from engines.gpu import GpuInfo

# Architectures with TensorRT engines on Hugging Face (the rest build from ONNX).
PUBLISHED_ARCHS: tuple[str, ...] = ("sm_90", "sm_120")
# Graphics memory in use while generating, in GB (published figures, default precision).
VRAM_NEEDED_GB = {"medium": 14.0, "sm-music": 8.0, "sm-sfx": 8.0}
# TensorRT engine downloads, in GB (the ONNX graphs' size comes from the hub's file list).
ENGINE_DOWNLOAD_GB = {"medium": 6.6, "sm-music": 1.7, "sm-sfx": 1.7}
HEADROOM_GB = 2.0  # the desktop and other programs use the card too
SNUG = 0.9  # a card sold as "8 GB" reports a little less; such a card is tight, not too small
SMALL_SET = "sm-sfx"
BIG_SET = "medium"


@dataclass(frozen=True)
class Recommendation:
    """One thing to get, and how it will run."""

    model: str  # a MODEL_SETS key
    precision: str
    backend: str  # "tensorrt" | "onnxruntime"
    file_kind: str  # "trt" (ready engines) | "onnx" (graphs: ONNX Runtime, or built here)
    build_here: bool  # True: the engines are built on this card after the download
    vram_needed_gb: float | None  # None: runs on the processor
    download_gb: float | None  # None: the hub's file list tells, before anything is fetched
    machine: str  # this machine, in plain words
    advice: str  # what to get and why, in plain words
    caveat: str | None = None  # what the user should know before starting

    @property
    def label(self) -> str:
        return MODEL_SETS[self.model].label


def card_memory_gb(gpu: GpuInfo) -> float | None:
    """In binary gigabytes, the unit cards are sold in: an "8 GB" card holds 8 * 2**30."""
    return gpu.total_mem_bytes / 2**30 if gpu.total_mem_bytes else None


def describe_machine(gpu: GpuInfo | None) -> str:
    """This machine's graphics card in one plain sentence."""
    if gpu is None:
        return ("No NVIDIA graphics card was found on this computer (or its driver is not "
                "loaded), so the fast TensorRT path cannot run here.")
    memory = card_memory_gb(gpu)
    size = f" with {memory:.0f} GB of memory" if memory else ""
    return f"Graphics card: {gpu.name}{size}."


def recommend(gpu: GpuInfo | None) -> Recommendation:
    """What to get for a machine with `gpu` (None: no NVIDIA GPU); see the module rule."""
    machine = describe_machine(gpu)
    if gpu is None:
        return _on_the_processor(machine, None)
    memory = card_memory_gb(gpu)
    if memory is not None and memory < VRAM_NEEDED_GB[SMALL_SET] * SNUG:
        return _on_the_processor(machine, memory)
    if memory is None or memory >= VRAM_NEEDED_GB[BIG_SET] + HEADROOM_GB:
        model = BIG_SET
        why = ("it has room for the medium set, the best quality for both music and sound "
               "effects")
    else:
        model = SMALL_SET
        why = ("it has room for a small set; Small SFX is tuned for sound effects (Small "
               "Music is the same size)")
    if memory is None:
        why = ("it is the best quality, if the card has about 14 GB of memory (its memory size "
               "could not be read)")
    published = gpu.sm in PUBLISHED_ARCHS
    need = VRAM_NEEDED_GB[model]
    precision = MODEL_SETS[model].default_precision
    label = MODEL_SETS[model].label
    how = ("ready-made TensorRT engines for this card are downloaded" if published else
           "no ready-made engines exist for this card, so the ONNX graphs are downloaded and "
           "the engines are built here (several minutes, once)")
    advice = (f"Recommended: {label} at {precision} for this card, because {why}. It needs "
              f"about {need:.0f} GB of graphics memory; {how}.")
    caveat = None
    if memory is not None and memory < need + HEADROOM_GB:
        caveat = (f"This card has about {memory:.0f} GB, just enough: close other programs "
                  f"that use the graphics card before generating.")
    return Recommendation(model, precision, "tensorrt", "trt" if published else "onnx",
                          not published, need, ENGINE_DOWNLOAD_GB[model] if published else None,
                          machine, advice, caveat)


def _on_the_processor(machine: str, memory: float | None) -> Recommendation:
    """No card that can hold a set: the demo now, or the small set on the processor."""
    label = MODEL_SETS[SMALL_SET].label
    short = "" if memory is None else (
        f"This card has about {memory:.0f} GB of memory; the smallest set needs about "
        f"{VRAM_NEEDED_GB[SMALL_SET]:.0f} GB. ")
    advice = (f"{short}The demo model already works, with nothing to download. To "
              f"hear the real Stable Audio 3, download {label} as ONNX graphs: ONNX Runtime "
              f"runs them on the processor.")
    caveat = ("On the processor each take takes far longer than on a graphics card (expect to "
              "wait, not milliseconds), so keep clips short.")
    return Recommendation(SMALL_SET, MODEL_SETS[SMALL_SET].default_precision, "onnxruntime",
                          "onnx", False, None, None, machine, advice, caveat)
