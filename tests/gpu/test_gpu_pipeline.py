"""The captured GPU pipeline with engine doubles (needs a CUDA GPU; skipped elsewhere)."""

from __future__ import annotations

import dataclasses
import gc
from pathlib import Path

import numpy as np
import pytest

from engines import demo, noise
from engines.backends.eager_pipeline import run_pipeline
from engines.catalog import EngineFiles
from engines.errors import BackendError
from engines.request import GenerationRequest, validate_request
from engines.tokenizer import PromptTokenizer

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def demo_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo.ensure_demo_models(tmp_path_factory.mktemp("demo"))


@pytest.fixture(scope="module")
def files(demo_folder: Path) -> EngineFiles:
    # Only the tokenizer is read; the doubles stand in for the engines.
    return EngineFiles(format="trt", text_encoder=demo_folder / demo.TEXT_ENCODER_FILE,
                       tokenizer=demo_folder / demo.TOKENIZER_FILE,
                       dit=demo_folder / demo.DIT_FILE, decoder=demo_folder / demo.DECODER_FILE,
                       encoder=demo_folder / demo.ENCODER_FILE, codec_tier="canonical",
                       jit_plugin=False)


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory):
    from engines.cuda.api import ensure_context
    from tests.gpu_doubles import load_module

    ensure_context()
    mod = load_module(tmp_path_factory.mktemp("nvrtc"))
    yield mod
    mod.free()


def make_backend(files, module, tmp_path, **double_options):
    from engines.backends.tensorrt.backend import TensorRTBackend
    from tests.gpu_doubles import make_runners

    cache_size = double_options.pop("cache_size", 4)
    return TensorRTBackend(files, cache_size=cache_size, kernel_cache_dir=tmp_path,
                           load_runners=lambda f, sm: make_runners(module, **double_options))


def request(mode: str, seconds: float = 3.0, seed: int = 5, **extra):
    rng = np.random.default_rng(1)
    init = (0.3 * rng.standard_normal((int(seconds * 44100), 2))).astype(np.float32)
    kwargs = dict(prompt="laser sweep", seconds=seconds, seed=seed, steps=8)
    if mode in ("a2a",):
        kwargs.update(init_audio=init, init_noise_level=0.6)
    if mode in ("inpaint", "cfg_inpaint"):
        kwargs.update(init_audio=init, inpaint_spans=[(0.5, 1.2), (2.0, 2.6)])
    if mode in ("cfg", "cfg_inpaint"):
        kwargs.update(cfg=3.5, apg=0.6, negative_prompt="noise")
    kwargs.update(extra)
    return validate_request(GenerationRequest(**kwargs), 380.0)


def cpu_reference(files, req):
    from tests.gpu_doubles import CpuTwins

    return run_pipeline(CpuTwins(), PromptTokenizer(files.tokenizer), req)


@pytest.mark.parametrize(("seed", "stream", "count", "offset"),
                         [(0, 0, 1000, 0), (123456789, 1, 256 * 323 * 7 + 3, 0),
                          (2**32 - 1, 0, 4097, 2**32 - 5)])
def test_gpu_noise_equals_cpu_noise(module, tmp_path, seed, stream, count, offset):
    from engines.backends.tensorrt.kernels import SamplerKernels
    from engines.cuda.api import call
    from engines.cuda.memory import DeviceBuffer, PinnedBuffer
    from engines.cuda.stream import Stream

    kernels = SamplerKernels(tmp_path)
    s = Stream()
    out = DeviceBuffer(4 * count)
    seed_buf = DeviceBuffer(4)
    host_seed = PinnedBuffer((1,), np.uint32)
    host_seed.array[0] = seed
    call("cuMemcpyHtoDAsync", seed_buf.ptr, host_seed.ptr, 4, s.handle)
    kernels.gaussian(s, out.ptr, count, seed_buf.ptr, stream, offset)
    host = PinnedBuffer((count,), np.float32)
    call("cuMemcpyDtoHAsync", host.ptr, out.ptr, 4 * count, s.handle)
    s.synchronize()
    gpu = host.array.copy()
    cpu = noise.gaussian(seed, stream, count, offset)
    assert np.max(np.abs(gpu - cpu)) <= 2e-6
    assert np.mean(gpu == cpu) > 0.999
    for b in (out, seed_buf, host_seed, host):
        b.free()
    kernels.free()
    s.free()


