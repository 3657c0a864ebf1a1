"""Takes of the session: plain data, no widgets."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from app.common.remedy_words import RUNS_ON
from app.widgets.take_text import format_seconds, rating_stars
from engines.catalog import BACKEND_LABELS
from engines.catalog.tiers import CODEC_INFO, precision_info
from engines.constants import SAMPLE_RATE

if TYPE_CHECKING:
    from engines.generation_result import GenerationResult

_ids = itertools.count(1)


@dataclass
class Take:
    """One clip the user can audition, export, or use as init audio."""

    prompt: str
    pcm: np.ndarray  # int16 (N, 2)
    seed: int | None
    model: str  # model key, or "imported" for a file the user brought in
    result: GenerationResult | None = None  # for generated takes
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
    # a model loop is not paid for again), and `finished` the
    # app.finish.render.FinishedPreview audio derived from both, replaced whenever either changes.
    finishing: object | None = None
    loop: object | None = None
    finished: object | None = None
    loop_recipe: dict | None = None  # a stored chain's loop ({"method", "seed"}) to make again
    rating: int = 0  # the library's 0-5 stars, shown in the takes list
    # Compare tiers (issue 14): the take_id of the take whose latents this one was decoded
    # again from, set on both; flipping inside one group keeps the playhead's place.
    tier_group: int | None = None
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

    @property
    def codec_tier(self) -> str:
        """The codec tier whose decoder made the audio ("" for imported or library takes)."""
        return getattr(self.result, "codec_tier", "") or ""

    def engine_words(self) -> str:
        """Which DiT precision and codec tier made the take, in one sentence; "" when the
        session does not know (imported audio, a take reopened from the library). The engine
        files are `engine_details`' (the Advanced group), never a tooltip's."""
        result = self.result
        if getattr(result, "files", None) is None:
            return ""
        req = result.request
        try:
            dit = precision_info(req.precision).label
        except KeyError:
            dit = str(req.precision)
        tier = self.codec_tier or "unknown"
        codec = CODEC_INFO.get((req.decoder, tier))
        tier_text = f"the {tier} codec tier" + (f" ({codec.summary})" if codec else "")
        where = RUNS_ON.get(result.backend, "this machine")
        return f"Made with {tier_text} and the {dit} DiT on {where}."

    def engine_details(self) -> str:
        """`engine_words`, the runtime and the engine files that made the take; "" when not
        known."""
        words = self.engine_words()
        if not words:
            return ""
        result = self.result
        runtime = BACKEND_LABELS.get(result.backend, result.backend)
        names = ", ".join(Path(p).name for p in result.files.all_paths())
        return f"{words} Runtime: {runtime}; engine files: {names}."

    def float_audio(self) -> np.ndarray:
        return self.pcm.astype(np.float32) / 32767.0

    def forget_files(self) -> None:
        """The take was renamed: its drag-out and Copy files carry the old name, so the next drag
        writes new ones (the old files stay where they are: they may be in use elsewhere)."""
        self.file_path = None
        if self.finished is not None:
            self.finished.file_path = None
