"""Contract tests for TrtEngine against the strict TensorRT 10 fake (no GPU, no TensorRT)."""

from __future__ import annotations

import gc
import logging
import subprocess
import sys
import textwrap
import weakref
from pathlib import Path

import pytest

from engines.backends.tensorrt.context import TrtContext
from engines.backends.tensorrt.engine import TrtEngine
from engines.backends.tensorrt.engine_error import EngineError
from engines.backends.tensorrt.runners import EngineRunner
from engines.backends.tensorrt.runtime import make_logger
from engines.backends.tensorrt.tensor_spec import DTYPES, TensorSpec
from engines.errors import BackendError
from tests import fake_tensorrt
from tests.fake_tensorrt import make_engine_bytes

REPO_ROOT = Path(__file__).resolve().parents[2]
MIB = 1 << 20
ALIGN = 256


@pytest.fixture
def trt(monkeypatch: pytest.MonkeyPatch):
    return fake_tensorrt.install(monkeypatch)


def _dit_io(min_len: int = 1) -> list[dict]:
    dyn = [[1, 256, min_len], [1, 256, 1292], [1, 256, 4096]]
    cond = [[1, 257, min_len], [1, 257, 1292], [1, 257, 4096]]
    return [
        {"name": "x", "mode": "INPUT", "dtype": "FLOAT", "shape": [1, 256, -1], "profile": dyn},
        {"name": "t", "mode": "INPUT", "dtype": "FLOAT", "shape": [1]},
        {"name": "t5_hidden", "mode": "INPUT", "dtype": "FLOAT", "shape": [1, 256, 768]},
        {"name": "t5_mask", "mode": "INPUT", "dtype": "FLOAT", "shape": [1, 256]},
        {"name": "seconds_total", "mode": "INPUT", "dtype": "FLOAT", "shape": [1]},
        {"name": "local_add_cond", "mode": "INPUT", "dtype": "FLOAT", "shape": [1, 257, -1],
         "profile": cond},
        {"name": "velocity", "mode": "OUTPUT", "dtype": "FLOAT", "shape": [1, 256, -1],
         "rule": {"2": ["x", 2, 1, 1]}},
    ]


def _decoder_io(output: str = "pcm", limiter: bool = True) -> list[dict]:
    io = [{"name": "latent", "mode": "INPUT", "dtype": "FLOAT", "shape": [1, 256, -1],
           "profile": [[1, 256, 32], [1, 256, 1292], [1, 256, 4096]]}]
    if limiter:
        io.append({"name": "limiter_ceiling", "mode": "INPUT", "dtype": "FLOAT", "shape": []})
    if output == "audio":
        io.append({"name": "audio", "mode": "OUTPUT", "dtype": "HALF", "shape": [1, 2, -1],
                   "rule": {"2": ["latent", 2, 4096, 1]}})
    else:
        io.append({"name": output, "mode": "OUTPUT", "dtype": "INT32", "shape": [1, -1, 2],
                   "rule": {"1": ["latent", 2, 4096, 1]}})
    return io


def _t5_io() -> list[dict]:
    return [
        {"name": "input_ids", "mode": "INPUT", "dtype": "INT64", "shape": [1, 256]},
        {"name": "attention_mask", "mode": "INPUT", "dtype": "INT64", "shape": [1, 256]},
        {"name": "hidden_states", "mode": "OUTPUT", "dtype": "FLOAT", "shape": [1, 256, 768]},
    ]


def _write(tmp_path: Path, io: list[dict], rel: str = "models/sm_90/sa3-m/dit_fp16.trt",
           **kwargs) -> Path:
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(make_engine_bytes(io, **kwargs))
    return path


def _load(tmp_path: Path, io: list[dict] | None = None, *, rel: str = "models/sm_90/sa3-m/"
          "dit_fp16.trt", gpu_sm: str | None = "sm_90", **kwargs) -> TrtEngine:
    path = _write(tmp_path, _dit_io() if io is None else io, rel, **kwargs)
    return TrtEngine(path, gpu_sm=gpu_sm)


def _ctx(tmp_path: Path, io: list[dict] | None = None, **kwargs) -> TrtContext:
    """A freshly loaded engine's first execution context."""
    return _load(tmp_path, io, **kwargs).create_context()


