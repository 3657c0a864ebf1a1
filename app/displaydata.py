"""View data of a take computed off the GUI thread (peak pyramids, spectrogram image)."""

from __future__ import annotations

from app.widgets.spectrogram import log_spectrogram, mono_mix
from app.widgets.waveform import prepare_waveform


def prepare_display(pcm) -> dict:
    """Everything the views would otherwise compute on the GUI thread for this audio."""
    return {"waveform": prepare_waveform(pcm), "spectrogram": log_spectrogram(mono_mix(pcm))}


def for_result(result) -> dict:
    """GpuWorker hook: runs on the worker thread right after a take is generated."""
    return prepare_display(result.pcm)
