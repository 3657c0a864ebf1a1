"""Numbers fixed by the Stable Audio 3 engine contract (SA3_CONTRACTS section 1)."""

from __future__ import annotations

import math

SAMPLE_RATE = 44100
CHANNELS = 2
SAMPLES_PER_LATENT = 4096
LATENT_CHANNELS = 256
TEXT_TOKENS = 256
TEXT_HIDDEN = 768
MIN_CODEC_LATENTS = 32  # decoder and encoder profiles start here
MAX_LATENTS = 4096  # DiT profile maximum (about 380.4 s)
SIGMA_MIN = 0.01  # the model emits NaN below this init noise level
DEFAULT_LIMITER_CEILING = 0.977
PCM_CLAMP = 32767


def latent_length(seconds: float) -> int:
    """Latents the DiT needs to cover `seconds` of audio."""
    return max(1, math.ceil(seconds * SAMPLE_RATE / SAMPLES_PER_LATENT))


def codec_length(seconds: float) -> int:
    """Latents actually generated: never fewer than the codec minimum (short clips are trimmed)."""
    return max(MIN_CODEC_LATENTS, latent_length(seconds))


def output_samples(seconds: float) -> int:
    """Samples per channel the user receives for a request of `seconds`."""
    return int(round(seconds * SAMPLE_RATE))

# The longest init audio any model set can use (the DiT's longest input): reading more of a
# file than this only costs memory.
MAX_INIT_S = MAX_LATENTS * SAMPLES_PER_LATENT / SAMPLE_RATE
