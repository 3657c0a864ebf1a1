"""Log-magnitude spectrogram of a take (mono mix), time in seconds, frequency in kHz.

The costly parts (the STFT, and colouring the image) run off the GUI thread: the GPU worker
prepares them for new takes (`prepare_spectrogram`, via app.common.displaydata), and the view itself
computes them on a background thread for long audio that comes without them. The GUI thread
only hands a ready RGBA image to pyqtgraph, which draws it without rescaling a float image on
every render (that took ~50 ms for a 30 s take, a visible stall).
"""

from __future__ import annotations

import functools
import math
import threading
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, QRectF, Signal
from PySide6.QtWidgets import QVBoxLayout, QWidget

from app.widgets.plot_axes import EMPTY_SECONDS, plain_axis_label
from app.widgets.wave_data import INT16_SCALE
from engines.constants import SAMPLE_RATE

FULL_FREQUENCY_TITLE = "Frequency (kHz)"
SHORT_FREQUENCY_TITLE = "kHz"
FULL_TITLE_MIN_HEIGHT = 170  # px of the view: below it the full title does not fit the axis
N_FFT = 2048
HOP = 512
MAX_FRAMES = 4000  # long takes get a wider hop: more columns than this buys nothing on screen
DYNAMIC_RANGE_DB = 90.0
COLORMAP = "inferno"
# Frames transformed at once: bounds the temporary memory for a 6-minute take to a few MB.
_CHUNK_FRAMES = 256
# Frequency bins drawn per image row (max of the pair): 1025 bins is several times the rows a
# screen shows, and halving them halves the image's memory and the drawing cost.
BINS_PER_ROW = 2
# Audio up to this long is analysed in place (a few ms); longer audio on a background thread.
SYNC_SAMPLES = 2 * SAMPLE_RATE
SHUTDOWN_WAIT_S = 10.0  # one analysis of the longest take takes well under this


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


@dataclass(frozen=True)
class SpectrogramData:
    """What the view shows for one take, computed once, anywhere but the GUI thread."""

    image: np.ndarray  # float32 dB, (frames, bins); bin k is k * rate / N_FFT Hz
    hop: int
    # uint8 (rows, frames, 4), C-contiguous: the image coloured, BINS_PER_ROW bins a row, in
    # the row-major order a QImage wraps without a copy (a transposed array cost ~25 ms).
    rgba: np.ndarray
    samples: int  # length of the audio it was made from


@functools.lru_cache(maxsize=1)
def _lookup_table() -> np.ndarray:
    return pg.colormap.get(COLORMAP).getLookupTable(nPts=256, alpha=True)


