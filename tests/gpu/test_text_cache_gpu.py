"""The text encoder's output cache on the captured TensorRT pipeline (engine doubles; needs a
CUDA GPU, skipped elsewhere): a change of seed, length or knobs replays without the text
encoder, the bytes are those of a take that ran it, and a text graph that lost its work is
caught by the capture check."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from engines import demo
from engines.backends.eager_pipeline import run_pipeline
from engines.backends.tensorrt.backend import TensorRTBackend
from engines.backends.tensorrt.device_text_cache import DeviceTextCache
from engines.catalog import EngineFiles
from engines.cuda.api import ensure_context
from engines.request import GenerationRequest, validate_request
from engines.tokenizer import PromptTokenizer
from tests.gpu_doubles import CpuTwins, load_module, make_runners

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> EngineFiles:
    folder = demo.ensure_demo_models(tmp_path_factory.mktemp("demo"))
    # Only the tokenizer is read; the doubles stand in for the engines.
    return EngineFiles(format="trt", text_encoder=folder / demo.TEXT_ENCODER_FILE,
                       tokenizer=folder / demo.TOKENIZER_FILE, dit=folder / demo.DIT_FILE,
                       decoder=folder / demo.DECODER_FILE, encoder=folder / demo.ENCODER_FILE,
                       codec_tier="canonical", jit_plugin=False)


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory):
    ensure_context()
    mod = load_module(tmp_path_factory.mktemp("nvrtc"))
    yield mod
    mod.free()


def make_backend(files: EngineFiles, module, tmp_path: Path, texts: int | None = None,
                 **double_options):
    backend = TensorRTBackend(files, kernel_cache_dir=tmp_path,
                              load_runners=lambda f, sm: make_runners(module, **double_options))
    if texts is not None:
        backend.text_cache = DeviceTextCache(texts)
    return backend


def request(prompt: str = "laser sweep", seconds: float = 3.0, seed: int = 5, **extra):
    return validate_request(GenerationRequest(prompt=prompt, seconds=seconds, seed=seed,
                                              steps=8, **extra), 380.0)


def encoder_runs(backend) -> int:
    """Text encoder runs over every cached graph key (eager runs and text-graph replays)."""
    cache = getattr(backend, "cache", None)  # made when the engines load, at the first take
    return 0 if cache is None else sum(cache.get(key).text.runs for key in cache.keys())


def cpu_pcm(files: EngineFiles, req) -> np.ndarray:
    return run_pipeline(CpuTwins(), PromptTokenizer(files.tokenizer), req).pcm


def test_seed_length_and_prompt_revisits_skip_the_text_encoder(files, module, tmp_path):
    cached = make_backend(files, module, tmp_path)
    plain = make_backend(files, module, tmp_path, texts=0)
    steps = [("first take", request(seed=5)),
             ("new seed", request(seed=6)),
             ("new length", request(seconds=5.0, seed=6)),
             ("new prompt", request(prompt="glass shatter", seed=6)),
             ("prompt back", request(seed=9))]
    runs: dict[str, int] = {}
    try:
        for name, req in steps:
            before = encoder_runs(cached)
            with_cache = cached.generate(req)
            runs[name] = encoder_runs(cached) - before
            without = plain.generate(req)
            # The same bytes whether the hidden states came from the cache or the encoder.
            np.testing.assert_array_equal(with_cache.step_latents, without.step_latents)
            np.testing.assert_array_equal(with_cache.pcm, without.pcm)
            assert np.max(np.abs(with_cache.pcm.astype(int) - cpu_pcm(files, req).astype(int))
                          ) <= 1, name
            if name in ("new seed", "prompt back"):
                assert with_cache.details["path"] == "replay"
    finally:
        cached.close()
        plain.close()
    assert runs["new seed"] == 0 and runs["prompt back"] == 0
    assert runs["new prompt"] == 1
    # A new length is a new graph: its capture check replays the text graph once; the take
    # itself copied the prompt's hidden states from the cache.
    assert runs["new length"] == 1


def test_cfg_encodes_only_the_branch_whose_text_changed(files, module, tmp_path):
    backend = make_backend(files, module, tmp_path)
    first = request(cfg=3.5, apg=0.6, negative_prompt="noise")
    edited = dataclasses.replace(first, prompt="laser sweep, bright", seed=6)
    try:
        backend.generate(first)
        before = encoder_runs(backend)
        result = backend.generate(edited)
        assert encoder_runs(backend) - before == 1  # the prompt; the negative prompt was held
    finally:
        backend.close()
    assert result.details["path"] == "replay"
    assert np.max(np.abs(result.pcm.astype(int) - cpu_pcm(files, edited).astype(int))) <= 1


def test_the_cache_is_bounded_and_freed_with_the_engines(files, module, tmp_path):
    backend = make_backend(files, module, tmp_path, texts=2)
    try:
        for prompt in ("one", "two", "three", "one"):
            backend.generate(request(prompt=prompt))
        assert len(backend.text_cache) == 2
        assert "one" in backend.text_cache and "three" in backend.text_cache
    finally:
        backend.close()
    assert len(backend.text_cache) == 0


def test_a_text_graph_that_lost_its_work_is_caught(files, module, tmp_path):
    backend = make_backend(files, module, tmp_path, text={"drop_under_capture": True})
    req = request()
    try:
        first = backend.generate(req)
        again = backend.generate(dataclasses.replace(req, seed=6))
    finally:
        backend.close()
    assert first.details["path"] == "eager" and again.details["path"] == "eager"
    assert any("did not reproduce" in w for w in first.warnings)
    assert np.max(np.abs(again.pcm.astype(int) - cpu_pcm(
        files, dataclasses.replace(req, seed=6)).astype(int))) <= 1