@pytest.mark.parametrize("mode", ["t2a", "a2a", "inpaint", "cfg", "cfg_inpaint"])
def test_replay_equals_eager_and_cpu(files, module, tmp_path, mode):
    backend = make_backend(files, module, tmp_path)
    req = request(mode)
    try:
        first = backend.generate(req)  # eager warm-up, capture, self-checks
        assert first.details["path"] == "capture", first.warnings
        second = backend.generate(req)  # one graph replay
        assert second.details["path"] == "replay"
        np.testing.assert_array_equal(second.step_latents, first.step_latents)
        np.testing.assert_array_equal(second.pcm, first.pcm)
        other = backend.generate(request(mode, seed=6))
        assert not np.array_equal(other.pcm, second.pcm)
    finally:
        backend.close()
    ref = cpu_reference(files, req)
    scale = np.max(np.abs(ref.latents))
    assert np.max(np.abs(second.latents - ref.latents)) <= 1e-5 * scale
    assert np.max(np.abs(second.step_latents - ref.step_latents)) <= 1e-5 * scale
    assert second.pcm.shape == ref.pcm.shape
    assert np.max(np.abs(second.pcm.astype(int) - ref.pcm.astype(int))) <= 1


@pytest.mark.parametrize("mode", ["inpaint", "cfg_inpaint"])
@pytest.mark.parametrize("spans", [[(0.0, 0.7), (2.2, 3.0)], [(1.0, 1.2)]])
def test_paste_back_and_guided_steps_match_numpy_at_span_edges(files, module, tmp_path, mode,
                                                               spans):
    # Spans at the clip's start and end (no fade on the outer side) and one of two latents:
    # the paste-back reads each latent's span from host-made bounds, the CFG step makes the
    # guided velocity in registers; both must still match the numpy pipeline.
    backend = make_backend(files, module, tmp_path)
    req = request(mode, inpaint_spans=spans)
    try:
        first = backend.generate(req)
        second = backend.generate(dataclasses.replace(req, seed=req.seed + 1))
    finally:
        backend.close()
    assert first.details["path"] == "capture" and second.details["path"] == "replay"
    for result, seed in ((first, req.seed), (second, req.seed + 1)):
        ref = cpu_reference(files, dataclasses.replace(req, seed=seed))
        scale = np.max(np.abs(ref.latents))
        assert np.max(np.abs(result.step_latents - ref.step_latents)) <= 1e-5 * scale
        assert np.max(np.abs(result.pcm.astype(int) - ref.pcm.astype(int))) <= 1


def test_false_enqueue_under_capture_falls_back_to_eager(files, module, tmp_path):
    backend = make_backend(files, module, tmp_path, dit={"fail_under_capture": True})
    try:
        first = backend.generate(request("t2a"))
        again = backend.generate(request("t2a"))
    finally:
        backend.close()
    assert first.details["path"] == "eager" and again.details["path"] == "eager"
    assert any("could not be captured" in w and "dit-double" in w for w in first.warnings)
    ref = cpu_reference(files, request("t2a"))
    assert np.max(np.abs(first.latents - ref.latents)) <= 1e-5 * np.max(np.abs(ref.latents))


def test_silently_dropped_decode_is_detected(files, module, tmp_path):
    backend = make_backend(files, module, tmp_path, decoder={"drop_under_capture": True})
    try:
        first = backend.generate(request("t2a", seed=1))
        second = backend.generate(request("t2a", seed=2))
    finally:
        backend.close()
    assert any("identical audio for two different seeds" in w for w in first.warnings)
    assert second.details["path"] == "eager"
    assert not np.array_equal(first.pcm, second.pcm)
    ref = cpu_reference(files, request("t2a", seed=2))
    assert np.max(np.abs(second.pcm.astype(int) - ref.pcm.astype(int))) <= 1


@pytest.mark.parametrize("enqueue_says", [True, False])
def test_invalidated_capture_keeps_the_eager_take_and_pins_the_key(files, module, tmp_path,
                                                                   enqueue_says):
    # The decoder double synchronizes the capturing stream, as a real engine may: CUDA answers
    # 900 and invalidates the capture, every later call in it fails with 901, and so does
    # cuStreamEndCapture. The take made eagerly before the capture must survive.
    backend = make_backend(files, module, tmp_path,
                           decoder={"invalidate_under_capture": enqueue_says})
    try:
        first = backend.generate(request("t2a", seed=3))
        again = backend.generate(request("t2a", seed=4))
        other_length = backend.generate(request("t2a", seconds=5.0, seed=4))
    finally:
        backend.close()
    assert first.details["path"] == again.details["path"] == "eager"
    assert other_length.details["path"] == "eager"
    told = [w for w in first.warnings if "could not be captured" in w]
    assert len(told) == 1 and "CUDA_ERROR_STREAM_CAPTURE" in told[0]
    assert "dec-double" in told[0]
    assert not any("could not be captured" in w for w in again.warnings)  # told once per key
    for result, seed, seconds in ((first, 3, 3.0), (again, 4, 3.0), (other_length, 4, 5.0)):
        ref = cpu_reference(files, request("t2a", seed=seed, seconds=seconds))
        assert np.max(np.abs(result.pcm.astype(int) - ref.pcm.astype(int))) <= 1


