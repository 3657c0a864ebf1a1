"""Generations on the demo model set, end to end through the ONNX Runtime backend."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from engines.catalog import Catalog
from engines.constants import SAMPLES_PER_LATENT
from engines.errors import BackendError, CancelledError
from engines.generator import Generator
from engines.request import GenerationRequest
from tests.demo_support import band_profile, similarity, texture

TEXTURE_WORDS = ("laser", "explosion", "rain", "wind", "footsteps", "bell", "drone", "coin",
                 "engine", "whoosh")


@pytest.fixture(scope="module")
def generator(tmp_path_factory: pytest.TempPathFactory) -> Generator:
    gen = Generator(Catalog(tmp_path_factory.mktemp("models")))
    yield gen
    gen.close()


def make(generator: Generator, prompt: str, **kwargs):
    kwargs.setdefault("seconds", 3.0)
    kwargs.setdefault("backend", "onnxruntime")
    return generator.generate(GenerationRequest(prompt=prompt, **kwargs))


def test_text_to_audio_result(generator: Generator) -> None:
    result = make(generator, "coin pickup, bright, short", seconds=2.0, seed=11, steps=6)
    assert result.pcm.dtype == np.int16 and result.pcm.shape == (88200, 2)
    assert result.latents.shape == (256, 32)  # below the 32-latent codec minimum: padded
    assert result.step_latents.shape == (6, 256, 32)
    np.testing.assert_array_equal(result.step_latents[-1], result.latents)
    assert result.seed == 11 and result.backend == "onnxruntime"
    assert set(result.timings_ms) == {"text", "sample", "decode", "total"}
    assert np.abs(result.pcm).max() > 1000  # audible, not silence
    assert np.abs(result.pcm).max() <= 32767


def test_short_clip_is_trimmed(generator: Generator) -> None:
    result = make(generator, "beep", seconds=0.5, seed=1)
    assert result.pcm.shape == (22050, 2)
    assert result.latents.shape[1] == 32


def test_same_seed_same_bytes_different_seed_different_clip(generator: Generator) -> None:
    a = make(generator, "rain on leaves", seed=42)
    b = make(generator, "rain on leaves", seed=42)
    c = make(generator, "rain on leaves", seed=43)
    assert a.pcm.tobytes() == b.pcm.tobytes()
    assert not np.array_equal(a.pcm, c.pcm)
    assert abs(np.corrcoef(a.pcm[:, 0], c.pcm[:, 0])[0, 1]) < 0.9


def test_random_seed_is_reported_and_reproduces(generator: Generator) -> None:
    first = make(generator, "drone", seconds=1.0)
    assert first.request.seed_was_random and 0 <= first.seed < 2**32
    again = make(generator, "drone", seconds=1.0, seed=first.seed)
    assert first.pcm.tobytes() == again.pcm.tobytes()


def test_keywords_give_recognisably_different_textures(generator: Generator) -> None:
    """A clip of each word, made with a new seed, is closest to that word's reference clip."""
    refs = {w: texture(make(generator, w, seconds=4.0, seed=100).pcm) for w in TEXTURE_WORDS}
    for word in TEXTURE_WORDS:
        probe = texture(make(generator, f"{word} sound", seconds=4.0, seed=7).pcm)
        scores = {other: similarity(probe, ref) for other, ref in refs.items()}
        assert max(scores, key=scores.get) == word, (word, scores)


def test_made_up_words_still_give_distinct_sounds(generator: Generator) -> None:
    prompts = ["zorblat quimmel", "vexhaunt prindle", "glorp", "snaffle wub", "teapot",
               "ocelot migration", "hyperdrive"]
    feats = [texture(make(generator, p, seed=5).pcm) for p in prompts]
    pairs = [similarity(a, b) for i, a in enumerate(feats) for b in feats[i + 1 :]]
    assert np.mean(pairs) < 0.75
    assert max(pairs) < 0.95


def test_negative_prompt_moves_away_from_it(generator: Generator) -> None:
    wind = band_profile(make(generator, "wind", seed=3).pcm)
    plain = make(generator, "rain and wind", seed=3)
    guided = make(generator, "rain and wind", negative_prompt="wind", cfg=3.0, seed=3)
    assert similarity(band_profile(guided.pcm), wind) < similarity(band_profile(plain.pcm),
                                                                   wind) - 0.1


def test_cfg_one_ignores_the_negative_prompt_and_says_so(generator: Generator) -> None:
    plain = make(generator, "bell", seed=8)
    with_negative = make(generator, "bell", negative_prompt="metal", seed=8)
    assert plain.pcm.tobytes() == with_negative.pcm.tobytes()
    assert any("negative prompt" in w for w in with_negative.warnings)


def test_empty_negative_prompt_with_cfg_runs_both_branches(generator: Generator) -> None:
    plain = make(generator, "laser", seed=8, apg=0.0)
    guided = make(generator, "laser", seed=8, cfg=4.0, apg=0.0)
    assert not np.array_equal(plain.pcm, guided.pcm)


