"""A take as the samples of one file: the finished audio when the take has a chain, else the
raw take; the format, rate and loop points that go with it; and the loudness and true peak
of exactly those samples (what the sidecar, bext and iXML report)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from engines.audio_io.formats import DEFAULT_FORMAT, FORMATS
from engines.constants import SAMPLE_RATE
from engines.delivery.delivery_take import DeliveryTake
from engines.finish.loudness import measure, to_db


@dataclass(frozen=True, eq=False)
class Rendering:
    audio: np.ndarray  # int16 (raw take) or float32 (finished), (N, 1|2)
    rate: int
    fmt: str  # a FORMATS key
    loop_points: tuple[int, int] | None  # (start, end inclusive) frames at `rate`
    finishing: dict[str, Any] | None  # FinishedTake.record(): the chain, loop and report
    # BS.1770 integrated; a finished take under 0.4 s: one 400 ms block (its report's
    # final.loudness_method says which); None for silence or a raw take under 0.4 s
    loudness_lufs: float | None
    true_peak_dbtp: float | None

    @property
    def frames(self) -> int:
        return int(self.audio.shape[0])

    @property
    def channels(self) -> int:
        return int(self.audio.shape[1])


def render(take: DeliveryTake, fmt: str | None = None) -> Rendering:
    """The file's samples for `take`; `fmt` overrides the chain's format (or wav16 raw)."""
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}")
    finished = take.finished
    if finished is not None:
        final = finished.finished.report.get("final", {})
        record = finished.record()
        if take.finishing_source is not None:
            record["source"] = take.finishing_source
        return Rendering(finished.finished.audio, finished.finished.rate,
                         fmt or finished.settings.format, finished.finished.loop_points,
                         record, _finite(final.get("loudness_lufs")),
                         _finite(final.get("true_peak_dbtp")))

    floats = (take.pcm.astype(np.float32) / np.float32(32767.0) if take.pcm.dtype == np.int16
              else take.pcm)
    lufs, peak = measure(floats, SAMPLE_RATE)
    return Rendering(take.pcm, SAMPLE_RATE, fmt or take.raw_format or DEFAULT_FORMAT, None,
                     None, _finite(lufs), _finite(to_db(peak)))


def _finite(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return round(value, 2) if math.isfinite(value) else None
