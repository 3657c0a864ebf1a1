"""The text encoder's output cache on the stage-by-stage pipeline (ONNX Runtime, the demo): a
change of seed, length or knobs skips the text encoder, the bytes are those of a take that ran
it, the cache is small and dies with its text encoder."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from engines import demo
from engines.backends.onnxruntime import OnnxRuntimeBackend
from engines.backends.text_cache import TextEncodingCache
from engines.catalog import EngineFiles
from engines.constants import TEXT_TOKENS
from engines.request import GenerationRequest, validate_request


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> EngineFiles:
    folder = demo.ensure_demo_models(tmp_path_factory.mktemp("demo"))
    return EngineFiles(format="onnx", text_encoder=folder / demo.TEXT_ENCODER_FILE,
                       tokenizer=folder / demo.TOKENIZER_FILE, dit=folder / demo.DIT_FILE,
                       decoder=folder / demo.DECODER_FILE, encoder=folder / demo.ENCODER_FILE,
                       codec_tier="canonical")


class CountingBackend:
    """A demo backend whose text encoder runs are counted (texts in order)."""

    def __init__(self, files: EngineFiles, cache: TextEncodingCache | None = None) -> None:
        self.backend = OnnxRuntimeBackend(files, threads=1)
        if cache is not None:
            self.backend.text_cache = cache
        self.encoded: list[int] = []
        encode = self.backend.encode_text

        def counted(input_ids, attention_mask):
            self.encoded.append(int(attention_mask.sum()))
            return encode(input_ids, attention_mask)

        self.backend.encode_text = counted  # run_pipeline calls the stage through the instance

    def generate(self, req):
        return self.backend.generate(req)


def request(prompt: str = "rain on a tin roof", seconds: float = 1.0, seed: int = 3, **extra):
    return validate_request(GenerationRequest(prompt=prompt, seconds=seconds, seed=seed,
                                              steps=4, **extra), 30.0)


def test_a_change_of_seed_length_or_knobs_skips_the_text_encoder(files) -> None:
    counted = CountingBackend(files)
    plain = CountingBackend(files, TextEncodingCache(capacity=0))
    takes = [request(), request(seed=4), request(seconds=2.0, seed=4),
             request(seed=4, cfg=3.0, negative_prompt="wind"),
             request(seed=5, cfg=4.0, apg=0.5, negative_prompt="wind"),
             request(prompt="glass shatter", seed=5), request(seed=6)]
    for req in takes:
        with_cache, without = counted.generate(req), plain.generate(req)
        np.testing.assert_array_equal(with_cache.pcm, without.pcm)
        np.testing.assert_array_equal(with_cache.step_latents, without.step_latents)
    # rain..., wind, glass shatter: each text once; without a cache, every text of every take.
    assert len(counted.encoded) == 3
    assert len(plain.encoded) == sum(2 if req.use_cfg else 1 for req in takes)
    assert counted.backend.text_cache.hits == len(plain.encoded) - 3


def test_a_cached_take_still_warns_of_a_truncated_prompt(files) -> None:
    backend = OnnxRuntimeBackend(files, threads=1)
    long_prompt = " ".join(["thunder"] * (TEXT_TOKENS + 20))
    first = backend.generate(request(prompt=long_prompt))
    again = backend.generate(request(prompt=long_prompt, seed=9))
    assert backend.text_cache.hits == 1
    for result in (first, again):
        assert any(f"only the first {TEXT_TOKENS}" in w for w in result.warnings)


def test_the_cache_is_small_and_least_recently_used_goes_first(files) -> None:
    counted = CountingBackend(files, TextEncodingCache(capacity=2))
    for prompt in ("one", "two", "one", "three", "one", "two"):
        counted.generate(request(prompt=prompt))
    # one, two, (one cached), three evicts two, (one cached), two again evicts three
    assert len(counted.encoded) == 4
    assert len(counted.backend.text_cache) == 2


def test_the_cache_dies_with_its_text_encoder(files, tmp_path: Path) -> None:
    backend = OnnxRuntimeBackend(files, threads=1)
    backend.generate(request())
    assert len(backend.text_cache) == 1
    backend.close()  # the generator closes a backend when its model set goes
    assert len(backend.text_cache) == 0
    other = CountingBackend(files)  # a model change makes a new backend: nothing carried over
    other.generate(request())
    assert len(other.encoded) == 1


def test_cached_encodings_cannot_be_changed_by_a_take(files) -> None:
    backend = OnnxRuntimeBackend(files, threads=1)
    req = request()
    backend.generate(req)
    cache = backend.text_cache
    encoded = cache.encode(req.prompt, backend.tokenizer.encode, backend.encode_text)
    with pytest.raises(ValueError):
        encoded.hidden[...] = 0.0
    assert cache.hits == 1
    again = backend.generate(dataclasses.replace(req))
    first = OnnxRuntimeBackend(files, threads=1).generate(req)
    np.testing.assert_array_equal(again.pcm, first.pcm)