def _context(trt) -> fake_tensorrt.IExecutionContext:
    assert len(trt.STATE.contexts) == 1
    return trt.STATE.contexts[-1]


def _ready_dit(tmp_path: Path, trt, length: int = 646) -> tuple[TrtContext, object]:
    ctx = _ctx(tmp_path, device_memory=3 * MIB)
    ctx.bind_scratch(ALIGN * 1000, 3 * MIB)
    ctx.set_input_shape("x", (1, 256, length))
    ctx.set_input_shape("local_add_cond", (1, 257, length))
    for i, name in enumerate(ctx.specs):
        ctx.set_address(name, ALIGN * (10_000 + i * 4096))
    return ctx, _context(trt)


def _one_sentence(message: str) -> bool:
    return "\n" not in message and message.endswith(".") and message.count(". ") == 0


# ---- discovery -----------------------------------------------------------------------------------

def test_dit_io_discovery(tmp_path: Path, trt) -> None:
    engine = _load(tmp_path)
    assert isinstance(engine, EngineRunner)
    assert list(engine.specs) == ["x", "t", "t5_hidden", "t5_mask", "seconds_total",
                                  "local_add_cond", "velocity"]
    assert engine.input_names == list(engine.specs)[:-1]
    assert engine.output_names == ["velocity"]
    x = engine.specs["x"]
    assert x == TensorSpec("x", True, "float32", (1, 256, -1),
                           ((1, 256, 1), (1, 256, 1292), (1, 256, 4096)))
    assert x.is_dynamic and x.max_shape == (1, 256, 4096) and x.itemsize == 4
    assert engine.specs["local_add_cond"].profile == ((1, 257, 1), (1, 257, 1292), (1, 257, 4096))
    for static in ("t", "t5_hidden", "t5_mask", "seconds_total"):
        assert engine.specs[static].profile is None and not engine.specs[static].is_dynamic
    assert engine.specs["t"].shape == (1,)
    velocity = engine.specs["velocity"]
    assert not velocity.is_input and velocity.shape == (1, 256, -1) and velocity.profile is None
    # profile 0 asked for exactly the dynamic inputs, never for an output
    assert trt.STATE.engines[0].profile_queries == [("x", 0), ("local_add_cond", 0)]
    assert trt.STATE.contexts == []  # contexts are made per captured graph, not at load


def test_dit_old_profile_is_read_not_assumed(tmp_path: Path, trt) -> None:
    ctx = _ctx(tmp_path, _dit_io(min_len=256))
    assert ctx.specs["x"].profile[0] == (1, 256, 256)
    with pytest.raises(EngineError, match=r"min \(1, 256, 256\)"):
        ctx.set_input_shape("x", (1, 256, 32))


@pytest.mark.parametrize(
    ("output", "limiter", "dtype", "shape_of_64"),
    [("pcm", True, "int32", (1, 64 * 4096, 2)),
     ("pcm_unbounded", False, "int32", (1, 64 * 4096, 2)),
     ("audio", False, "float16", (1, 2, 64 * 4096))],
)
def test_decoder_flavours(tmp_path: Path, trt, output: str, limiter: bool, dtype: str,
                          shape_of_64: tuple[int, ...]) -> None:
    ctx = _ctx(tmp_path, _decoder_io(output, limiter),
                   rel="models/sm_90/same-s/dec_bf16_chunkable_limiter.trt")
    assert ctx.engine.output_names == [output]
    assert ctx.specs[output].dtype == dtype
    assert ctx.specs["latent"].profile == ((1, 256, 32), (1, 256, 1292), (1, 256, 4096))
    if limiter:
        ceiling = ctx.specs["limiter_ceiling"]
        assert ceiling.shape == () and ceiling.dtype == "float32" and ceiling.profile is None
        assert ceiling.nbytes() == 4
        ctx.set_input_shape("limiter_ceiling", ())  # static: accepted, TensorRT not asked
    ctx.set_input_shape("latent", (1, 256, 64))
    assert ctx.output_shape(output) == shape_of_64
    assert ctx.specs[output].nbytes(shape_of_64) == 64 * 4096 * 2 * DTYPES[dtype]
    assert _context(trt).count("set_input_shape") == 1