def test_each_graph_keeps_its_own_execution_contexts(files, module, tmp_path):
    # The doubles keep the last input length in device-side context state, as TensorRT does.
    # Were one context shared, replaying the 3 s graph after the 10 s one set its shapes would
    # read the 10 s state and the replay check (or the comparison below) would fail.
    backend = make_backend(files, module, tmp_path, cache_size=3)
    try:
        short = backend.generate(request("t2a", seconds=3.0))
        long = backend.generate(request("t2a", seconds=10.0))
        short_again = backend.generate(request("t2a", seconds=3.0))
        long_again = backend.generate(request("t2a", seconds=10.0))
        dit = backend.runners.dit
        assert len(dit.contexts) == 2  # one per graph key
    finally:
        backend.close()
    assert short.details["path"] == long.details["path"] == "capture"
    assert short_again.details["path"] == long_again.details["path"] == "replay"
    np.testing.assert_array_equal(short_again.pcm, short.pcm)
    np.testing.assert_array_equal(long_again.pcm, long.pcm)
    ref = cpu_reference(files, request("t2a", seconds=3.0))
    assert np.max(np.abs(short_again.pcm.astype(int) - ref.pcm.astype(int))) <= 1


def test_inputs_are_bound_in_the_types_the_engines_declare(files, module, tmp_path):
    # t and t5_mask declared float16, seconds_total and limiter_ceiling bfloat16: the doubles
    # widen what they are given, so fp32 bits bound to them would read as garbage.
    backend = make_backend(
        files, module, tmp_path,
        dit={"input_types": {"t": "float16", "t5_mask": "float16",
                             "seconds_total": "bfloat16"}},
        decoder={"input_types": {"limiter_ceiling": "bfloat16"}})
    req = request("cfg_inpaint")
    try:
        first = backend.generate(req)
        second = backend.generate(req)
    finally:
        backend.close()
    assert first.details["path"] == "capture" and second.details["path"] == "replay"
    np.testing.assert_array_equal(second.pcm, first.pcm)
    ref = cpu_reference(files, req)
    scale = np.max(np.abs(ref.latents))
    assert np.max(np.abs(second.latents - ref.latents)) <= 2e-2 * scale  # fp16 sigma rounding
    peak = np.max(np.abs(ref.pcm.astype(int)))
    assert np.max(np.abs(second.pcm.astype(int) - ref.pcm.astype(int))) <= 0.02 * peak


def test_new_init_audio_reaches_a_replayed_graph(files, module, tmp_path):
    # The init audio is copied when it changes, outside the graph: a replay with other audio of
    # the same length must use it, and variations of one audio must not need it copied again.
    backend = make_backend(files, module, tmp_path)
    rng = np.random.default_rng(9)
    other = (0.3 * rng.standard_normal((3 * 44100, 2))).astype(np.float32)
    first_req = request("inpaint")
    other_req = request("inpaint", init_audio=other)
    try:
        backend.generate(first_req)  # eager, capture, checks
        replayed = backend.generate(other_req)
        variation = backend.generate(dataclasses.replace(other_req, seed=other_req.seed + 1))
    finally:
        backend.close()
    assert replayed.details["path"] == variation.details["path"] == "replay"
    for result, req in ((replayed, other_req),
                        (variation, dataclasses.replace(other_req, seed=other_req.seed + 1))):
        ref = cpu_reference(files, req)
        assert np.max(np.abs(result.pcm.astype(int) - ref.pcm.astype(int))) <= 1


def test_non_finite_output_is_an_error(files, module, tmp_path):
    backend = make_backend(files, module, tmp_path, dit={"make_nan": True})
    try:
        with pytest.raises(BackendError, match="NaN"):
            backend.generate(request("t2a"))
    finally:
        backend.close()