def _foreign_audio(path: Path, seconds: float) -> np.ndarray:
    """A 48 kHz FLAC of a chirp and clicks: nothing the demo could have made."""
    t = np.arange(int(seconds * 48000)) / 48000
    left = 0.4 * np.sin(2 * np.pi * (300 * t + 150 * t**2))
    right = 0.3 * np.sign(np.sin(2 * np.pi * 2 * t)) * np.exp(-(t % 0.5) * 20)
    sf.write(path, np.stack([left, right], axis=1), 48000, subtype="PCM_24")
    from engines.audio_io import read_audio

    return read_audio(path)


@pytest.mark.parametrize("source", ["demo take", "foreign flac"])
def test_inpainting_keeps_the_audio_outside_the_spans(generator: Generator, tmp_path: Path,
                                                      source: str) -> None:
    if source == "demo take":
        init = make(generator, "rain", seconds=4.0, seed=2).pcm.astype(np.float32) / 32767
        init_arg = init
    else:
        init_arg = tmp_path / "init.flac"
        init = _foreign_audio(init_arg, 4.0)
    spans = [(0.5, 1.2), (2.6, 3.3)]
    result = make(generator, "explosion", seconds=4.0, seed=4, init_audio=init_arg,
                  inpaint_spans=spans)
    out = result.pcm.astype(np.float32) / 32767
    inside = np.zeros(len(out), bool)
    for start, end in result.request.regen_spans_latent:
        inside[start * SAMPLES_PER_LATENT : end * SAMPLES_PER_LATENT] = True
    for ch in range(2):
        assert np.corrcoef(out[~inside, ch], init[~inside, ch])[0, 1] >= 0.99
        assert abs(np.corrcoef(out[inside, ch], init[inside, ch])[0, 1]) < 0.8
    # the sampler itself kept the init latents outside the spans, every step
    keep = result.request.keep_mask().astype(bool)
    for step in result.step_latents:
        np.testing.assert_array_equal(step[:, keep], result.latents[:, keep])


def test_inpainting_latents_match_the_encoded_init(generator: Generator) -> None:
    """For a demo take, the codec is an exact inverse: kept latents equal the take's latents."""
    take = make(generator, "bell", seconds=4.0, seed=6)
    init = take.pcm.astype(np.float32) / 32767
    result = make(generator, "laser", seconds=4.0, seed=1, init_audio=init,
                  inpaint_spans=[(1.0, 2.0)])
    keep = result.request.keep_mask().astype(bool)
    ref = take.latents[:, keep]
    err = np.abs(result.latents[:, keep] - ref).max() / np.abs(ref).max()
    assert err < 0.05


def test_audio_to_audio_strength(generator: Generator) -> None:
    init_take = make(generator, "footsteps", seconds=4.0, seed=9)
    init = init_take.pcm.astype(np.float32) / 32767
    target = band_profile(make(generator, "bell", seconds=4.0, seed=9).pcm)
    source = band_profile(init_take.pcm)
    light = band_profile(make(generator, "bell", seconds=4.0, seed=9, init_audio=init,
                              init_noise_level=0.1).pcm)
    heavy = band_profile(make(generator, "bell", seconds=4.0, seed=9, init_audio=init,
                              init_noise_level=0.9).pcm)
    assert similarity(light, source) > 0.9
    assert similarity(heavy, target) > 0.9
    assert similarity(light, source) > similarity(heavy, source) + 0.2


def test_progress_and_cancel(generator: Generator) -> None:
    seen: list[tuple[str, int, int]] = []
    generator.generate(GenerationRequest(prompt="wind", seconds=1.0, seed=1, steps=4,
                                         backend="onnxruntime"),
                       progress=lambda *p: seen.append(p))
    assert seen[0] == ("text", 0, 1)
    assert [p for p in seen if p[0] == "sample"] == [("sample", i, 4) for i in range(5)]
    assert seen[-1] == ("decode", 1, 1)

    def cancel_after_two_steps() -> bool:
        return sum(1 for p in seen2 if p[0] == "sample" and p[1] > 0) >= 2

    seen2: list[tuple[str, int, int]] = []
    with pytest.raises(CancelledError):
        generator.generate(GenerationRequest(prompt="wind", seconds=1.0, seed=1, steps=8,
                                             backend="onnxruntime"),
                           progress=lambda *p: seen2.append(p), cancel=cancel_after_two_steps)
    assert max(p[1] for p in seen2 if p[0] == "sample") == 2


def test_non_finite_latents_are_an_error_not_a_wav(generator: Generator, monkeypatch) -> None:
    backend = generator._backend_for(generator.resolve(
        generator.validate(GenerationRequest(prompt="x", backend="onnxruntime"))))
    monkeypatch.setattr(backend, "dit", lambda x, *a: np.full_like(x, np.nan))
    with pytest.raises(BackendError, match="NaN"):
        make(generator, "anything", seconds=1.0, seed=1)
