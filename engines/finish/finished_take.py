"""Finishing one take end to end, the same for the command line, the window and exports: the
loop first (by the model when it can run, else by crossfade), then the chain, then what the
sidecar and the embedded note say about it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from engines.finish.chain import Finished, finish
from engines.finish.loop import Generate, LoopResult, make_loop
from engines.finish.report_words import loudness_words, trim_words
from engines.finish.settings import FinishSettings

if TYPE_CHECKING:
    from engines.finish.loop_plan import TakeRequest


@dataclass(frozen=True, eq=False)
class FinishedTake:
    finished: Finished
    settings: FinishSettings
    loop: LoopResult | None  # when the take was made into a loop

    def record(self) -> dict[str, Any]:
        """What the sidecar and the library keep: the chain (to finish the take again), the
        loop that was made, and the figures measured after finishing."""
        loop = None
        if self.loop is not None:
            loop = {"method": self.loop.method, "seed": self.loop.seed,
                    "seam_span_s": [round(float(t), 4) for t in self.loop.seam_span_s]}
        return {"chain": self.settings.to_dict(), "loop": loop,
                "report": strict_json(self.finished.report),
                "loop_points": (list(self.finished.loop_points)
                                if self.finished.loop_points is not None else None)}

    @property
    def warnings(self) -> list[str]:
        """What finishing could not do as asked, one sentence each (e.g. a loudness target on
        silence, a trim that cut nothing; a remedy travels as an engines.errors.Advice)."""
        return list(self.finished.report.get("warnings") or [])

    def note(self) -> dict[str, Any]:
        """The short form for the note embedded in the file (it must stay small)."""
        final = self.finished.report.get("final", {})
        return {"preset": self.settings.preset or None, "lufs": _rounded(final, "loudness_lufs"),
                "dbtp": _rounded(final, "true_peak_dbtp"), "loop": self.settings.loop or None,
                "rate": self.finished.rate, "mono": self.settings.mono or None}


def finish_take(audio: np.ndarray, settings: FinishSettings, *,
                request: TakeRequest | None = None,
                generate: Generate | None = None) -> FinishedTake:
    """`audio` (float (N, 2) at 44.1 kHz, the raw take) finished by `settings`. A loop is made
    by the model (inpainting the seam with `request`'s settings and a new seed) when `generate`
    and `request` are given and the settings' loop method is "model", else by an equal-power
    crossfade."""
    settings.validate()
    loop = None
    if settings.loop:
        by_model = settings.loop_method == "model"
        loop = make_loop(audio, request if by_model else None,
                         generate if by_model else None, seam_s=settings.loop_seam_s)
        audio = loop.audio
    return FinishedTake(finish(audio, settings), settings, loop)


def describe(take: FinishedTake) -> str:
    """One line for people: what finishing did and the figures after it, e.g. "trim 3.00 s
    -> 2.41 s, -18.0 LUFS (one 400 ms block, padded with silence), -1.0 dBTP, 48000 Hz mono"."""
    report = take.finished.report
    final = report.get("final", {})
    lufs, dbtp = _rounded(final, "loudness_lufs"), _rounded(final, "true_peak_dbtp")
    parts = []
    if take.loop is not None:
        parts.append("loop by the model" if take.loop.method == "model" else
                     "loop by crossfade")
    trim = trim_words(report)
    if trim is not None:
        parts.append(trim)
    if lufs is not None:
        parts.append(loudness_words(lufs, final))
    if dbtp is not None:
        parts.append(f"{dbtp:.1f} dBTP")
    parts.append(f"{take.finished.rate} Hz {'mono' if take.settings.mono else 'stereo'}")
    return ", ".join(parts)


def _rounded(final: dict, key: str) -> float | None:
    value = final.get(key)
    if value is None or not math.isfinite(float(value)):
        return None
    return round(float(value), 2)


def strict_json(value: Any) -> Any:
    """`value` with every non-finite float (a silent take measures -inf LUFS) as None: JSON
    has no -Infinity, and strict readers (jq, browsers) refuse it."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: strict_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(item) for item in value]
    return value
