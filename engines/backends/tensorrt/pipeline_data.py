"""The plain data of one generation on the GPU: its graph key, the engines or contexts of its
four roles, and its host-side inputs and outputs."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engines.backends.tensorrt.runners import ContextRunner, EngineRunner


@dataclass(frozen=True)
class GraphKey:
    """Everything that changes the captured work (sigma values, cfg/apg values, seed, seconds
    and the limiter ceiling are replay inputs, so they are not part of the key)."""

    latent_len: int
    steps: int
    mode: str  # "t2a" | "a2a" | "inpaint"
    cfg: bool
    out_samples: int
    # The codec tier's engines (codecs.codec_key): the decode is inside the graph, so each
    # tier gets its own graph, and the other tiers' graphs stay cached beside it.
    codec: str = ""
    # Stacked adapter rank the DiT's branch operands are bound at (the branch engine's maximum);
    # 0: the plain DiT. Adapters within it are buffer writes, never another key.
    adapter_rank: int = 0


@dataclass
class Runners:
    """The four roles of one model set: loaded engines (EngineRunner), or the execution
    contexts one graph key made from them (ContextRunner)."""

    text: EngineRunner | ContextRunner
    dit: EngineRunner | ContextRunner
    decoder: EngineRunner | ContextRunner
    encoder: EngineRunner | ContextRunner | None = None

    def all(self) -> list:
        return [r for r in (self.text, self.dit, self.encoder, self.decoder) if r is not None]

    def new_contexts(self) -> Runners:
        """One fresh execution context per engine (a graph never shares a context)."""
        made: list = []
        try:
            for engine in (self.text, self.dit, self.decoder, self.encoder):
                made.append(None if engine is None else engine.create_context())
        except BaseException:
            for context in made:
                if context is not None:
                    context.close()
            raise
        return Runners(*made)


@dataclass
class PipelineInputs:
    """Host-side inputs of one generation (token arrays are int64 (1, 256))."""

    ids: np.ndarray
    mask: np.ndarray
    seed: int
    sigmas: np.ndarray
    seconds: float
    limiter_ceiling: float
    cfg: float = 1.0
    apg: float = 1.0
    neg_ids: np.ndarray | None = None
    neg_mask: np.ndarray | None = None
    keep: np.ndarray | None = None  # (L,) float32 for inpainting
    init_audio: np.ndarray | None = None  # (L * 4096, 2) float32
    # The prompt (and with CFG the negative prompt) the token arrays were made from: the keys
    # of the text cache. Left empty, every run encodes its texts.
    texts: tuple[str, ...] = ()


@dataclass
class PipelineOutputs:
    pcm: np.ndarray  # int16 (out_samples, 2), an owned copy
    step_latents: np.ndarray  # (steps, 256, L) float32, owned
    gpu_ms: dict[str, float]
    nonfinite: bool
    warnings: list[str] = field(default_factory=list)

    @property
    def latents(self) -> np.ndarray:
        return self.step_latents[-1]
