"""Model-independent audio features of a take for the sound embedding: what the sound is like
whichever model (or microphone) made it. Plain numpy (a mel filter bank is a few lines; librosa
would bring numba and a second resampler for it): about 2 ms for a 1 s take, 8 ms for 5 s and
20 ms from 15 s up on this 2-core machine, as at most MAX_FRAMES frames are read.

Every feature is centred on a typical value and scaled to about unit spread by fixed constants
(not learnt from a library), so the vector's direction says how a sound differs from an average
sound and the cosine of two vectors compares them.

    MEL_BANDS values  spectral shape: mean log energy per mel band (40 Hz to 16 kHz) minus the
                      mean over bands (so loudness-free), in bels
    GROUPS values     how the sound moves over time: each band's log-energy spread over the
                      frames (a steady drone against hits), averaged over neighbouring bands
    SCALARS values    spectral centroid and its spread, flatness, onset rate, level and
                      zero-crossing rate, each through a fixed log scale
Frames more than 60 dB below the loudest are left out of the spectral values, so a silent tail
barely moves them.
"""

from __future__ import annotations

import numpy as np

MEL_BANDS = 20
GROUPS = 6
SCALARS = 6
AUDIO_FEATURES = MEL_BANDS + GROUPS + SCALARS

FRAME = 2048
HOP = 1024
_LOW_HZ = 40.0
_EPS = 1e-10
MAX_FRAMES = 640  # about 15 s at HOP; longer takes are read with a longer hop
_banks: dict[int, np.ndarray] = {}
_hann: np.ndarray | None = None
_WINDOW_POWER = 1.0 / 0.375  # mean of hann**2 is 3/8: undoes the window in the level


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    return 2595.0 * np.log10(1.0 + hz / 700.0)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)


def mel_bank(sample_rate: int) -> np.ndarray:
    """(MEL_BANDS, FRAME//2+1) triangular filters from 40 Hz to min(16 kHz, Nyquist)."""
    bank = _banks.get(sample_rate)
    if bank is None:
        high = min(16000.0, sample_rate / 2.0)
        edges = _mel_to_hz(np.linspace(_hz_to_mel(np.array(_LOW_HZ)), _hz_to_mel(np.array(high)),
                                       MEL_BANDS + 2))
        freqs = np.fft.rfftfreq(FRAME, 1.0 / sample_rate)
        lower, centre, upper = edges[:-2, None], edges[1:-1, None], edges[2:, None]
        rising = (freqs - lower) / (centre - lower)
        falling = (upper - freqs) / (upper - centre)
        bank = np.maximum(0.0, np.minimum(rising, falling)).astype(np.float32)
        _banks[sample_rate] = bank
    return bank


def _frames(mono: np.ndarray) -> tuple[np.ndarray, int]:
    """(n, FRAME) Hann-windowed frames and their hop; a short take is zero-padded to one frame,
    a long one is read with a longer hop, so at most MAX_FRAMES frames cover the whole take."""
    if mono.size < FRAME:
        mono = np.pad(mono, (0, FRAME - mono.size))
    hop = max(HOP, -(-(mono.size - FRAME) // (MAX_FRAMES - 1)))
    view = np.lib.stride_tricks.sliding_window_view(mono, FRAME)[::hop][:MAX_FRAMES]
    return view * _window(), hop


def _window() -> np.ndarray:
    global _hann
    if _hann is None:
        _hann = np.hanning(FRAME).astype(np.float32)
    return _hann


def _mono(pcm: np.ndarray) -> np.ndarray:
    """float32 mono mix in [-1, 1] of int16 or float PCM, (N,) or (N, channels)."""
    audio = np.asarray(pcm)
    scale = np.float32(1.0 / 32768.0 if audio.dtype == np.int16 else 1.0)
    if audio.ndim == 1:
        return audio.astype(np.float32) * scale
    mono = audio[:, 0].astype(np.float32)
    for channel in range(1, audio.shape[1]):
        mono += audio[:, channel]
    return mono * (scale / np.float32(audio.shape[1]))


def audio_features(pcm: np.ndarray, sample_rate: int) -> np.ndarray:
    """(AUDIO_FEATURES,) float32 of int16 or float PCM, (N,) or (N, channels)."""
    mono = _mono(pcm)
    frames, hop = _frames(mono)
    spectrum = np.fft.rfft(frames, axis=1)  # complex64 from float32 frames
    power = spectrum.real ** 2 + spectrum.imag ** 2  # (n, bins)
    bands = power @ mel_bank(sample_rate).T + _EPS
    mel = np.log10(bands)  # (n, bands), bels
    loud = mel.max(axis=1) > mel.max() - 6.0  # frames within 60 dB of the loudest
    if not loud.any():
        loud[:] = True
    active = mel[loud]
    shape = active.mean(axis=0)
    shape = shape - shape.mean()
    motion = np.array([part.mean() for part in np.array_split(active.std(axis=0), GROUPS)])
    frame_power = power[loud]
    centroid = (frame_power @ _bin_freqs(sample_rate)) / (frame_power.sum(axis=1) + _EPS)
    log_centroid = np.log2(np.maximum(centroid, 20.0) / 2000.0)
    # Flatness over mel bands (geometric over arithmetic mean): noise near 1, tones near 0.
    flatness = 10.0 ** active.mean(axis=1) / bands[loud].mean(axis=1)
    scalars = np.array([
        log_centroid.mean() / 2.0,
        log_centroid.std() - 0.5,
        np.log10(flatness.mean() + 1e-6) + 1.0,
        _onset_rate(mel, sample_rate, hop) / 4.0 - 1.0,
        (10.0 * np.log10(np.mean(frames ** 2) * _WINDOW_POWER + _EPS) + 25.0) / 15.0,
        np.log10(_zero_crossings(frames, sample_rate) + 1.0) - 3.0,
    ])
    return np.concatenate([shape, motion, scalars]).astype(np.float32)


def _bin_freqs(sample_rate: int) -> np.ndarray:
    return np.fft.rfftfreq(FRAME, 1.0 / sample_rate).astype(np.float32)


def _onset_rate(mel: np.ndarray, sample_rate: int, hop: int) -> float:
    """Onsets per second: frames whose summed positive log-energy rise stands out."""
    if mel.shape[0] < 3:
        return 0.0
    flux = np.maximum(np.diff(mel, axis=0), 0.0).sum(axis=1)
    threshold = np.median(flux) + 2.0 * flux.std() + 1e-6
    peaks = (flux[1:-1] > threshold) & (flux[1:-1] >= flux[:-2]) & (flux[1:-1] >= flux[2:])
    seconds = mel.shape[0] * hop / sample_rate
    return float(peaks.sum()) / max(seconds, 1e-3)


def _zero_crossings(frames: np.ndarray, sample_rate: int) -> float:
    """Sign changes per second inside the analysed frames."""
    changes = np.count_nonzero(np.signbit(frames[:, 1:]) != np.signbit(frames[:, :-1]))
    return float(changes) * sample_rate / (frames.shape[0] * (FRAME - 1))
