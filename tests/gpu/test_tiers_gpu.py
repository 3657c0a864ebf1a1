"""TensorRT and codec tiers (needs a CUDA GPU; skipped elsewhere): a tier change loads the
other decoder beside the DiT, keys its own graph and leaves the other tier's graph captured;
decode-only comparisons run no DiT and no graph. Engine doubles (tests.gpu_doubles) stand in
for the engines, one decoder double per tier with its own gain."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from engines import demo
from engines.request import GenerationRequest, validate_request

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu_module(tmp_path_factory: pytest.TempPathFactory):
    from engines.cuda.api import ensure_context
    from tests.gpu_doubles import load_module

    ensure_context()
    mod = load_module(tmp_path_factory.mktemp("nvrtc"))
    yield mod
    mod.free()


@pytest.fixture(scope="module")
def trt_files(tmp_path_factory: pytest.TempPathFactory):
    """Canonical and fp8 codec files (only the tokenizer is read: doubles are the engines)."""
    from engines.catalog import EngineFiles

    folder = demo.ensure_demo_models(tmp_path_factory.mktemp("demo"))
    canonical = EngineFiles(format="trt", text_encoder=folder / demo.TEXT_ENCODER_FILE,
                            tokenizer=folder / demo.TOKENIZER_FILE, dit=folder / demo.DIT_FILE,
                            decoder=folder / "dec_bf16.trt", encoder=folder / "enc_bf16.trt",
                            codec_tier="canonical")
    tiers = {"canonical": canonical}
    for tier in ("fp8", "fp8_fast"):
        tiers[tier] = dataclasses.replace(canonical, decoder=folder / f"dec_{tier}.trt",
                                          encoder=folder / f"enc_{tier}.trt", codec_tier=tier)
    return tiers


SCALES = {"canonical": 6000.0, "fp8": 4500.0, "fp8_fast": 3000.0}  # each tier's decoder double


def _trt_backend(files, module, tmp_path, loads: list, **kw):
    from engines.backends.tensorrt.backend import TensorRTBackend
    from engines.backends.tensorrt.codecs import LoadedCodec
    from tests.gpu_doubles import DecoderDouble, EncoderDouble, make_runners

    def load_codec(f, sm):
        loads.append(f.codec_tier)
        return LoadedCodec(DecoderDouble(module, scale=SCALES[f.codec_tier],
                                         name=f"dec-{f.codec_tier}"), EncoderDouble(module))

    def load_runners(f, sm):
        loads.append(f"all:{f.codec_tier}")
        runners = make_runners(module)
        runners.decoder.close()  # the first codec is that of `f`, as a real load would be
        runners.decoder = DecoderDouble(module, scale=SCALES[f.codec_tier],
                                        name=f"dec-{f.codec_tier}")
        return runners

    return TensorRTBackend(files, kernel_cache_dir=tmp_path, load_runners=load_runners,
                           load_codec=load_codec, **kw)


def _gpu_request(mode: str = "t2a", **extra):
    kwargs = dict(prompt="laser sweep", seconds=3.0, seed=5, steps=8)
    if mode == "inpaint":
        rng = np.random.default_rng(1)
        kwargs.update(init_audio=(0.3 * rng.standard_normal((3 * 44100, 2))).astype(np.float32),
                      inpaint_spans=[(0.5, 1.2)])
    kwargs.update(extra)
    return validate_request(GenerationRequest(**kwargs), 380.0)


@pytest.mark.parametrize("mode", ["t2a", "inpaint"])
def test_tensorrt_tier_switch_keeps_the_dit_and_the_other_tiers_graph(
        trt_files, gpu_module, tmp_path, mode) -> None:
    from engines.backends.eager_pipeline import run_pipeline
    from engines.tokenizer import PromptTokenizer
    from tests.gpu_doubles import CpuTwins

    loads: list = []
    backend = _trt_backend(trt_files["canonical"], gpu_module, tmp_path, loads)
    req = _gpu_request(mode)
    try:
        first = backend.generate(req)
        assert first.details["path"] == "capture" and first.codec_tier == "canonical"
        dit = backend.runners.dit
        backend.use_codec(trt_files["fp8"])
        fast = backend.generate(req)
        assert fast.details["path"] == "capture"  # its own graph: the decode is inside it
        assert fast.codec_tier == "fp8" and fast.files.decoder.name == "dec_fp8.trt"
        assert backend.runners.dit is dit and loads == ["all:canonical", "fp8"]
        np.testing.assert_array_equal(fast.latents, first.latents)  # same sampling
        assert not np.array_equal(fast.pcm, first.pcm)
        twins = CpuTwins()
        twins.decode_scale = SCALES["fp8"]
        ref = run_pipeline(twins, PromptTokenizer(trt_files["fp8"].tokenizer), req)
        assert np.abs(fast.pcm.astype(int) - ref.pcm.astype(int)).max() <= 1
        assert len({k.codec for k in backend.cache.keys()}) == 2

        backend.use_codec(trt_files["canonical"])
        back = backend.generate(req)
        assert back.details["path"] == "replay"  # not captured again
        np.testing.assert_array_equal(back.pcm, first.pcm)
        assert loads == ["all:canonical", "fp8"]  # nothing loaded again

        # Decode-only: the same latents through either tier, no DiT, no new graph.
        dit_runs, graphs = dit.enqueues, backend.cache.keys()
        own, _ = backend.decode_latents(first.latents, req, trt_files["canonical"])
        other, ms = backend.decode_latents(first.latents, req, trt_files["fp8"])
        np.testing.assert_array_equal(own, first.pcm)
        np.testing.assert_array_equal(other, fast.pcm)
        assert dit.enqueues == dit_runs and backend.cache.keys() == graphs and ms >= 0.0
    finally:
        backend.close()


def test_tensorrt_unloads_the_oldest_codec_with_its_graphs(trt_files, gpu_module,
                                                           tmp_path) -> None:
    loads: list = []
    backend = _trt_backend(trt_files["canonical"], gpu_module, tmp_path, loads,
                           codec_capacity=2)
    req = _gpu_request()
    try:
        backend.generate(req)
        old_decoder = backend.runners.decoder
        for tier in ("fp8", "fp8_fast"):
            backend.use_codec(trt_files[tier])
            backend.generate(req)
        kept = {k.split(":", 1)[0] for k in backend.codecs.keys()}
        assert kept == {"fp8", "fp8_fast"}
        assert {k.codec.split(":", 1)[0] for k in backend.cache.keys()} == kept
        assert old_decoder.contexts and all(c.state.ptr == 0 for c in old_decoder.contexts)
    finally:
        backend.close()
