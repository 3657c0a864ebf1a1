"""Log-magnitude spectrogram of a take (mono mix), time in seconds, frequency in kHz."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtWidgets import QVBoxLayout, QWidget

from app.widgets.waveform import INT16_SCALE
from engines.constants import SAMPLE_RATE

N_FFT = 2048
HOP = 512
MAX_FRAMES = 4000  # long takes get a wider hop: more columns than this buys nothing on screen
DYNAMIC_RANGE_DB = 90.0
COLORMAP = "inferno"
# Frames transformed at once: bounds the temporary memory for a 6-minute take to a few MB.
_CHUNK_FRAMES = 256


def frame_hop(length: int, n_fft: int = N_FFT, hop: int = HOP, max_frames: int = MAX_FRAMES) -> int:
    """The hop for `length` samples: `hop`, widened so there are at most `max_frames` frames."""
    span = max(length - n_fft, 0)
    if span // hop + 1 <= max_frames:
        return hop
    return max(hop, math.ceil(span / (max_frames - 1)))


def log_spectrogram(
    mono: np.ndarray, n_fft: int = N_FFT, hop: int = HOP, max_frames: int = MAX_FRAMES,
    dynamic_range_db: float = DYNAMIC_RANGE_DB,
) -> tuple[np.ndarray, int]:
    """Hann-windowed STFT magnitude in dB, shape (frames, n_fft // 2 + 1), and the hop used.

    Scaled so a full-scale sine reads about 0 dB; values are clipped to `dynamic_range_db`
    below the loudest bin.
    """
    signal = np.asarray(mono, dtype=np.float32)
    if len(signal) < n_fft:
        signal = np.pad(signal, (0, n_fft - len(signal)))
    hop = frame_hop(len(signal), n_fft, hop, max_frames)
    frames = np.lib.stride_tricks.sliding_window_view(signal, n_fft)[::hop]
    window = np.hanning(n_fft).astype(np.float32)
    scale = np.float32(2.0 / window.sum())
    image = np.empty((len(frames), n_fft // 2 + 1), dtype=np.float32)
    for first in range(0, len(frames), _CHUNK_FRAMES):
        chunk = frames[first:first + _CHUNK_FRAMES] * window
        magnitude = np.abs(np.fft.rfft(chunk, axis=1)) * scale
        image[first:first + len(chunk)] = 20.0 * np.log10(np.maximum(magnitude, 1e-10))
    np.maximum(image, image.max() - dynamic_range_db, out=image)
    return image, hop


def mono_mix(pcm: np.ndarray) -> np.ndarray:
    """float32 mean of the channels; int16 scaled like the waveform (1/32768)."""
    data = np.asarray(pcm)
    if data.ndim == 2:
        mono = data.mean(axis=1, dtype=np.float32)
    elif data.ndim == 1:
        mono = data.astype(np.float32)
    else:
        raise ValueError(f"audio must have shape (N, 2) or (N,), got {data.shape}")
    if data.dtype == np.int16:
        mono *= INT16_SCALE
    return mono


class SpectrogramView(QWidget):
    """A heatmap of the take's spectrum over time (x: seconds, y: kHz)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("spectrogramView")
        self._image = np.zeros((0, 0), dtype=np.float32)
        self._plot = pg.PlotWidget()
        self._plot.setObjectName("spectrogramPlot")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._plot)
        item = self._plot.getPlotItem()
        item.hideButtons()
        item.setMenuEnabled(False)
        item.setLabel("left", "Frequency", units="kHz")
        item.setLabel("bottom", "Time", units="s")
        item.getViewBox().setMouseEnabled(x=True, y=False)
        self._item = pg.ImageItem()
        self._item.setColorMap(pg.colormap.get(COLORMAP))
        item.addItem(self._item)

    @property
    def plot_item(self) -> pg.PlotItem:
        """For linking the time axis to another plot (a controller's choice)."""
        return self._plot.getPlotItem()

    def set_audio(self, pcm: np.ndarray, sample_rate: int = SAMPLE_RATE, *,
                  prepared: tuple[np.ndarray, int] | None = None) -> None:
        """`prepared` = log_spectrogram(mono_mix(pcm)) computed elsewhere (off the GUI thread)."""
        image, hop = prepared if prepared is not None else log_spectrogram(mono_mix(pcm))
        self._image = image
        top = float(image.max())
        self._item.setImage(image, autoLevels=False, levels=(top - DYNAMIC_RANGE_DB, top))
        bin_khz = sample_rate / N_FFT / 1000.0
        # Frame t covers samples [t * hop, t * hop + N_FFT); draw it centred on its middle.
        left = (N_FFT / 2 - hop / 2) / sample_rate
        self._item.setRect(QRectF(
            left, -bin_khz / 2, len(image) * hop / sample_rate, image.shape[1] * bin_khz
        ))
        box = self.plot_item.getViewBox()
        box.setRange(
            xRange=(0.0, max(len(pcm) / sample_rate, left * 2)),
            yRange=(0.0, sample_rate / 2000.0),
            padding=0,
        )

    def image(self) -> np.ndarray:
        """The dB image shown, shape (frames, frequency bins); bin k is k * rate / 2048 Hz."""
        return self._image

    def clear(self) -> None:
        self._image = np.zeros((0, 0), dtype=np.float32)
        self._item.clear()
