"""GenerationResult: one take as a backend returns it, the plain data every layer above passes
on (generator, store, batch, delivery, window). It lives apart from the backend protocol so
those layers name it without importing any backend."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from engines.constants import SAMPLE_RATE

if TYPE_CHECKING:
    from engines.catalog import EngineFiles
    from engines.request import ValidatedRequest


@dataclass
class GenerationResult:
    """One finished take. Arrays are owned copies, never views of engine buffers."""

    pcm: np.ndarray  # int16 (out_samples, 2)
    latents: np.ndarray  # float32 (256, L), the final latent
    step_latents: np.ndarray  # float32 (steps, 256, L), x after every step
    seed: int
    timings_ms: dict[str, float]  # per stage plus "total"
    backend: str
    request: ValidatedRequest
    files: EngineFiles
    warnings: list[str] = field(default_factory=list)
    sample_rate: int = SAMPLE_RATE
    details: dict = field(default_factory=dict)  # backend specifics: GPU stage ms, VRAM, path
    quality: list[str] = field(default_factory=list)  # engines.finish.quality flag codes

    @property
    def codec_tier(self) -> str:
        """The codec tier whose decoder made this audio (files.codec_tier): the tier actually
        used, whether asked for or picked by the default rule."""
        return getattr(self.files, "codec_tier", "") or ""

    @property
    def seconds(self) -> float:
        return self.pcm.shape[0] / self.sample_rate

    @property
    def realtime_factor(self) -> float:
        total = self.timings_ms.get("total", 0.0) / 1000.0
        return self.seconds / total if total > 0 else float("inf")