def test_static_text_encoder_needs_no_shapes(tmp_path: Path, trt) -> None:
    ctx = _ctx(tmp_path, _t5_io(), rel="models/sm_90/t5gemma/t5gemma_fp16.trt")
    assert ctx.specs["input_ids"].dtype == "int64"
    assert all(spec.profile is None for spec in ctx.specs.values())
    assert ctx.output_shape("hidden_states") == (1, 256, 768)
    assert trt.STATE.engines[0].profile_queries == []


def test_unknown_dtype_is_a_clear_error(tmp_path: Path, trt) -> None:
    io = _t5_io()
    io[2]["dtype"] = "INT4"
    with pytest.raises(EngineError, match=r"'hidden_states' of type INT4") as err:
        _load(tmp_path, io)
    assert _one_sentence(str(err.value))


def test_tensor_spec_nbytes_refuses_dynamic_dims() -> None:
    spec = TensorSpec("x", True, "float16", (1, 256, -1), None)
    assert spec.nbytes((1, 256, 10)) == 1 * 256 * 10 * 2
    with pytest.raises(EngineError):
        spec.nbytes()


# ---- scratch memory ------------------------------------------------------------------------------

def test_scratch_is_user_managed_and_bound_with_its_size(tmp_path: Path, trt) -> None:
    ctx = _ctx(tmp_path, device_memory=5 * MIB)
    context = _context(trt)
    assert context.strategy is trt.ExecutionContextAllocationStrategy.USER_MANAGED
    assert ctx.engine.scratch_bytes == 5 * MIB
    ctx.bind_scratch(ALIGN * 4, 8 * MIB)
    ctx.bind_scratch(ALIGN * 4, 8 * MIB)  # unchanged: not passed again
    assert [c for c in context.calls if c[0] == "set_device_memory"] == [
        ("set_device_memory", ALIGN * 4, 8 * MIB)]
    assert context.scratch == (ALIGN * 4, 8 * MIB)


def test_scratch_too_small_is_refused_before_tensorrt(tmp_path: Path, trt) -> None:
    ctx = _ctx(tmp_path, device_memory=5 * MIB)
    with pytest.raises(EngineError, match=r"needs 5242880 bytes .* given 1048576") as err:
        ctx.bind_scratch(ALIGN, 1 * MIB)
    assert _one_sentence(str(err.value))
    assert _context(trt).count("set_device_memory") == 0


def test_scratch_refused_by_tensorrt_is_an_error(tmp_path: Path, trt) -> None:
    ctx = _ctx(tmp_path, device_memory=MIB)
    with pytest.raises(EngineError, match="256-byte aligned"):
        ctx.bind_scratch(ALIGN + 8, MIB)  # misaligned: the fake logs an error


def test_scratch_falls_back_to_older_api(tmp_path: Path, trt, monkeypatch) -> None:
    monkeypatch.delattr(fake_tensorrt.ICudaEngine, "device_memory_size_v2")
    monkeypatch.delattr(fake_tensorrt.IExecutionContext, "set_device_memory")
    ctx = _ctx(tmp_path, device_memory=2 * MIB)
    assert ctx.engine.scratch_bytes == 2 * MIB
    ctx.bind_scratch(ALIGN, 2 * MIB)
    assert _context(trt).calls == [("device_memory", ALIGN)]


def test_enqueue_without_scratch_is_refused(tmp_path: Path, trt) -> None:
    ctx = _ctx(tmp_path, device_memory=MIB)
    ctx.set_input_shape("x", (1, 256, 8))
    ctx.set_input_shape("local_add_cond", (1, 257, 8))
    for name in ctx.specs:
        ctx.set_address(name, ALIGN)
    with pytest.raises(EngineError, match="bind_scratch"):
        ctx.enqueue(7)
    assert _context(trt).count("execute_async_v3") == 0


# ---- shapes --------------------------------------------------------------------------------------

def test_shape_outside_profile_names_min_and_max_and_never_reaches_tensorrt(
        tmp_path: Path, trt) -> None:
    ctx = _ctx(tmp_path)
    with pytest.raises(EngineError) as err:
        ctx.set_input_shape("x", (1, 256, 5000))
    message = str(err.value)
    assert "'x'" in message and "(1, 256, 5000)" in message
    assert "min (1, 256, 1)" in message and "max (1, 256, 4096)" in message
    assert _one_sentence(message)
    assert _context(trt).count("set_input_shape") == 0


