"""Model-independent audio features of a take for the sound embedding: what the sound is like
whichever model (or microphone) made it. Plain numpy (a mel filter bank is a few lines; librosa
would bring numba and a second resampler for it); at most MAX_FRAMES frames are read, so a long
take costs no more than a 7 s one (about 1 ms a file for the short effects of
bench/bench_sound_search.py on this 2-core machine).

Blocks, in this order (each value then standardised, see below):

    MEL_BANDS   spectral shape: mean log energy per mel band (40 Hz to 16 kHz) over the loud
                frames, minus the mean over bands (loudness-free), in bels
    GROUPS      how steady each part of the spectrum is: each band's spread over the loud frames,
                averaged over neighbouring bands
    GROUPS      how fast each part of the spectrum moves: mean absolute change from one frame to
                the next, averaged over neighbouring bands
    ENVELOPE    the loudness contour from the first to the last loud frame, at ENVELOPE points
                relative to its peak (an attack-decay hit against a swell against a drone)
    1           how long the sound is heard (log2 seconds of that span)

Frames more than 60 dB below the loudest are left out of the spectral values, and every band is
floored 80 dB below the loudest band, so silence, and the empty top of a file recorded at a low
sample rate, read as "quiet" rather than as hundreds of dB of nothing.

Each value is centred and scaled by constants of engines.similarity.feature_scale (chosen on
hedgewars' voice packs, never on the recordings the search is measured on), and each block is
weighted so the cosine of two vectors compares them as bench/bench_sound_search.py measured best.
"""

from __future__ import annotations

import numpy as np

from engines.similarity.feature_scale import FEATURE_MEAN, FEATURE_SPREAD

MEL_BANDS = 48
GROUPS = 8
ENVELOPE = 10
AUDIO_FEATURES = MEL_BANDS + 2 * GROUPS + ENVELOPE + 1

FRAME = 1024
HOP = 512
MAX_FRAMES = 640  # about 7 s at HOP; longer takes are read with a longer hop
_LOW_HZ = 40.0
_EPS = 1e-10
_FLOOR_BELS = 8.0  # bands more than 80 dB below the loudest band read as that floor
_LOUD_BELS = 6.0  # frames within 60 dB of the loudest are "loud"
# (values, weight) per block: a block of standardised values is scaled by weight / sqrt(values),
# so its share of the squared norm is weight**2 whatever its size. The spectral shape, its motion
# and the length carry the most, steadiness and contour less (chosen on the tuning set, see
# engines.similarity.feature_scale).
_BLOCK_WEIGHTS = ((MEL_BANDS, 1.0), (GROUPS, 0.5), (GROUPS, 1.0), (ENVELOPE, 0.5), (1, 1.0))
_banks: dict[int, np.ndarray] = {}
_hann: np.ndarray | None = None
_weights: np.ndarray | None = None


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    return 2595.0 * np.log10(1.0 + hz / 700.0)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)


def mel_bank(sample_rate: int) -> np.ndarray:
    """(MEL_BANDS, FRAME//2+1) triangular filters from 40 Hz to min(16 kHz, Nyquist), each
    summing to 1 (a band's value is the mean power under it, whatever its width)."""
    bank = _banks.get(sample_rate)
    if bank is None:
        high = min(16000.0, sample_rate / 2.0)
        edges = _mel_to_hz(np.linspace(_hz_to_mel(np.array(_LOW_HZ)), _hz_to_mel(np.array(high)),
                                       MEL_BANDS + 2))
        freqs = np.fft.rfftfreq(FRAME, 1.0 / sample_rate)
        lower, centre, upper = edges[:-2, None], edges[1:-1, None], edges[2:, None]
        rising = (freqs - lower) / (centre - lower)
        falling = (upper - freqs) / (upper - centre)
        bank = np.maximum(0.0, np.minimum(rising, falling))
        bank = (bank / np.maximum(bank.sum(axis=1, keepdims=True), _EPS)).astype(np.float32)
        _banks[sample_rate] = bank
    return bank


def _window() -> np.ndarray:
    global _hann
    if _hann is None:
        _hann = np.hanning(FRAME).astype(np.float32)
    return _hann


def _block_weights() -> np.ndarray:
    global _weights
    if _weights is None:
        _weights = np.concatenate([np.full(size, weight / np.sqrt(size), dtype=np.float32)
                                   for size, weight in _BLOCK_WEIGHTS])
    return _weights


def _frames(mono: np.ndarray) -> tuple[np.ndarray, int]:
    """(n, FRAME) Hann-windowed frames and their hop; a short take is zero-padded to one frame,
    a long one is read with a longer hop, so at most MAX_FRAMES frames cover the whole take."""
    if mono.size < FRAME:
        mono = np.pad(mono, (0, FRAME - mono.size))
    hop = max(HOP, -(-(mono.size - FRAME) // (MAX_FRAMES - 1)))
    view = np.lib.stride_tricks.sliding_window_view(mono, FRAME)[::hop][:MAX_FRAMES]
    return view * _window(), hop


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


def _grouped(values: np.ndarray) -> np.ndarray:
    return np.array([part.mean() for part in np.array_split(values, GROUPS)])


def raw_audio_features(pcm: np.ndarray, sample_rate: int) -> np.ndarray:
    """(AUDIO_FEATURES,) float64 before standardisation (what feature_scale was fitted on)."""
    frames, hop = _frames(_mono(pcm))
    spectrum = np.fft.rfft(frames, axis=1)  # complex64 from float32 frames
    power = spectrum.real ** 2 + spectrum.imag ** 2  # (n, bins)
    mel = np.log10(power @ mel_bank(sample_rate).T + _EPS).astype(np.float64)  # bels
    top = mel.max()
    mel = np.maximum(mel, top - _FLOOR_BELS)
    loud = mel.max(axis=1) > top - _LOUD_BELS
    active = mel[loud]
    shape = active.mean(axis=0)
    steadiness = _grouped(active.std(axis=0))
    if mel.shape[0] > 1:
        change = np.abs(np.diff(mel, axis=0))
        moving = loud[1:] | loud[:-1]
        motion = _grouped(change[moving].mean(axis=0))
    else:
        motion = np.zeros(GROUPS)
    heard = np.flatnonzero(loud)
    span = mel[heard[0]: heard[-1] + 1]
    level = np.log10((10.0 ** (span - top)).sum(axis=1))
    level -= level.max()
    contour = (np.interp(np.linspace(0.0, 1.0, ENVELOPE), np.linspace(0.0, 1.0, level.size),
                         level) if level.size > 1 else np.zeros(ENVELOPE))
    seconds = max(float(span.shape[0] * hop) / sample_rate, 0.01)
    return np.concatenate([shape - shape.mean(), steadiness, motion, contour,
                           [np.log2(seconds)]])


def audio_features(pcm: np.ndarray, sample_rate: int) -> np.ndarray:
    """(AUDIO_FEATURES,) float32 of int16 or float PCM, (N,) or (N, channels): standardised and
    weighted by block, ready to be compared by cosine."""
    standard = (raw_audio_features(pcm, sample_rate) - FEATURE_MEAN) / FEATURE_SPREAD
    return (standard * _block_weights()).astype(np.float32)
