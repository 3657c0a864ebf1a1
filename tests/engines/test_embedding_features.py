"""The sound embedding's audio part on synthetic families: each family one kind of sound (a
plucked tone, a hiss, a rumble, a click train, a chirp, a hit), its members varied the way
takes of one sound vary (pitch and length a few percent, level by tens of dB, a little noise,
another sample rate). The oracle is which recipe made each sound, never the embedding."""

from __future__ import annotations

import numpy as np
import pytest
import soxr

from engines.similarity.audio_features import AUDIO_FEATURES, audio_features
from engines.similarity.embedding import AUDIO_DIMS, EMBEDDING_DIM, take_embedding
from tests.sound_families import nearest_sibling_rates, random_expectation

RATE = 44100
MEMBERS = 4


def _noise(rng: np.random.Generator, seconds: float) -> np.ndarray:
    return rng.standard_normal(int(seconds * RATE))


def _smoothed(signal: np.ndarray, width: int) -> np.ndarray:
    """A crude low-pass: the moving average over `width` samples."""
    return np.convolve(signal, np.ones(width) / width, mode="same")


def _pluck(rng, jitter, seconds):
    t = np.arange(int(0.5 * seconds * RATE)) / RATE
    pitch = 330.0 * jitter
    tone = sum(np.sin(2 * np.pi * pitch * k * t) / k for k in range(1, 6))
    return tone * np.exp(-t * 6.0)


def _hiss(rng, jitter, seconds):
    noise = _noise(rng, 1.2 * seconds)
    high = noise - _smoothed(noise, int(4 * jitter))  # everything above a few kHz
    return high * np.hanning(high.size) ** 0.2


def _rumble(rng, jitter, seconds):
    return _smoothed(_smoothed(_noise(rng, 2.0 * seconds), int(150 * jitter)), 100) * 20.0


def _clicks(rng, jitter, seconds):
    out = np.zeros(int(1.0 * seconds * RATE))
    step = int(RATE / (12.0 * jitter))
    out[::step] = 1.0
    return _smoothed(out, 8) * 4.0


def _chirp(rng, jitter, seconds):
    t = np.arange(int(0.7 * seconds * RATE)) / RATE
    frequency = 300.0 * jitter * (10.0 ** (t / t[-1]))
    return np.sin(2 * np.pi * np.cumsum(frequency) / RATE) * np.hanning(t.size)


def _hit(rng, jitter, seconds):
    t = np.arange(int(0.15 * seconds * RATE)) / RATE
    return _smoothed(_noise(rng, 0.15 * seconds), int(3 * jitter)) * np.exp(-t * 40.0)


FAMILIES = (_pluck, _hiss, _rumble, _clicks, _chirp, _hit)


def _member(make, rng: np.random.Generator, index: int) -> np.ndarray:
    """One take of a sound: pitch and length within a few percent, level within 30 dB, faint
    noise, and the last member of each family recorded at 22.05 kHz (its top octave empty)."""
    sound = make(rng, rng.uniform(0.97, 1.03), rng.uniform(0.9, 1.1))
    sound = sound / np.abs(sound).max() * 10.0 ** (rng.uniform(-30.0, 0.0) / 20.0)
    sound = sound + rng.standard_normal(sound.size) * 1e-4
    if index == MEMBERS - 1:
        sound = soxr.resample(soxr.resample(sound, RATE, 22050), 22050, RATE)
    stereo = np.stack([sound, sound], axis=1).astype(np.float32)
    return np.clip(stereo, -1.0, 1.0)


@pytest.fixture(scope="module")
def family_sounds() -> tuple[list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(20261206)
    sounds = [_member(make, rng, i) for make in FAMILIES for i in range(MEMBERS)]
    return sounds, np.repeat(np.arange(len(FAMILIES)), MEMBERS)


def test_every_sound_finds_a_sibling_first(family_sounds):
    sounds, labels = family_sounds
    vectors = np.stack([take_embedding(s, RATE) for s in sounds])
    top1, precision = nearest_sibling_rates(vectors, labels, k=MEMBERS - 1)
    assert random_expectation(labels) < 0.2
    assert top1 == 1.0
    assert precision >= 0.9


def test_level_does_not_change_what_a_sound_is_like(family_sounds):
    sounds, _ = family_sounds
    for sound in sounds[::MEMBERS]:
        # 40 dB quieter: only its faint noise floor comes closer (a level feature would not)
        loud, quiet = take_embedding(sound, RATE), take_embedding(sound * 0.01, RATE)
        assert float(loud @ quiet) > 0.99


def test_the_audio_part_fills_the_embedding_and_is_finite(family_sounds):
    sounds, _ = family_sounds
    assert AUDIO_DIMS == AUDIO_FEATURES < EMBEDDING_DIM
    for sound in (sounds[0], np.zeros((10, 2), np.float32), np.zeros((RATE, 2), np.float32)):
        features = audio_features(sound, RATE)
        assert features.shape == (AUDIO_FEATURES,) and np.all(np.isfinite(features))
        vector = take_embedding(sound, RATE)
        assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5
