"""Seamless loops on real demo renders (ONNX Runtime on the CPU): the model loop keeps the
take's length and its audio outside the seam, its wrap passes the seam test the raw take fails,
and it stays seamless through circular resampling to 48 kHz."""

from __future__ import annotations

import numpy as np
import pytest

from engines.audio_io import float_from_pcm16
from engines.catalog import Catalog
from engines.constants import SAMPLE_RATE, SAMPLES_PER_LATENT
from engines.errors import RequestError
from engines.finish.loop import (
    LoopPlan,
    assemble_loop,
    crossfade_loop,
    loop_request,
    make_loop,
    seam_metrics,
    seam_test,
)
from engines.finish.loop_plan import unsteady_edges
from engines.finish.output_format import resample
from engines.generator import Generator
from engines.request import GenerationRequest
from engines.sampling import span_to_latents

AMBIENCES = ("rain", "engine hum")


@pytest.fixture(scope="module")
def generator(tmp_path_factory: pytest.TempPathFactory) -> Generator:
    gen = Generator(Catalog(tmp_path_factory.mktemp("models")))
    yield gen
    gen.close()


@pytest.fixture(scope="module")
def generate(generator: Generator):
    return lambda request: float_from_pcm16(generator.generate(request).pcm)


@pytest.fixture(scope="module")
def takes(generate) -> dict[str, tuple[GenerationRequest, np.ndarray]]:
    """Demo ambiences 4.7 s long: 207270 frames, not a whole number of latents."""
    out = {}
    for i, prompt in enumerate(AMBIENCES):
        request = GenerationRequest(prompt=prompt, seconds=4.7, seed=20 + i, steps=4,
                                    backend="onnxruntime")
        out[prompt] = (request, generate(request))
    return out


def _outside(plan: LoopPlan) -> np.ndarray:
    keep = np.ones(plan.length, dtype=bool)
    keep[plan.span_frames[0]:plan.span_frames[1]] = False
    return keep


@pytest.mark.parametrize("context_s", [1.2, None], ids=["window", "whole-take"])
def test_model_loop_keeps_the_length_and_the_rotated_take_outside_the_seam(
        takes, generate, context_s: float | None) -> None:
    request, take = takes["rain"]
    assert take.shape[0] % SAMPLES_PER_LATENT != 0
    plan = loop_request(request, take, seam_s=0.5, seed=99, context_s=context_s)

    # The request: same prompt and settings, a new seed, one span on the latent grid of its
    # own audio, and the junction (N - rotation) inside the span.
    asked = plan.request
    assert (asked.prompt, asked.steps, asked.model, asked.seed) == ("rain", 4, "demo", 99)
    window = asked.init_audio
    assert window.shape == (plan.window_frames, 2)
    assert round(asked.seconds * SAMPLE_RATE) == plan.window_frames
    (start_s, end_s), = asked.inpaint_spans
    first, stop = span_to_latents(start_s, end_s)
    start, end = plan.span_frames
    assert (first * SAMPLES_PER_LATENT, stop * SAMPLES_PER_LATENT) == (
        start - plan.window_start, end - plan.window_start)
    junction = plan.length - plan.rotation_frames
    assert start < junction < end and end - start >= 5 * SAMPLES_PER_LATENT
    rotated = np.roll(take, -plan.rotation_frames, axis=0)
    np.testing.assert_array_equal(window, rotated[plan.window_start:
                                                  plan.window_start + plan.window_frames])
    if context_s is None:
        assert plan.window_frames == take.shape[0]

    generated = generate(asked)
    assert generated.shape == window.shape
    loop = assemble_loop(take, generated, plan)

    assert loop.shape == take.shape and loop.dtype == np.float32
    outside = _outside(plan)
    np.testing.assert_array_equal(loop[outside], rotated[outside])
    # The backend kept the window outside the span too (to int16 precision, and the take
    # came from int16, so exactly).
    kept = _outside(plan)[plan.window_start:plan.window_start + plan.window_frames]
    np.testing.assert_array_equal(generated[kept], window[kept])
    # Inside, past the backends' 1024-frame edge fades, the audio is the model's.
    inner = slice(start + 1024, end - 1024)
    assert np.abs(loop[inner] - rotated[inner]).mean() > 0.01
    # The wrap joins frames that were neighbours in the take.
    np.testing.assert_array_equal(loop[-1], take[plan.rotation_frames - 1])
    np.testing.assert_array_equal(loop[0], take[plan.rotation_frames])


@pytest.mark.parametrize("prompt", AMBIENCES)
def test_model_loop_wrap_passes_the_seam_test_the_raw_take_fails(takes, generate,
                                                                  prompt: str) -> None:
    request, take = takes[prompt]
    raw = seam_test(take, SAMPLE_RATE)
    assert not raw.passed, raw

    result = make_loop(take, request, generate, seam_s=0.5, measure=True)
    assert result.method == "model" and result.audio.shape == take.shape
    assert result.seed is not None and result.seed != request.seed
    test = seam_test(result.audio, SAMPLE_RATE)
    assert test.passed, test
    assert result.report["seam_passed"] is True
    start_s, end_s = result.seam_span_s
    assert 0 < start_s < end_s < take.shape[0] / SAMPLE_RATE
    assert end_s - start_s >= 0.46


