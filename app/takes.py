"""Takes of the session: plain data, no widgets."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engines.constants import SAMPLE_RATE

_ids = itertools.count(1)


@dataclass
class Take:
    """One clip the user can audition, export, or use as init audio."""

    prompt: str
    pcm: np.ndarray  # int16 (N, 2)
    seed: int | None
    model: str  # model key, or "imported" for a file the user brought in
    result: object | None = None  # GenerationResult for generated takes
    name: str = ""
    init_path: Path | None = None  # the init audio file this take was made from, if any
    file_path: Path | None = None  # written on first drag/copy and kept
    display: dict = field(default_factory=dict)
    library_id: int | None = None  # its row in the sound library
    quality: list[str] = field(default_factory=list)  # engines.finish.quality flag codes
    variation: int = 1  # its number in its variations batch: {n} in export names
    # Finishing (issue 11). The raw `pcm` is never changed: `finishing` is the chain
    # (engines.finish.settings.FinishSettings, None: the take leaves as it came), `loop` the
    # engines.finish.loop.LoopResult made for it (kept while the rest of the chain changes, so
    # a model loop is not paid for again), and `finished` the app.finish_render.Rendered audio
    # derived from both, replaced whenever either changes.
    finishing: object | None = None
    loop: object | None = None
    finished: object | None = None
    loop_recipe: dict | None = None  # a stored chain's loop ({"method", "seed"}) to make again
    rating: int = 0  # the library's 0-5 stars, shown in the takes list
    take_id: int = field(default_factory=lambda: next(_ids))

    @property
    def seconds(self) -> float:
        return self.pcm.shape[0] / SAMPLE_RATE

    @property
    def step_latents(self) -> np.ndarray | None:
        return None if self.result is None else self.result.step_latents

    @property
    def imported(self) -> bool:
        return self.seed is None or self.model == "imported"

    def title(self) -> str:
        """The take's name as the takes list shows (and edits) it."""
        return self.name or self.prompt or "(empty prompt)"

    def details(self) -> str:
        """The second line of its row: `2.0 s · seed 42 · ★★★☆☆`; imported audio says
        "imported" once, where a generated take has its seed."""
        parts = [format_seconds(self.seconds),
                 "imported" if self.imported else f"seed {self.seed}"]
        if self.rating:
            parts.append(rating_stars(self.rating))
        return " · ".join(parts)

    def float_audio(self) -> np.ndarray:
        return self.pcm.astype(np.float32) / 32767.0


def format_seconds(seconds: float) -> str:
    """`2.0 s`, `0.35 s`: short takes keep their hundredths."""
    return f"{seconds:.1f} s" if seconds >= 1.0 else f"{seconds:.2f} s"


def rating_stars(rating: int, out_of: int = 5) -> str:
    """`★★★☆☆` for 3 of 5; empty for an unrated take (0)."""
    rating = max(0, min(int(rating or 0), out_of))
    return "★" * rating + "☆" * (out_of - rating) if rating else ""