@pytest.mark.parametrize(
    ("name", "shape", "match"),
    [("x", (1, 256), "must have shape"),
     ("x", (1, 255, 100), "must have shape"),
     ("t", (2,), "must have shape"),
     ("velocity", (1, 256, 10), "is an output"),
     ("nope", (1,), "has no tensor 'nope'")],
)
def test_bad_shapes_are_refused_before_tensorrt(tmp_path: Path, trt, name, shape, match) -> None:
    ctx = _ctx(tmp_path)
    with pytest.raises(EngineError, match=match):
        ctx.set_input_shape(name, shape)
    assert _context(trt).count("set_input_shape") == 0


def test_tensorrt_refusing_a_shape_becomes_engine_error(tmp_path: Path, trt, monkeypatch) -> None:
    ctx = _ctx(tmp_path)

    def refuse(self, name, shape):
        self._error("IExecutionContext::setInputShape: Error Code 9: Internal Error (refused)")
        return False

    monkeypatch.setattr(fake_tensorrt.IExecutionContext, "set_input_shape", refuse)
    with pytest.raises(EngineError, match=r"refused shape \(1, 256, 100\).*Internal Error"):
        ctx.set_input_shape("x", (1, 256, 100))


def test_same_shape_is_not_sent_twice(tmp_path: Path, trt) -> None:
    ctx = _ctx(tmp_path)
    ctx.set_input_shape("x", (1, 256, 100))
    ctx.set_input_shape("x", (1, 256, 100))
    ctx.set_input_shape("x", (1, 256, 101))
    assert _context(trt).count("set_input_shape") == 2


def test_output_shape_before_input_shapes_never_asks_tensorrt(tmp_path: Path, trt) -> None:
    ctx = _ctx(tmp_path)
    context = _context(trt)
    with pytest.raises(EngineError, match="set the input shapes first"):
        ctx.output_shape("velocity")
    ctx.set_input_shape("x", (1, 256, 300))
    with pytest.raises(EngineError, match=r"set the input shapes first \(local_add_cond\)"):
        ctx.output_shape("velocity")
    assert context.count("get_tensor_shape") == 0 and context.premature_output_queries == 0
    ctx.set_input_shape("local_add_cond", (1, 257, 300))
    assert ctx.output_shape("velocity") == (1, 256, 300)
    assert context.premature_output_queries == 0


def test_output_shape_still_dynamic_is_an_error(tmp_path: Path, trt) -> None:
    io = _decoder_io("pcm")
    del io[-1]["rule"]  # a data-dependent dim: TensorRT keeps -1
    ctx = _ctx(tmp_path, io)
    ctx.set_input_shape("latent", (1, 256, 40))
    with pytest.raises(EngineError, match="could not determine the shape of 'pcm'"):
        ctx.output_shape("pcm")


# ---- addresses and enqueue -----------------------------------------------------------------------

def test_set_address_rebinds_only_on_change(tmp_path: Path, trt) -> None:
    ctx = _ctx(tmp_path)
    context = _context(trt)
    assert ctx.set_address("x", ALIGN * 10) is True
    assert ctx.set_address("x", ALIGN * 10) is False
    assert context.count("set_tensor_address") == 1
    assert ctx.set_address("x", ALIGN * 11) is True
    assert ctx.set_address("velocity", ALIGN * 12) is True
    assert context.count("set_tensor_address") == 3
    assert context.addresses == {"x": ALIGN * 11, "velocity": ALIGN * 12}


def test_set_address_refusals(tmp_path: Path, trt) -> None:
    ctx = _ctx(tmp_path)
    with pytest.raises(EngineError, match="has no tensor 'nope'"):
        ctx.set_address("nope", ALIGN)
    with pytest.raises(EngineError, match="no device memory"):
        ctx.set_address("x", 0)
    assert _context(trt).count("set_tensor_address") == 0
    with pytest.raises(EngineError, match=r"refused address 0x1008 for 'x'"):
        ctx.set_address("x", 4096 + 8)  # TensorRT's False (misaligned)
    assert ctx.set_address("x", 4096) is True  # a refused address was not cached


