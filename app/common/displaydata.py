"""View data of a take computed off the GUI thread (peak pyramids, spectrogram image)."""

from __future__ import annotations

from app.widgets.spectrogram import prepare_spectrogram
from app.widgets.wave_data import prepare_waveform


def prepare_display(pcm) -> dict:
    """Everything the views would otherwise compute on the GUI thread for this audio."""
    return {"waveform": prepare_waveform(pcm), "spectrogram": prepare_spectrogram(pcm)}


def for_result(result) -> dict:
    """GpuWorker hook: runs on the worker thread right after a take is generated."""
    return prepare_display(result.pcm)
