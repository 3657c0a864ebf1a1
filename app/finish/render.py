"""The finished audio of one take, computed off the GUI thread (app.common.background_jobs runs
these functions on a thread pool): the chain applied, the figures for the loudness readout, and what
the player and the views need, so the GUI thread only swaps arrays in.

No widgets here: plain functions over numpy arrays and engines.finish, safe on any thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.common.displaydata import prepare_display
from app.common.remedy_words import for_window
from engines.audio_io import float_from_pcm16
from engines.constants import SAMPLE_RATE
from engines.errors import RequestError
from engines.finish.chain import finish
from engines.finish.finished_take import FinishedTake
from engines.finish.loudness import measure_level, to_db
from engines.finish.output_format import resample
from engines.finish.report_words import method_words, trim_words
from engines.finish.settings import FinishSettings
from engines.lazy import lazy_import, real_module

# What finishing still imports on first use: scipy.ndimage, for the true-peak limiter
# (engines.finish.limiter). Loudness itself runs in numpy now (engines.finish.biquads): scipy's
# filters and pyloudnorm, 2 s of imports that held the GIL in pieces while the window started,
# are needed only for takes over 95 s (engines.finish.biquads.SCIPY_FROM), and load then.
LOUDNESS_MODULES = (lazy_import("scipy.ndimage"),)

Figures = tuple[float | None, float | None]  # (integrated LUFS, true peak dBTP); None: silent


@dataclass(eq=False)
class FinishedPreview:
    """One take finished by one chain. Replaced, never changed, when the chain changes; only
    `file_path` is filled in later, when the finished file is first written for a drag."""

    finished_take: FinishedTake  # the chain's audio, report and record
    preview: np.ndarray  # float32 (N, 2) at the player's 44.1 kHz: what A/B plays
    display: dict  # app.common.displaydata.prepare_display(preview)
    before: Figures  # the raw take
    after: Figures  # the delivered audio (circular for a loop, as a game engine plays it)
    file_path: Path | None = None  # the delivered file, once dragged or copied

    @property
    def settings(self) -> FinishSettings:
        return self.finished_take.settings

    @property
    def loop(self):
        return self.finished_take.loop

    @property
    def audio(self) -> np.ndarray:
        return self.finished_take.finished.audio

    @property
    def rate(self) -> int:
        return self.finished_take.finished.rate

    @property
    def loop_points(self) -> tuple[int, int] | None:
        return self.finished_take.finished.loop_points

    def matches(self, settings: FinishSettings | None, loop) -> bool:
        """Whether this is the take's audio for `settings` and the take's current loop."""
        return (settings is not None and settings == self.settings
                and (not settings.loop or loop is self.loop))


def figures(audio: np.ndarray, rate: int, circular: bool = False) -> Figures:
    """(LUFS, dBTP) as finishing measures them: a take under 400 ms by one padded block."""
    lufs, peak, _ = measure_level(audio, rate, circular=circular)
    return lufs, to_db(peak)


def prewarm_loudness() -> None:
    """Import what finishing may need (LOUDNESS_MODULES), for a pool thread."""
    for module in LOUDNESS_MODULES:
        real_module(module)


def raw_audio(pcm: np.ndarray) -> np.ndarray:
    """The raw take as the finishing chain takes it: float (N, 2), the app's 1/32767 scale."""
    return float_from_pcm16(pcm)


def render(pcm: np.ndarray, settings: FinishSettings, loop=None) -> FinishedPreview:
    """The take `pcm` (int16 (N, 2) at 44.1 kHz) finished by `settings`; a loop chain needs
    `loop` (engines.finish.loop.LoopResult), the loop made for this take, as its source."""
    settings.validate()
    raw = raw_audio(pcm)
    if settings.loop:
        if loop is None:
            raise RequestError("This chain makes a loop, but the take has none yet; press "
                               "Make loop.")
        source = loop.audio
    else:
        source, loop = raw, None
    finished = finish(source, settings)
    take = FinishedTake(finished, settings, loop)
    preview = for_player(finished.audio, finished.rate, circular=settings.loop)
    return FinishedPreview(take, preview, prepare_display(preview), figures(raw, SAMPLE_RATE),
                           figures(finished.audio, finished.rate, circular=settings.loop))


def for_player(audio: np.ndarray, rate: int, circular: bool = False) -> np.ndarray:
    """float32 (N, 2) at the player's rate: a 48 kHz or mono delivery is still auditioned as
    it sounds (resampled back, circularly for a loop so the wrap plays as delivered)."""
    if rate != SAMPLE_RATE:
        audio = resample(audio, rate, SAMPLE_RATE, circular=circular)
    if audio.shape[1] == 1:
        audio = np.repeat(audio, 2, axis=1)
    return np.ascontiguousarray(audio, dtype=np.float32)


def describe_figures(figs: Figures) -> str:
    lufs, dbtp = figs
    loudness = "-inf LUFS" if lufs is None else f"{lufs:.1f} LUFS"
    peak = "-inf dBTP" if dbtp is None else f"{dbtp:.1f} dBTP"
    return f"{loudness}, {peak}"


def readout(before: Figures, after: Figures | None) -> str:
    """"-14.2 LUFS, -0.3 dBTP -> -18.0 LUFS, -1.0 dBTP": the raw take, then the finished."""
    if after is None:
        return f"{describe_figures(before)} (raw)"
    return f"{describe_figures(before)} -> {describe_figures(after)}"


def full_readout(rendered: FinishedPreview) -> tuple[str, str]:
    """(the Finish panel's readout of a finished take, its tooltip): the figures raw ->
    finished, how a short take's loudness was measured and the trim's lengths, e.g. "-31.0
    LUFS, -9.2 dBTP -> -18.0 LUFS, -4.4 dBTP, by one 400 ms block, padded with silence; trim
    0.30 s -> 0.30 s, nothing below -60 dBFS"; the tooltip holds the report's notes and
    warnings in the window's words."""
    report = rendered.finished_take.finished.report
    text = readout(rendered.before, rendered.after)
    method = method_words(report.get("final"))
    if method is not None:
        text += f", by {method}"
    trim = trim_words(report)
    if trim is not None:
        text += f"; {trim}"
    if "loudness" in report.get("skipped", {}):
        text += " (target not applied)"
    sentences = [*report.get("notes", []), *report.get("warnings", [])]
    return text, "\n".join(["Loudness and true peak: raw -> finished",
                            *(for_window(sentence) for sentence in sentences)])