def test_cache_eviction_returns_memory(files, module, tmp_path):
    from engines.cuda.api import mem_info

    backend = make_backend(files, module, tmp_path, cache_size=2)
    try:
        backend.generate(request("t2a", seconds=2.0))  # engines, kernels, key A
        backend.generate(request("t2a", seconds=10.0))  # key B
        base_free, _ = mem_info()
        backend.generate(request("t2a", seconds=120.0))  # key C (L=1292) evicts A
        with_big, _ = mem_info()
        assert base_free - with_big > 40 * 2**20  # about 90 MB of buffers for L=1292
        backend.generate(request("t2a", seconds=2.0))  # A again, evicts B
        backend.generate(request("t2a", seconds=5.0))  # D evicts C, the big one
        assert len(backend.cache) == 2
        after, _ = mem_info()
        assert after >= base_free - 8 * 2**20  # only small keys are left: C's memory is back
    finally:
        backend.close()
    closed, _ = mem_info()
    assert closed >= base_free


def test_free_engines_after_use_returns_everything(files, module, tmp_path):
    from engines.backends.tensorrt.backend import TensorRTBackend
    from engines.cuda.api import mem_info
    from tests.gpu_doubles import make_runners

    before, _ = mem_info()
    backend = TensorRTBackend(files, kernel_cache_dir=tmp_path, free_engines_after_use=True,
                              load_runners=lambda f, sm: make_runners(module))
    first = backend.generate(request("t2a", seconds=60.0))
    assert not backend._ready  # engines, graphs and buffers were released
    after, _ = mem_info()
    assert after >= before - 4 * 2**20
    again = backend.generate(request("t2a", seconds=60.0))  # reloads transparently
    np.testing.assert_array_equal(again.pcm, first.pcm)


def test_graph_update_or_reinstantiate(tmp_path):
    from engines.cuda.api import call, ensure_context
    from engines.cuda.graph import CapturedGraph
    from engines.cuda.memory import DeviceBuffer, PinnedBuffer
    from engines.cuda.stream import Stream

    ensure_context()
    stream = Stream()
    buf = DeviceBuffer(64)
    host = PinnedBuffer((64,), np.uint8)
    graph = CapturedGraph()

    def fill(value, twice=False):
        def record():
            call("cuMemsetD8Async", buf.ptr, value, 64, stream.handle)
            if twice:
                call("cuMemsetD8Async", buf.ptr, value + 1, 32, stream.handle)
            call("cuMemcpyDtoHAsync", host.ptr, buf.ptr, 64, stream.handle)
        return record

    graph.capture(stream, fill(1))
    first = graph.exec
    graph.launch(stream)
    stream.synchronize()
    assert host.array.min() == 1
    graph.capture(stream, fill(7))  # same topology: updated in place
    assert int(graph.exec) == int(first)
    graph.launch(stream)
    stream.synchronize()
    assert host.array.min() == 7
    graph.capture(stream, fill(3, twice=True))  # new topology: re-instantiated
    graph.launch(stream)
    stream.synchronize()
    assert host.array[0] == 4 and host.array[40] == 3
    graph.destroy()
    for obj in (buf, host, stream):
        obj.free()


def test_cuda_wrappers(tmp_path):
    from engines.cuda.api import CudaError, call, ensure_context
    from engines.cuda.memory import DeviceBuffer, PinnedBuffer
    from engines.cuda.nvrtc import CompileError, Module
    from engines.cuda.stream import Event, Stream

    ensure_context()
    buf = DeviceBuffer(shape=(10,), dtype=np.float32)
    assert buf.reshape((10,)) is True
    first = buf.ptr
    assert buf.reshape((5,)) is False and buf.ptr == first and buf.capacity == 40
    assert buf.reshape((100,)) is True and buf.capacity == 400
    buf.free()
    buf.free()  # idempotent

    pinned = PinnedBuffer((4,), np.float32)
    view = pinned.array
    view[:] = [1, 2, 3, 4]
    del pinned
    gc.collect()
    assert view.sum() == 10  # the view keeps its owner alive
    view.base.owner.free()

    with pytest.raises(CudaError) as err:
        call("cuMemFree", 12345)
    assert err.value.name.startswith("CUDA_ERROR")

    source = 'extern "C" __global__ void k(float* x) { x[0] = 1.0f; }'
    first_mod = Module(source, "tiny", (), tmp_path)
    second_mod = Module(source, "tiny", (), tmp_path)
    assert not first_mod.from_cache and second_mod.from_cache
    first_mod.free()
    second_mod.free()
    with pytest.raises(CompileError) as compile_err:
        Module("this is not cuda", "broken", (), tmp_path)
    assert "error" in compile_err.value.program_log

    stream = Stream()
    start, end = Event(), Event()
    big = DeviceBuffer(256 * 2**20)
    start.record(stream)
    call("cuMemsetD8Async", big.ptr, 0, big.capacity, stream.handle)
    end.record(stream)
    stream.synchronize()
    assert end.elapsed_ms(start) > 0
    big.free()
    for obj in (start, end, stream):
        obj.free()
