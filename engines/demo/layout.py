"""Fixed layout of the demo model set: frequency grids and the meaning of embedding dimensions.

The demo "latent" is a band vocoder on an orthonormal lapped transform (MDCT, hop 4096,
sine window, circular). Each 4096-sample latent frame holds, per stereo channel, 64 noise-band
coefficients (unit-norm atoms spread over a band with per-frame pseudo-random signs) and 64 tonal
coefficients (single MDCT bins on a 1/8-octave grid from 55 Hz). Channel order of the 256 latent
channels: noise L, noise R, tone L, tone R (64 each).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from engines.constants import SAMPLE_RATE, SAMPLES_PER_LATENT

N = SAMPLES_PER_LATENT  # MDCT hop and number of bins
BANDS = 64
BIN_HZ = SAMPLE_RATE / (2 * N)
TONE_BASE_HZ = 55.0
TONES_PER_OCTAVE = 8
NOISE_LO_HZ, NOISE_HI_HZ = 30.0, 16000.0
MIN_BAND_BINS = 4

# Embedding dimensions of the demo text encoder (768 wide, like T5Gemma's hidden size).
LAYER_DIM = 144
LAYERS_PER_TOKEN = 2
NOISE_SLICE = slice(0, 64)
TONE_SLICE = slice(64, 128)
ENV_OFFSET = 128
ENV_ATTACK, ENV_DECAY, ENV_REPEAT, ENV_REPEAT_DECAY = 0, 1, 2, 3
ENV_AM_RATE, ENV_AM_DEPTH, ENV_ONSET, ENV_VARIABILITY = 4, 5, 6, 7
ENV_PAN, ENV_SWELL, ENV_GAIN = 8, 9, 10
GLOBAL_OFFSET = LAYER_DIM * LAYERS_PER_TOKEN  # 288
GLOBAL_DIM = 12
G_CHIRP, G_PITCH = 0, 1  # averaged over content words (tone-grid steps per second, steps)
M_TILT, M_DECAY, M_PITCH, M_GAIN = 4, 5, 6, 7  # summed over modifier words (dB, log2, steps, dB)
CONTENT_DIM = 300
SALIENCE_DIM = 301
SPELLED_DIM = 302  # 1 for letters and bytes: the text encoder swaps in a letter-pair texture
SOUND_DIMS = 304  # dimensions that carry sound parameters (the rest is identity noise)
BIGRAM_BUCKETS = 1024
IDENTITY_OFFSET = 320

LATENT_SCALE = 12.0  # RMS amplitude of one layer at full envelope, in orthonormal MDCT units


def bin_of(freq_hz: float) -> int:
    return int(np.clip(round(freq_hz / BIN_HZ - 0.5), 0, N - 1))


def bin_freq(k: np.ndarray | int) -> np.ndarray:
    return (np.asarray(k) + 0.5) * BIN_HZ


@cache
def tone_bins() -> np.ndarray:
    """MDCT bin of each of the 64 tonal atoms (strictly increasing)."""
    bins: list[int] = []
    for i in range(BANDS):
        k = bin_of(TONE_BASE_HZ * 2.0 ** (i / TONES_PER_OCTAVE))
        if bins and k <= bins[-1]:
            k = bins[-1] + 1
        bins.append(k)
    return np.array(bins, dtype=np.int64)


@cache
def noise_band_edges() -> np.ndarray:
    """65 bin edges of the mel-spaced noise bands (each band keeps >= 2 non-tonal bins)."""
    mel = lambda f: 2595.0 * np.log10(1.0 + f / 700.0)  # noqa: E731
    inv = lambda m: 700.0 * (10.0 ** (m / 2595.0) - 1.0)  # noqa: E731
    targets = inv(np.linspace(mel(NOISE_LO_HZ), mel(NOISE_HI_HZ), BANDS + 1))
    edges = [bin_of(targets[0])]
    for f in targets[1:]:
        edges.append(max(edges[-1] + MIN_BAND_BINS, bin_of(f)))
    return np.array(edges, dtype=np.int64)


@cache
def noise_membership() -> np.ndarray:
    """(64, N) 0/1: bins of each noise band, tonal bins excluded so all atoms are orthogonal."""
    member = np.zeros((BANDS, N), dtype=np.float32)
    edges = noise_band_edges()
    for b in range(BANDS):
        member[b, edges[b] : edges[b + 1]] = 1.0
    member[:, tone_bins()] = 0.0
    return member


@cache
def tone_onehot() -> np.ndarray:
    """(64, N) one-hot rows selecting each tonal bin."""
    onehot = np.zeros((BANDS, N), dtype=np.float32)
    onehot[np.arange(BANDS), tone_bins()] = 1.0
    return onehot


def noise_band_centers_hz() -> np.ndarray:
    edges = noise_band_edges()
    return np.sqrt(bin_freq(edges[:-1]) * bin_freq(edges[1:] - 1))


def tone_freqs_hz() -> np.ndarray:
    return bin_freq(tone_bins())