def test_enqueue_refuses_unbound_address_before_tensorrt(tmp_path: Path, trt) -> None:
    engine, context = _ready_dit(tmp_path, trt)
    engine._addresses.pop("velocity")  # as if never bound
    with pytest.raises(EngineError, match="no address bound for velocity") as err:
        engine.enqueue(1)
    assert _one_sentence(str(err.value))
    assert context.count("execute_async_v3") == 0


def test_enqueue_refuses_unset_input_shape_before_tensorrt(tmp_path: Path, trt) -> None:
    ctx = _ctx(tmp_path, device_memory=MIB)
    ctx.bind_scratch(ALIGN, MIB)
    ctx.set_input_shape("x", (1, 256, 10))
    for name in ctx.specs:
        ctx.set_address(name, ALIGN)
    with pytest.raises(EngineError, match="input shapes not set for local_add_cond"):
        ctx.enqueue(1)
    assert _context(trt).count("execute_async_v3") == 0


def test_enqueue_runs_and_checks_shapes_once(tmp_path: Path, trt) -> None:
    engine, context = _ready_dit(tmp_path, trt)
    assert engine.enqueue(42) is True
    assert engine.enqueue(42) is True
    assert context.count("execute_async_v3") == 2
    assert context.calls[-1] == ("execute_async_v3", 42)
    assert context.count("infer_shapes") == 1  # asked again only after a shape change
    engine.set_input_shape("x", (1, 256, 700))
    engine.set_input_shape("local_add_cond", (1, 257, 700))
    assert engine.enqueue(42) is True
    assert context.count("infer_shapes") == 2


def test_enqueue_false_is_returned_not_raised(tmp_path: Path, trt, caplog) -> None:
    engine, context = _ready_dit(tmp_path, trt)
    context.fail_enqueue = True
    with caplog.at_level(logging.ERROR):
        assert engine.enqueue(3) is False
    assert context.count("execute_async_v3") == 1
    assert "stream is capturing" in caplog.text  # TensorRT's log reaches Python logging


def test_tensorrt_reporting_unspecified_inputs_is_an_error(tmp_path: Path, trt, monkeypatch):
    engine, context = _ready_dit(tmp_path, trt)
    monkeypatch.setattr(fake_tensorrt.IExecutionContext, "infer_shapes", lambda self: ["x"])
    with pytest.raises(EngineError, match="unspecified inputs x"):
        engine.enqueue(1)
    assert context.count("execute_async_v3") == 0


# ---- loading failures ----------------------------------------------------------------------------

def test_wrong_arch_names_both_sm_values(tmp_path: Path, trt) -> None:
    with pytest.raises(EngineError) as err:
        _load(tmp_path, rel="models/sm_120/sa3-m/dit_fp16.trt", sm="sm_120")
    message = str(err.value)
    assert "sm_120" in message and "sm_90" in message and "models/sm_90" in message
    assert "sm_120/sa3-m/dit_fp16.trt" in message and _one_sentence(message)


def test_wrong_arch_found_from_tensorrt_log_alone(tmp_path: Path, trt) -> None:
    with pytest.raises(EngineError, match=r"built for sm_120 but this GPU is sm_90"):
        _load(tmp_path, rel="elsewhere/dit.trt", gpu_sm=None, sm="sm_120")


def test_wrong_arch_found_from_folder_alone(tmp_path: Path, trt, monkeypatch) -> None:
    monkeypatch.setattr(trt, "FAKE_GPU_SM", "sm_120")
    path = _write(tmp_path, _dit_io(), "models/sm_120/sa3-m/dit_fp16.trt", sm="sm_120")
    path.write_bytes(b"\x00truncated")
    with pytest.raises(EngineError, match=r"built for sm_120 but this GPU is sm_90"):
        TrtEngine(path, gpu_sm="sm_90")


def test_wrong_version_names_both_versions(tmp_path: Path, trt) -> None:
    with pytest.raises(EngineError) as err:
        _load(tmp_path, trt_version="10.8.0.43")
    message = str(err.value)
    assert "TensorRT 10.8.0.43" in message and "TensorRT 10.15.1.29" in message
    assert "rebuild" in message and _one_sentence(message)


