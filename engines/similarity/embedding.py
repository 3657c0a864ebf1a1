"""A take's sound embedding: one float32 vector of EMBEDDING_DIM, L2-normalised, so the cosine
distance of two takes is 1 - dot(a, b) (0 = same sound, 1 = unrelated, up to 2 = opposite).

The vector has two parts, each L2-normalised on its own and weighted so the whole has norm 1:

    [0, LATENT_DIMS)              the take's final latents (256, L): per-channel mean and spread
                                  over time, projected to LATENT_DIMS by a fixed random matrix.
                                  Latent spaces differ per model set (codec), so this part is only
                                  comparable between takes whose `space` (model_space) is equal.
    [LATENT_DIMS, EMBEDDING_DIM)  model-independent audio features of the PCM (log-mel shape,
                                  its steadiness and motion, loudness contour, length):
                                  comparable always.

A take's latent space is its codec (the decoder key: "same-s", "same-l", "demo"; every model set
on one codec shares it). Takes of one space compare on the whole vector; takes of different
spaces, or without latents (space ""), compare on the audio part alone (`audio_part`,
renormalised): see engines.similarity.index. The projection matrix is drawn from engines.noise
(our own documented generator), so it never changes with numpy. EMBEDDING_VERSION names the
recipe: stored vectors of another version are computed again.
"""

from __future__ import annotations

import numpy as np

from engines import noise
from engines.constants import LATENT_CHANNELS, SAMPLES_PER_LATENT
from engines.similarity.audio_features import AUDIO_FEATURES, audio_features

EMBEDDING_DIM: int = 128
EMBEDDING_VERSION: int = 2  # 2: audio features measured on real recordings (bench_sound_search)
AUDIO_DIMS: int = AUDIO_FEATURES
LATENT_DIMS: int = EMBEDDING_DIM - AUDIO_DIMS
LATENT_WEIGHT = 0.7  # share of the squared norm given to the latent part when there is one

_PROJECTION_SEED = 0x5A3E_3B0D  # fixed forever: stored embeddings depend on it
_PROJECTION_STREAM = 7
_projection: np.ndarray | None = None


def _latent_projection() -> np.ndarray:
    global _projection
    if _projection is None:
        rows = 2 * LATENT_CHANNELS
        _projection = noise.gaussian(_PROJECTION_SEED, _PROJECTION_STREAM, (rows, LATENT_DIMS))
    return _projection


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 1e-12 else np.zeros_like(vector)


def latent_features(latents: np.ndarray) -> np.ndarray:
    """(LATENT_DIMS,) float32 unit vector from final latents (256, L)."""
    lat = np.asarray(latents, dtype=np.float32)
    if lat.ndim == 3:
        lat = lat[0]
    # Mean level per channel, and how much each channel moves relative to the others (log
    # spread minus its mean: a raw spread is all positive and would point every take one way).
    log_spread = np.log(lat.std(axis=1) + 1e-3)
    stats = np.concatenate([_unit(lat.mean(axis=1)), _unit(log_spread - log_spread.mean())])
    return _unit(stats @ _latent_projection()).astype(np.float32)


def take_embedding(pcm: np.ndarray, sample_rate: int,
                   latents: np.ndarray | None = None) -> np.ndarray:
    """(EMBEDDING_DIM,) float32, L2-normalised, of a take's audio and (when known) its final
    latents. Without latents the latent part is zero and the audio part has the whole norm."""
    audio = _unit(audio_features(pcm, sample_rate))
    vector = np.zeros(EMBEDDING_DIM, dtype=np.float32)
    if latents is None or np.asarray(latents).size == 0:
        vector[LATENT_DIMS:] = audio
    else:
        # Only the latents under the samples the take kept: a short take is generated at the
        # codec's minimum length and trimmed, and encoded audio has silence there instead.
        heard = max(1, -(-int(np.asarray(pcm).shape[0]) // SAMPLES_PER_LATENT))
        lat = np.asarray(latents, dtype=np.float32)
        lat = (lat[0] if lat.ndim == 3 else lat)[:, :heard]
        vector[:LATENT_DIMS] = np.sqrt(LATENT_WEIGHT) * latent_features(lat)
        vector[LATENT_DIMS:] = np.sqrt(1.0 - LATENT_WEIGHT) * audio
    return _unit(vector).astype(np.float32)


def audio_part(vectors: np.ndarray) -> np.ndarray:
    """The model-independent part of one or more embeddings, renormalised to unit length."""
    part = np.asarray(vectors, dtype=np.float32)[..., LATENT_DIMS:]
    norms = np.linalg.norm(part, axis=-1, keepdims=True)
    return part / np.maximum(norms, 1e-12)


def has_latent_part(vector: np.ndarray) -> bool:
    """Whether an embedding carries latent features (else only its audio part means anything)."""
    return bool(np.any(np.asarray(vector)[:LATENT_DIMS] != 0))