def colourise(image: np.ndarray, hop: int, samples: int) -> SpectrogramData:
    """The dB image as display colours: the top DYNAMIC_RANGE_DB below its loudest bin."""
    frames, bins = image.shape
    rows = -(-bins // BINS_PER_ROW)
    padded = np.empty((frames, rows * BINS_PER_ROW), dtype=np.float32)
    padded[:, :bins] = image
    padded[:, bins:] = image[:, -1:]  # repeating the last bin leaves its row's max unchanged
    pooled = padded.reshape(frames, rows, BINS_PER_ROW).max(axis=2)
    top = float(image.max()) if image.size else 0.0
    pooled -= top - DYNAMIC_RANGE_DB
    pooled *= 255.0 / DYNAMIC_RANGE_DB
    np.clip(pooled, 0.0, 255.0, out=pooled)
    rgba = _lookup_table()[np.ascontiguousarray(pooled.T).astype(np.uint8)]
    return SpectrogramData(image, hop, rgba, samples)


def prepare_spectrogram(pcm: np.ndarray) -> SpectrogramData:
    """Everything the view needs for `pcm` ((N, 2) or (N,), int16 or float)."""
    image, hop = log_spectrogram(mono_mix(pcm))
    return colourise(image, hop, len(pcm))


_BACKGROUND = threading.Lock()


class _Delivery(QObject):
    """Carries a background result to the GUI thread (a queued signal of the view's child)."""

    ready = Signal(int, object)  # request number, SpectrogramData


class SpectrogramView(QWidget):
    """A heatmap of the take's spectrum over time (x: seconds, y: kHz)."""

    imageShown = Signal()  # a take's image is on screen (at once, or after background work)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("spectrogramView")
        self._image = np.zeros((0, 0), dtype=np.float32)
        self._sample_rate = SAMPLE_RATE
        self._request = 0  # numbers the set_audio calls; older background results are dropped
        self._latest = [0]  # the same number, read by the background thread
        self._workers: list[threading.Thread] = []  # background analyses started
        self._delivery = _Delivery(self)
        self._delivery.ready.connect(self._background_done)
        self._plot = pg.PlotWidget()
        self._plot.setObjectName("spectrogramPlot")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._plot)
        item = self._plot.getPlotItem()
        item.hideButtons()
        item.setMenuEnabled(False)
        plain_axis_label(item, "left", FULL_FREQUENCY_TITLE)
        plain_axis_label(item, "bottom", "Time (s)")
        item.getViewBox().setMouseEnabled(x=True, y=False)
        self._item = pg.ImageItem(axisOrder="row-major")
        item.addItem(self._item)
        self._show_range(EMPTY_SECONDS)
        self._left_title = FULL_FREQUENCY_TITLE

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        """A short plot (the window at its minimum size) cut "Frequency (kHz)" to
        "Frequency (kH": there the title is the unit alone."""
        super().resizeEvent(event)
        title = FULL_FREQUENCY_TITLE if event.size().height() >= FULL_TITLE_MIN_HEIGHT \
            else SHORT_FREQUENCY_TITLE
        if title != self._left_title:
            self._left_title = title
            plain_axis_label(self._plot.getPlotItem(), "left", title)

    @property
    def plot_item(self) -> pg.PlotItem:
        """For linking the time axis to another plot (a controller's choice)."""
        return self._plot.getPlotItem()

    def set_audio(self, pcm: np.ndarray, sample_rate: int = SAMPLE_RATE, *,
                  prepared: SpectrogramData | tuple | None = None) -> None:
        """Show `pcm`. `prepared` = prepare_spectrogram(pcm) computed off the GUI thread (an
        older (image, hop) pair is coloured here). Without it, long audio is analysed on a
        background thread and appears when done (`imageShown`); the axes change at once."""
        self._request += 1
        self._latest[0] = self._request
        self._sample_rate = int(sample_rate)
        if isinstance(prepared, tuple):
            prepared = colourise(prepared[0], prepared[1], len(pcm))
        if prepared is None and len(pcm) <= SYNC_SAMPLES:
            prepared = prepare_spectrogram(pcm)
        if prepared is not None:
            self._show(prepared)
            return
        self._image = np.zeros((0, 0), dtype=np.float32)
        self._item.clear()
        self._show_range(len(pcm) / self._sample_rate)
        audio, request, delivery, latest = np.array(pcm), self._request, self._delivery, \
            self._latest

        def work() -> None:
            with _BACKGROUND:  # one at a time; a take skipped past meanwhile costs nothing
                if latest[0] != request:
                    return
                data = prepare_spectrogram(audio)
            try:
                delivery.ready.emit(request, data)
            except RuntimeError:  # the view was closed meanwhile
                pass

        worker = threading.Thread(target=work, name="spectrogram", daemon=True)
        self._workers = [t for t in self._workers if t.is_alive()] + [worker]
        worker.start()

    def shutdown(self) -> None:
        """The window is closing: waiting analyses are dropped and a running one is waited
        for, so no thread outlives the window."""
        self._request += 1
        self._latest[0] = -1  # every queued analysis returns before it starts
        for worker in self._workers:
            worker.join(SHUTDOWN_WAIT_S)
        self._workers = []

    def _background_done(self, request: int, data: SpectrogramData) -> None:
        if request == self._request:  # else another take was shown meanwhile
            self._show(data)

    def _show(self, data: SpectrogramData) -> None:
        self._image = data.image
        self._item.setImage(data.rgba, autoLevels=False, levels=None)
        rate = self._sample_rate
        bin_khz = rate / N_FFT / 1000.0
        # Frame t covers samples [t * hop, t * hop + N_FFT); draw it centred on its middle.
        left = (N_FFT / 2 - data.hop / 2) / rate
        rows, frames = data.rgba.shape[:2]
        self._item.setRect(QRectF(
            left, -bin_khz / 2, frames * data.hop / rate, rows * BINS_PER_ROW * bin_khz
        ))
        self._show_range(max(data.samples / rate, left * 2))
        self.imageShown.emit()

    def _show_range(self, seconds: float) -> None:
        self.plot_item.getViewBox().setRange(
            xRange=(0.0, seconds), yRange=(0.0, self._sample_rate / 2000.0), padding=0)

    def image(self) -> np.ndarray:
        """The dB image shown, shape (frames, frequency bins); bin k is k * rate / 2048 Hz."""
        return self._image

    def clear(self) -> None:
        """No take: empty axes of EMPTY_SECONDS by the full frequency range."""
        self._request += 1
        self._latest[0] = self._request
        self._image = np.zeros((0, 0), dtype=np.float32)
        self._item.clear()
        self._show_range(EMPTY_SECONDS)