def test_installed_version_is_read_from_tensorrt(tmp_path: Path, trt, monkeypatch) -> None:
    monkeypatch.setattr(trt, "__version__", "10.16.0.1")
    with pytest.raises(EngineError, match=r"10\.15\.1\.29 but TensorRT 10\.16\.0\.1 is installed"):
        _load(tmp_path)


def test_garbage_file_is_one_sentence(tmp_path: Path, trt) -> None:
    path = tmp_path / "models/sm_90/sa3-m/dit_fp16.trt"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"<html>404 not found</html>")
    with pytest.raises(EngineError) as err:
        TrtEngine(path, gpu_sm="sm_90")
    message = str(err.value)
    assert "dit_fp16.trt" in message and "download it again" in message
    assert _one_sentence(message)


@pytest.mark.parametrize("content", [None, b""])
def test_missing_or_empty_file(tmp_path: Path, trt, content) -> None:
    path = tmp_path / "dit.trt"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(EngineError, match="dit.trt") as err:
        TrtEngine(path)
    assert isinstance(err.value, BackendError) and _one_sentence(str(err.value))
    assert len(trt.STATE.engines) == 0


def test_missing_plugin_is_one_sentence_pointing_to_aot(tmp_path: Path, trt) -> None:
    # A renamed JIT SAME-L engine reaches TensorRT, which cannot find the Triton plugin.
    with pytest.raises(EngineError) as err:
        _load(tmp_path, _decoder_io(), rel="models/sm_90/same-l/dec_renamed.trt", plugin=True)
    message = str(err.value)
    assert "plugin" in message and _one_sentence(message)
    assert "torch" not in message and "triton" not in message.lower().replace("triton plugin", "")


@pytest.mark.parametrize("name", ["dec_dynamic_triton_swa.trt", "enc_dynamic_triton_swa.trt",
                                  "dec_dynamic_fp32.trt"])
def test_jit_engines_are_refused_before_tensorrt_with_the_aot_files(tmp_path: Path, trt,
                                                                    name: str) -> None:
    with pytest.raises(EngineError) as err:
        _load(tmp_path, _decoder_io(), rel=f"models/sm_90/same-l/{name}", plugin=True)
    message = str(err.value)
    assert "dec_fp16_chunkable_limiter.trt" in message and "enc_fp16_chunkable.trt" in message
    assert "models download" in message and _one_sentence(message)
    assert trt.STATE.runtimes == [] or trt.STATE.runtimes[0].deserialize_calls == 0


def test_each_context_is_separate_and_closed_with_its_engine(tmp_path: Path, trt) -> None:
    engine = _load(tmp_path, device_memory=MIB)
    first, second = engine.create_context(), engine.create_context()
    assert len(trt.STATE.contexts) == 2
    first.set_input_shape("x", (1, 256, 32))
    second.set_input_shape("x", (1, 256, 64))
    assert trt.STATE.contexts[0].shapes["x"] == (1, 256, 32)  # never overwritten by the other
    assert trt.STATE.contexts[1].shapes["x"] == (1, 256, 64)
    for context in (first, second):
        context.bind_scratch(ALIGN, MIB)  # both share one scratch allocation
    assert [c.scratch for c in trt.STATE.contexts] == [(ALIGN, MIB)] * 2
    engine.close()
    with pytest.raises(EngineError, match="was closed"):
        first.set_input_shape("x", (1, 256, 33))


# ---- runtime, logger, lifecycle ------------------------------------------------------------------

def test_one_runtime_per_process_with_a_collecting_ilogger(tmp_path: Path, trt) -> None:
    _load(tmp_path)
    _load(tmp_path, _t5_io(), rel="models/sm_90/t5gemma/t5gemma_fp16.trt")
    assert len(trt.STATE.runtimes) == 1
    runtime = trt.STATE.runtimes[0]
    assert runtime.deserialize_calls == 2
    assert isinstance(runtime.logger, trt.ILogger) and not isinstance(runtime.logger, trt.Logger)