def test_the_former_junction_is_repaired(takes, generate) -> None:
    """Where the take's end met its start there was a step; in the loop, model-written audio
    joins them as smoothly as the loop's ordinary moments."""
    request, take = takes["engine hum"]
    plan = loop_request(request, take, seed=7)
    loop = assemble_loop(take, generate(plan.request), plan)
    junction = plan.length - plan.rotation_frames
    rotated = np.roll(take, -plan.rotation_frames, axis=0)
    ordinary = seam_test(loop, SAMPLE_RATE).interior_p95
    before = seam_metrics(rotated, SAMPLE_RATE, junction)
    after = seam_metrics(loop, SAMPLE_RATE, junction)
    assert before["level_step_db"] > 2 * ordinary["level_step_db"]
    assert all(after[name] < ordinary[name] for name in ordinary), (after, ordinary)


def test_unsteady_take_edges_widen_the_seam(takes) -> None:
    """Demo takes fade in: the span reaches past the fade so the model rewrites it."""
    request, take = takes["rain"]
    head, _ = unsteady_edges(take)
    assert head > 0
    plan = loop_request(request, take, seed=1)
    junction = plan.length - plan.rotation_frames
    assert plan.span_frames[1] - junction >= head
    narrow = loop_request(request, take, seed=1, cover_edges=False)
    width = narrow.span_frames[1] - narrow.span_frames[0]
    assert width == 5 * SAMPLES_PER_LATENT  # 0.5 s snapped to the grid, centred
    assert narrow.span_frames[1] - (narrow.length - narrow.rotation_frames) == width // 2


def test_crossfade_loop_is_shorter_by_the_seam_and_its_wrap_passes(takes) -> None:
    _, take = takes["rain"]
    seam = round(0.5 * SAMPLE_RATE)
    loop = crossfade_loop(take, 0.5)
    assert loop.shape == (take.shape[0] - seam, 2)
    np.testing.assert_array_equal(loop[-1], take[-seam - 1])  # the wrap: former neighbours
    np.testing.assert_allclose(loop[0], take[-seam], atol=0.01)
    np.testing.assert_array_equal(loop[seam:], take[seam:-seam])
    assert seam_test(loop, SAMPLE_RATE).passed

    result = make_loop(take, None, None, seam_s=0.5)
    assert result.method == "crossfade" and result.seed is None
    assert result.audio.shape == loop.shape
    assert seam_test(result.audio, SAMPLE_RATE).passed
    rotation = result.report["rotation_frames"]
    np.testing.assert_array_equal(result.audio, np.roll(loop, -rotation, axis=0))


def test_crossfade_keeps_the_level_of_unrelated_audio() -> None:
    rng = np.random.default_rng(0)
    noise = rng.standard_normal((4 * SAMPLE_RATE, 2)).astype(np.float32) * 0.1
    loop = crossfade_loop(noise, 1.0)
    middle = loop[SAMPLE_RATE // 2 - 4410:SAMPLE_RATE // 2 + 4410]  # the fade's middle
    ratio = np.mean(middle**2) / np.mean(noise**2)
    assert abs(10 * np.log10(ratio)) < 0.5


@pytest.mark.parametrize("prompt", AMBIENCES)
def test_loop_stays_seamless_at_48k_only_when_resampled_circularly(takes, generate,
                                                                   prompt: str) -> None:
    request, take = takes[prompt]
    loop = make_loop(take, request, generate, seed=3).audio
    circular = resample(loop, SAMPLE_RATE, 48000, circular=True)
    plain = resample(loop, SAMPLE_RATE, 48000)
    assert circular.shape == plain.shape == (round(take.shape[0] * 48000 / SAMPLE_RATE), 2)
    assert seam_test(circular, 48000).passed
    # The reference: the loop tiled three times, resampled, the middle period kept (207270
    # frames are whole 147-frame steps, so the circular result starts exactly on the grid).
    tiled = resample(np.concatenate([loop] * 3), SAMPLE_RATE, 48000)
    m = circular.shape[0]
    reference = tiled[m:2 * m]
    edges = np.r_[0:64, m - 64:m]
    circular_error = np.abs(circular[edges] - reference[edges]).max()
    plain_error = np.abs(plain[edges] - reference[edges]).max()
    assert circular_error < 1e-3 < plain_error


def test_short_takes_and_bad_seams_are_refused_with_a_sentence(takes) -> None:
    request, take = takes["rain"]
    with pytest.raises(RequestError, match=r"^The take is 0\.50 s long; a model loop .* "
                                           r"make it by crossfade instead, or use a longer "
                                           r"take\.$"):
        loop_request(request, take[:22050], seed=1)
    with pytest.raises(RequestError, match=r"loop seam 0 s is out of range"):
        loop_request(request, take, seam_s=0)
    with pytest.raises(RequestError, match=r"at most half the take"):
        crossfade_loop(take[:22050], 0.5)
    with pytest.raises(ValueError, match=r"float stereo audio"):
        loop_request(request, take[:, :1], seed=1)