def test_caller_runtime_and_logger_are_used(tmp_path: Path, trt) -> None:
    logger = make_logger(trt)
    runtime = trt.Runtime(logger)
    path = _write(tmp_path, _dit_io(), sm="sm_120")
    with pytest.raises(EngineError, match="sm_120"):
        TrtEngine(path, gpu_sm="sm_90", runtime=runtime, logger=logger)
    assert runtime.deserialize_calls == 1 and len(trt.STATE.runtimes) == 1
    assert any("incompatible device" in msg for msg in logger.errors_since(0))


def test_close_is_idempotent_and_releases_tensorrt_objects(tmp_path: Path, trt) -> None:
    engine = _load(tmp_path)
    ctx = engine.create_context()
    context_ref = weakref.ref(trt.STATE.contexts.pop())
    engine_ref = weakref.ref(trt.STATE.engines.pop())
    engine.close()
    engine.close()
    gc.collect()
    assert context_ref() is None and engine_ref() is None
    for call in (lambda: ctx.enqueue(1), lambda: ctx.set_address("x", ALIGN),
                 lambda: ctx.set_input_shape("x", (1, 256, 9)),
                 lambda: ctx.bind_scratch(ALIGN, 1 << 30), engine.create_context):
        with pytest.raises(EngineError, match="was closed"):
            call()


def test_describe_lists_every_tensor(tmp_path: Path, trt) -> None:
    engine = _load(tmp_path, device_memory=3 * MIB)
    text = engine.describe()
    assert text.splitlines()[0].startswith("dit_fp16.trt: TensorRT 10.15.1.29, scratch 3.0 MiB")
    for name in engine.specs:
        assert name in text
    assert "(1, 256, 1) / (1, 256, 1292) / (1, 256, 4096)" in text


# ---- the fake itself refuses what TensorRT refuses -----------------------------------------------

def test_fake_is_strict(trt) -> None:
    with pytest.raises(TypeError):
        trt.Runtime(object())

    class Forgetful(trt.ILogger):
        def __init__(self) -> None:  # does not call ILogger.__init__
            pass

    with pytest.raises(TypeError):
        trt.Runtime(Forgetful())
    logger = trt.Logger(trt.ILogger.ERROR)
    runtime = trt.Runtime(logger)
    assert runtime.deserialize_cuda_engine(b"junk") is None and logger.messages
    engine = runtime.deserialize_cuda_engine(make_engine_bytes(_dit_io(), device_memory=MIB))
    with pytest.raises(ValueError):
        len(engine.get_tensor_profile_shape("velocity", 0)[0])  # Dims{-1}
    with pytest.raises(ValueError):
        tuple(engine.get_tensor_profile_shape("x", 1)[0])
    context = engine.create_execution_context(trt.ExecutionContextAllocationStrategy.USER_MANAGED)
    assert context.set_input_shape("x", (1, 256, 4097)) is False
    assert context.set_input_shape("velocity", (1, 256, 1)) is False
    assert context.set_input_shape("x", (1, 256)) is False
    assert context.get_tensor_shape("velocity") == (1, 256, -1)
    assert context.premature_output_queries == 1
    assert context.set_tensor_address("nope", ALIGN) is False
    for i, tensor in enumerate(engine._tensors):
        assert context.set_tensor_address(tensor.name, ALIGN * (i + 1))
    assert context.execute_async_v3(0) is False  # input shapes unset
    assert context.set_input_shape("x", (1, 256, 5)) and context.set_input_shape(
        "local_add_cond", (1, 257, 5))
    assert context.execute_async_v3(0) is False  # no device memory for USER_MANAGED
    context.set_device_memory(ALIGN, MIB - 1)
    assert context.execute_async_v3(0) is False  # too small was refused
    context.set_device_memory(ALIGN, MIB)
    assert context.execute_async_v3(0) is True
    assert context.get_tensor_shape("velocity") == (1, 256, 5)


# ---- import contract -----------------------------------------------------------------------------

@pytest.mark.slow  # an import probe in a fresh process
def test_engine_module_imports_without_tensorrt() -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.modules["tensorrt"] = None  # any `import tensorrt` now raises ImportError
        import engines.backends.tensorrt.engine as engine
        assert "tensorrt" not in {m.split(".")[0] for m in sys.modules if sys.modules[m]}
        try:
            engine.TrtEngine("missing.trt")
        except engine.EngineError as err:
            print(err)
        """
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "TensorRT is not installed" in result.stdout
