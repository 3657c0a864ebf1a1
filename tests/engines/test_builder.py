"""Engine builds from ONNX against the strict TensorRT 10 builder fake (no GPU, no TensorRT)."""

from __future__ import annotations

import logging
import sys
import threading
from pathlib import Path

import pytest
from onnx import TensorProto, helper

from engines.backends.tensorrt.engine import TrtEngine
from engines.catalog import Catalog
from engines.catalog.tensorrt_version import UnsupportedTensorRTError
from engines.errors import BackendError, CancelledError, ModelUnavailableError, RequestError
from engines.gpu import GpuInfo
from engines.models.build_plan import BuildSpec, default_profiles, plan_builds
from engines.models.build_recipe import onnx_has_fp8
from engines.models.builder import BuildCancelled, BuildError, build_engine
from tests import fake_tensorrt

F32, F16, I32, I64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT32, TensorProto.INT64
FP8 = TensorProto.FLOAT8E4M3FN
PRECISION_FLAGS = ("FP16", "BF16", "INT8", "FP8", "INT4", "FP4")  # deprecated in TensorRT 10.12
H100 = (9, 0)

# name, element type, shape (a str is a symbolic dim)
TEXT_IO = ([("input_ids", I64, [1, 256]), ("attention_mask", I64, [1, 256])],
           [("hidden_states", F32, [1, 256, 768])])
DIT_IO = ([("x", F32, [1, 256, "L"]), ("t", F32, [1]), ("t5_hidden", F32, [1, 256, 768]),
           ("t5_mask", F32, [1, 256]), ("seconds_total", F32, [1]),
           ("local_add_cond", F32, [1, 257, "L"])],
          [("velocity", F32, [1, 256, "L"])])
DECODER_IO = ([("latent", F32, [1, 256, "L"]), ("limiter_ceiling", F32, [])],
              [("pcm", I32, [1, "N", 2])])
ENCODER_IO = ([("audio", F16, [1, 2, "N"])], [("latent", F32, [1, 256, "L"])])
RULES = {"decoder": '{"pcm": {"1": ["latent", 2, 4096, 1]}}',
         "encoder": '{"latent": {"2": ["audio", 2, 1, 4096]}}'}
IO = {"text": TEXT_IO, "dit": DIT_IO, "decoder": DECODER_IO, "encoder": ENCODER_IO}


@pytest.fixture
def trt(monkeypatch: pytest.MonkeyPatch):
    return fake_tensorrt.install(monkeypatch)


def write_onnx(path: Path, role: str = "dit", *, extra_inputs=(), custom_op: str | None = None,
               io=None, fp8: bool = False) -> Path:
    """A tiny ONNX graph with the I/O of an SA3 role (the fake parser reads the graph only);
    `fp8` puts an fp8 QuantizeLinear/DequantizeLinear pair first, as a quantized export does."""
    inputs, outputs = io or IO[role]
    inputs = [*inputs, *extra_inputs]
    nodes = [helper.make_node("Identity", [inputs[0][0]], ["mid"], name="first")]
    initializers = []
    if fp8:
        nodes = [helper.make_node("QuantizeLinear", [inputs[0][0], "scale", "zero"], ["q"]),
                 helper.make_node("DequantizeLinear", ["q", "scale", "zero"], ["mid"])]
        initializers = [helper.make_tensor("scale", F32, [], [0.5]),
                        helper.make_tensor("zero", FP8, [], [0.0])]
    if custom_op:
        nodes.append(helper.make_node(custom_op, ["mid"], ["mid2"], name="swa", domain="samel"))
    nodes.append(helper.make_node("Identity", [nodes[-1].output[0]], [outputs[0][0]],
                                  name="last"))
    graph = helper.make_graph(
        nodes, f"sa3_{role}",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19 if fp8 else 17)])
    model.ir_version = 8
    if role in RULES:
        helper.set_model_props(model, {fake_tensorrt.RULES_METADATA_KEY: RULES[role]})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(model.SerializeToString())
    return path


def spec_for(tmp_path: Path, role: str = "dit", precision: str = "fp16", *,
             engine: str = "models/sm_90/sa3-m/dit_fp16.trt", **onnx_options) -> BuildSpec:
    onnx_path = write_onnx(tmp_path / "models/onnx/sa3-m" / f"{role}.onnx", role, **onnx_options)
    return BuildSpec(onnx_path, tmp_path / engine, role, precision, default_profiles(role))


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


# ---- profiles -----------------------------------------------------------------------------------

def test_default_profiles_follow_the_contract() -> None:
    assert default_profiles("text") == {}
    dit = default_profiles("dit")
    assert dit == {"x": ((1, 256, 1), (1, 256, 1292), (1, 256, 4096)),
                   "local_add_cond": ((1, 257, 1), (1, 257, 1292), (1, 257, 4096))}
    assert default_profiles("dit", wide=True) == dit  # 4096 is the model's own limit
    assert default_profiles("encoder") == {
        "audio": ((1, 2, 32 * 4096), (1, 2, 1292 * 4096), (1, 2, 4096 * 4096))}
    assert default_profiles("encoder", wide=True)["audio"][2] == (1, 2, 8192 * 4096)
    assert default_profiles("decoder") == {
        "latent": ((1, 256, 32), (1, 256, 1292), (1, 256, 4096))}
    assert default_profiles("decoder", wide=True) == {
        "latent": ((1, 256, 1), (1, 256, 1292), (1, 256, 8192))}
    with pytest.raises(ValueError, match="role"):
        default_profiles("vocoder")


def test_build_spec_rejects_bad_values(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="role"):
        BuildSpec(tmp_path / "a.onnx", tmp_path / "a.trt", "vae", "fp16")
    with pytest.raises(ValueError, match="precision"):
        BuildSpec(tmp_path / "a.onnx", tmp_path / "a.trt", "dit", "int8")
    with pytest.raises(ValueError, match="min <= opt <= max"):
        BuildSpec(tmp_path / "a.onnx", tmp_path / "a.trt", "decoder", "fp16",
                  {"latent": ((1, 256, 64), (1, 256, 32), (1, 256, 4096))})


# ---- typing rules -------------------------------------------------------------------------------

def test_fp16_is_strongly_typed_without_precision_flags(tmp_path: Path, trt) -> None:
    spec = spec_for(tmp_path)
    assert build_engine(spec, gpu_cc=H100) == spec.engine_path
    network, config = trt.STATE.networks[-1], trt.STATE.configs[-1]
    assert network.strongly_typed
    assert not config.flag_names & {"FP16", "BF16", "FP8", "INT8"}
    assert trt.STATE.parsers[-1].parsed == [str(spec.onnx_path)]
    assert config.profiles[0].shapes == default_profiles("dit")
    assert spec.engine_path.is_file()


def test_fp8_dit_is_weakly_typed_with_fp16_and_fp8_flags(tmp_path: Path, trt) -> None:
    spec = spec_for(tmp_path, precision="fp8", engine="models/sm_90/sa3-m/dit_fp8.trt", fp8=True)
    build_engine(spec, gpu_cc=(8, 9))
    assert not trt.STATE.networks[-1].strongly_typed
    assert {"FP16", "FP8"} <= trt.STATE.configs[-1].flag_names


def test_fp8_same_s_tiers_take_the_fp8_flag_alone(tmp_path: Path, trt) -> None:
    for role, name in (("decoder", "dec_fp8_fast"), ("encoder", "enc_fp8")):
        spec = spec_for(tmp_path, role, "fp8", engine=f"models/sm_90/same-s/{name}.trt", fp8=True)
        build_engine(spec, gpu_cc=H100)
        assert not trt.STATE.networks[-1].strongly_typed
        assert trt.STATE.configs[-1].flag_names & set(PRECISION_FLAGS) == {"FP8"}


def test_fp8_same_l_tiers_are_strongly_typed_without_precision_flags(tmp_path: Path,
                                                                        trt) -> None:
    # The fp8 is in the graph: strong typing keeps it, and TensorRT refuses precision flags there.
    for role, name in (("decoder", "dec_fp8_chunkable_limiter"), ("encoder", "enc_fp8_chunkable")):
        spec = spec_for(tmp_path, role, "fp8", engine=f"models/sm_90/same-l/{name}.trt", fp8=True)
        assert build_engine(spec, gpu_cc=H100).is_file()
        assert trt.STATE.networks[-1].strongly_typed
        assert not trt.STATE.configs[-1].flag_names & set(PRECISION_FLAGS)


@pytest.mark.parametrize("engine", ["models/sm_90/sa3-m/dit_fp8.trt",
                                    "models/sm_90/same-s/dec_fp8.trt",
                                    "models/sm_90/same-l/dec_fp8_chunkable_limiter.trt"])
def test_fp8_build_of_a_graph_without_fp8_is_refused(tmp_path: Path, trt, engine: str) -> None:
    role = "dit" if "dit" in engine else "decoder"
    spec = spec_for(tmp_path, role, "fp8", engine=engine)  # an fp16 graph under an fp8 name
    with pytest.raises(BuildError) as caught:
        build_engine(spec, gpu_cc=H100)
    message = str(caught.value)
    assert "has no fp8 quantization" in message and spec.label in message
    assert "fp16" in message and "\n" not in message and message.endswith(".")
    assert not trt.STATE.builders and not spec.engine_path.exists()  # TensorRT never started


def test_fp32_is_weakly_typed_without_any_flag(tmp_path: Path, trt) -> None:
    spec = spec_for(tmp_path, precision="fp32", engine="models/sm_90/sa3-m/dit_fp32.trt")
    build_engine(spec, gpu_cc=(8, 6))
    assert not trt.STATE.networks[-1].strongly_typed
    assert trt.STATE.configs[-1].flag_names == set()  # TF32 (on by default) cleared as well


def test_workspace_limit_reaches_the_config(tmp_path: Path, trt) -> None:
    spec = spec_for(tmp_path)
    spec = BuildSpec(spec.onnx_path, spec.engine_path, "dit", "fp16", spec.profiles, 1 << 30)
    build_engine(spec, gpu_cc=H100)
    assert trt.STATE.configs[-1].pool_limits == {trt.MemoryPoolType.WORKSPACE: 1 << 30}


def test_fp8_refused_below_ada_before_tensorrt(tmp_path: Path, trt) -> None:
    spec = spec_for(tmp_path, precision="fp8", engine="models/sm_86/sa3-m/dit_fp8.trt")
    with pytest.raises(BuildError) as caught:
        build_engine(spec, gpu_cc=(8, 6))
    message = str(caught.value)
    assert "8.9" in message and "8.6" in message and "fp16" in message
    assert "\n" not in message and message.endswith(".")
    assert not trt.STATE.builders and not trt.STATE.parsers  # TensorRT was never asked


def test_fp8_refusal_needs_no_tensorrt_at_all(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "tensorrt", None)  # `import tensorrt` raises ImportError
    spec = spec_for(tmp_path, precision="fp8", engine="models/sm_86/sa3-m/dit_fp8.trt")
    with pytest.raises(BuildError, match="compute capability 8.9"):
        build_engine(spec, gpu_cc=(8, 6))
    with pytest.raises(BuildError, match="TensorRT is not installed"):
        build_engine(spec_for(tmp_path), gpu_cc=H100)


def _model_bytes(nodes, initializers=(), opset: int = 21, functions=()) -> bytes:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F32, [1, 4])],
                              [helper.make_tensor_value_info("y", F32, [1, 4])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset),
                                                    helper.make_opsetid("local", 1)],
                              functions=list(functions))
    return model.SerializeToString()


def test_onnx_has_fp8_finds_every_form_of_fp8_quantization(tmp_path: Path) -> None:
    scale = helper.make_tensor("s", F32, [], [0.5])
    cases = {
        "qdq_zero_point": _model_bytes(
            [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])],
            [scale, helper.make_tensor("z", FP8, [], [0.0])]),
        "q_output_dtype": _model_bytes(
            [helper.make_node("QuantizeLinear", ["x", "s"], ["q"], output_dtype=FP8),
             helper.make_node("DequantizeLinear", ["q", "s"], ["y"])], [scale]),
        "fp8_weights": _model_bytes(
            [helper.make_node("DequantizeLinear", ["w", "s"], ["wf"]),
             helper.make_node("Add", ["x", "wf"], ["y"])],
            [scale, helper.make_tensor("w", FP8, [1, 4], [0.0] * 4)]),
        "cast_to_fp8": _model_bytes(
            [helper.make_node("Cast", ["x"], ["c"], to=FP8),
             helper.make_node("Cast", ["c"], ["y"], to=F32)]),
        "trt_custom_qdq": _model_bytes(
            [helper.make_node("TRT_FP8QuantizeLinear", ["x", "s"], ["q"], domain="trt"),
             helper.make_node("TRT_FP8DequantizeLinear", ["q", "s"], ["y"], domain="trt")],
            [scale]),
        "inside_a_function": _model_bytes(
            [helper.make_node("QDQ", ["x"], ["y"], domain="local")], functions=[
                helper.make_function("local", "QDQ", ["a"], ["b"], [
                    helper.make_node("QuantizeLinear", ["a", "k"], ["q"], output_dtype=FP8),
                    helper.make_node("DequantizeLinear", ["q", "k"], ["b"])],
                    [helper.make_opsetid("", 21)])]),
    }
    for name, data in cases.items():
        path = tmp_path / f"{name}.onnx"
        path.write_bytes(data)
        assert onnx_has_fp8(path) is True, name

    int8 = tmp_path / "int8.onnx"
    int8.write_bytes(_model_bytes(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
         helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])],
        [scale, helper.make_tensor("z", TensorProto.INT8, [], [0])]))
    assert onnx_has_fp8(int8) is False  # int8 Q/DQ is no fp8
    assert onnx_has_fp8(write_onnx(tmp_path / "plain.onnx")) is False
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"<html>rate limited</html>")
    assert onnx_has_fp8(garbage) is None  # not ONNX: TensorRT's parser says why


def test_fp8_check_reads_no_external_weights(tmp_path: Path) -> None:
    from onnx import load_model_from_string, save_model

    model = load_model_from_string(_model_bytes(
        [helper.make_node("DequantizeLinear", ["w", "s"], ["wf"]),
         helper.make_node("Add", ["x", "wf"], ["y"])],
        [helper.make_tensor("s", F32, [], [0.5]),
         helper.make_tensor("w", FP8, [1, 4], bytes(4), raw=True)]))
    save_model(model, str(tmp_path / "dit_fp8.onnx"), save_as_external_data=True,
               location="dit_fp8.onnx.data", size_threshold=0)
    (tmp_path / "dit_fp8.onnx.data").unlink()  # the weights are never read
    assert onnx_has_fp8(tmp_path / "dit_fp8.onnx") is True


# ---- TensorRT version -------------------------------------------------------------------------

def test_tensorrt_11_is_refused_in_one_sentence_before_any_flag(tmp_path: Path, trt,
                                                                monkeypatch) -> None:
    monkeypatch.setattr(trt, "__version__", "11.4.0.106")
    spec = spec_for(tmp_path, precision="fp8", engine="models/sm_90/sa3-m/dit_fp8.trt", fp8=True)
    with pytest.raises(UnsupportedTensorRTError) as caught:  # never an AttributeError
        build_engine(spec, gpu_cc=H100)
    message = str(caught.value)
    assert message.startswith("TensorRT 11.4.0.106 is installed but SA3 Studio needs TensorRT 10")
    assert "10.15.1.29" in message and "pip install 'sa3-studio[tensorrt" in message
    assert "\n" not in message and message.endswith(".")
    assert isinstance(caught.value, BackendError)
    assert not trt.STATE.builders


def test_fake_has_the_deprecated_flags_on_10_and_not_on_11(trt, monkeypatch) -> None:
    config = trt.Builder(trt.Logger()).create_builder_config()
    for name in ("FP16", "BF16", "FP8"):  # deprecated in 10.12, present in every 10.x
        config.set_flag(trt.BuilderFlag[name])
    assert {"FP16", "BF16", "FP8"} <= config.flag_names
    monkeypatch.setattr(trt, "__version__", "11.4.0.106")
    with pytest.raises(AttributeError, match="no attribute 'FP16'"):
        config.set_flag(trt.BuilderFlag.FP16)
    config.clear_flag(trt.BuilderFlag.TF32)  # flags that survived into 11 still work


# ---- progress, cancel, failures -----------------------------------------------------------------

def test_progress_forwards_phases_and_steps(tmp_path: Path, trt) -> None:
    seen: list[tuple[str, int, int]] = []
    build_engine(spec_for(tmp_path), gpu_cc=H100, progress=lambda *a: seen.append(a))
    timing = [s for s in seen if s[0] == "Tactic timing"]
    assert timing == [("Tactic timing", step, 4) for step in range(5)] + [("Tactic timing", 4, 4)]
    assert seen[0] == ("Building engine", 0, 2) and seen[-1] == ("Building engine", 2, 2)


def test_a_failing_progress_callback_does_not_stop_the_build(tmp_path: Path, trt, caplog) -> None:
    def broken(*_: object) -> None:
        raise ZeroDivisionError("display bug")

    spec = spec_for(tmp_path)
    with caplog.at_level(logging.ERROR):
        assert build_engine(spec, gpu_cc=H100, progress=broken).is_file()
    assert "progress callback failed" in caplog.text


def test_cancel_through_the_monitor_leaves_no_file(tmp_path: Path, trt) -> None:
    cancel = threading.Event()

    def progress(phase: str, step: int, steps: int) -> None:
        if phase == "Tactic timing" and step == 2:
            cancel.set()  # the user presses Cancel mid-build

    spec = spec_for(tmp_path)
    with pytest.raises(BuildCancelled) as caught:
        build_engine(spec, gpu_cc=H100, progress=progress, cancel=cancel)
    assert isinstance(caught.value, CancelledError)
    assert trt.STATE.builds[-1]["result"] is None  # TensorRT itself stopped the build
    assert not spec.engine_path.exists()
    assert leftovers(spec.engine_path.parent) == []  # no temp file either


def test_cancel_before_the_build_never_starts_tensorrt(tmp_path: Path, trt) -> None:
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(BuildCancelled):
        build_engine(spec_for(tmp_path), gpu_cc=H100, cancel=cancel)
    assert not trt.STATE.builders


def test_failed_build_reports_the_logged_error(tmp_path: Path, trt, monkeypatch) -> None:
    monkeypatch.setattr(trt, "FAIL_BUILD", "Requested amount of GPU memory (9000000000 bytes) "
                        "could not be allocated")
    spec = spec_for(tmp_path)
    with pytest.raises(BuildError) as caught:
        build_engine(spec, gpu_cc=H100)
    message = str(caught.value)
    assert "could not be allocated" in message and "sm_90/sa3-m/dit_fp16.trt" in message
    assert "free VRAM" in message and "\n" not in message
    assert not spec.engine_path.exists()


def test_existing_engine_survives_a_failed_write(tmp_path: Path, trt, monkeypatch) -> None:
    spec = spec_for(tmp_path)
    spec.engine_path.parent.mkdir(parents=True)
    spec.engine_path.write_bytes(b"the old engine")

    def full_disk(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("engines.models.builder.os.replace", full_disk)
    with pytest.raises(BuildError, match="No space left on device.*free disk space"):
        build_engine(spec, gpu_cc=H100)
    assert spec.engine_path.read_bytes() == b"the old engine"
    assert leftovers(spec.engine_path.parent) == ["dit_fp16.trt"]


# ---- parser and profile errors ------------------------------------------------------------------

def test_a_file_that_is_not_onnx_fails_to_parse(tmp_path: Path, trt) -> None:
    spec = spec_for(tmp_path)
    spec.onnx_path.write_bytes(b"<html>rate limited</html>")
    with pytest.raises(BuildError) as caught:
        build_engine(spec, gpu_cc=H100)
    message = str(caught.value)
    assert message.startswith("TensorRT could not parse 'dit.onnx': Failed to parse ONNX model")
    assert "Download the ONNX file again" in message
    assert trt.STATE.parsers[-1].num_errors == 1
    assert not trt.STATE.builds  # nothing was built


def test_an_unsupported_node_is_named(tmp_path: Path, trt) -> None:
    spec = spec_for(tmp_path, "decoder", custom_op="diff_attn_swa",
                    engine="models/sm_90/same-l/dec_fp16_chunkable_limiter.trt")
    with pytest.raises(BuildError, match=r"node 1 'swa' \(diff_attn_swa\): No importer"):
        build_engine(spec, gpu_cc=H100)


def test_a_registered_plugin_node_builds(tmp_path: Path, trt, monkeypatch) -> None:
    monkeypatch.setattr(trt, "PLUGINS_REGISTERED", {"diff_attn_swa"})
    spec = spec_for(tmp_path, "decoder", custom_op="diff_attn_swa",
                    engine="models/sm_90/same-l/dec_fp16_chunkable_limiter.trt")
    assert build_engine(spec, gpu_cc=H100).is_file()


def test_missing_onnx_file(tmp_path: Path, trt) -> None:
    spec = BuildSpec(tmp_path / "nope.onnx", tmp_path / "x.trt", "dit", "fp16")
    with pytest.raises(BuildError, match="does not exist"):
        build_engine(spec, gpu_cc=H100)


def test_dynamic_input_without_profile_is_named(tmp_path: Path, trt) -> None:
    spec = spec_for(tmp_path, extra_inputs=[("style", F32, [1, "S"])])
    with pytest.raises(BuildError, match=r"Input 'style' of 'dit.onnx' has dynamic shape "
                                         r"\(1, -1\) but the dit build has no profile"):
        build_engine(spec, gpu_cc=H100)
    assert not trt.STATE.builds


def test_profile_for_a_missing_input_is_named(tmp_path: Path, trt) -> None:
    onnx_path = write_onnx(tmp_path / "dec.onnx", "decoder")
    spec = BuildSpec(onnx_path, tmp_path / "models/sm_90/same-s/dec.trt", "dit", "fp16",
                     {**default_profiles("decoder"), **default_profiles("dit")})
    with pytest.raises(BuildError, match="names input '(x|local_add_cond)' but 'dec.onnx' has no "
                                         "such input"):
        build_engine(spec, gpu_cc=H100)


def test_profile_that_does_not_fit_static_dims(tmp_path: Path, trt) -> None:
    onnx_path = write_onnx(tmp_path / "dec.onnx", "decoder")
    bad = {"latent": ((1, 128, 32), (1, 128, 1292), (1, 128, 4096))}
    spec = BuildSpec(onnx_path, tmp_path / "dec.trt", "decoder", "fp16", bad)
    with pytest.raises(BuildError, match=r"\(1, 128, 32\) does not fit input 'latent'"):
        build_engine(spec, gpu_cc=H100)


# ---- the fake refuses what TensorRT refuses -----------------------------------------------------

def _parsed_network(trt, tmp_path: Path, flags: int = 0):
    logger = trt.Logger()
    builder = trt.Builder(logger)
    network = builder.create_network(flags)
    assert trt.OnnxParser(network, logger).parse_from_file(
        str(write_onnx(tmp_path / "dit.onnx", "dit")))
    return logger, builder, network


def test_fake_refuses_bad_profiles_and_flags(tmp_path: Path, trt) -> None:
    profile = trt.Builder(trt.Logger()).create_optimization_profile()
    with pytest.raises(RuntimeError, match="opt is inconsistent"):
        profile.set_shape("x", (1, 256, 64), (1, 256, 32), (1, 256, 4096))
    with pytest.raises(RuntimeError, match="max is inconsistent"):
        profile.set_shape("x", (1, 256, 1), (1, 256, 1292), (1, 256, 512))
    with pytest.raises(RuntimeError, match="opt is inconsistent"):
        profile.set_shape("x", (1, 256, 1), (1, 1292), (1, 256, 4096))

    strong = 1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED)
    logger, builder, network = _parsed_network(trt, tmp_path, strong)
    config = builder.create_builder_config()
    full = builder.create_optimization_profile()
    for name in ("x", "local_add_cond"):
        full.set_shape(name, *default_profiles("dit")[name])
    assert config.add_optimization_profile(full) == 0
    config.set_flag(trt.BuilderFlag.FP8)
    assert builder.build_serialized_network(network, config) is None
    assert "kFP8 are not allowed with a strongly typed network" in logger.messages[-1][1]

    config = builder.create_builder_config()
    partial = builder.create_optimization_profile()
    partial.set_shape("x", *default_profiles("dit")["x"])
    config.add_optimization_profile(partial)
    assert builder.build_serialized_network(network, config) is None
    assert "local_add_cond: dynamic input is missing dimensions" in logger.messages[-1][1]

    assert builder.build_serialized_network(network, builder.create_builder_config()) is None
    assert "no optimization profile has been defined" in logger.messages[-1][1]


def test_fake_network_flags_are_bits(tmp_path: Path, trt) -> None:
    # Passing the enum instead of `1 << flag` sets EXPLICIT_BATCH: a weakly typed network, as
    # in TensorRT. The builder must shift.
    _, _, network = _parsed_network(trt, tmp_path, int(trt.NetworkDefinitionCreationFlag.
                                                      STRONGLY_TYPED))
    assert not network.strongly_typed
    with pytest.raises(TypeError):
        trt.Builder(trt.Logger()).create_builder_config().set_flag(0)


# ---- timing cache -------------------------------------------------------------------------------

def test_timing_cache_is_saved_and_fed_back(tmp_path: Path, trt) -> None:
    cache_path = tmp_path / "cache" / "timing.cache"
    build_engine(spec_for(tmp_path), gpu_cc=H100, timing_cache=cache_path)
    first = cache_path.read_bytes()
    assert first and trt.STATE.configs[-1].get_timing_cache().entries  # the build added timings

    spec = spec_for(tmp_path, "decoder", engine="models/sm_90/same-s/dec.trt")
    build_engine(spec, gpu_cc=H100, timing_cache=cache_path)
    (cache, ignore_mismatch), = trt.STATE.configs[-1].timing_cache_calls
    assert cache.loaded_from == first and ignore_mismatch is False
    assert len(cache.entries) == 2  # the previous timings plus the decoder's
    assert cache_path.read_bytes() != first
    assert leftovers(cache_path.parent) == ["timing.cache"]


@pytest.mark.parametrize("content", [b"garbage", None])
def test_unusable_timing_cache_is_replaced(tmp_path: Path, trt, monkeypatch, caplog,
                                           content: bytes | None) -> None:
    cache_path = tmp_path / "timing.cache"
    if content is None:  # a cache made on another GPU
        monkeypatch.setattr(trt, "FAKE_GPU_SM", "sm_89")
        build_engine(spec_for(tmp_path), gpu_cc=(8, 9), timing_cache=cache_path)
        monkeypatch.setattr(trt, "FAKE_GPU_SM", "sm_90")
    else:
        cache_path.write_bytes(content)
    with caplog.at_level(logging.WARNING):
        assert build_engine(spec_for(tmp_path), gpu_cc=H100, timing_cache=cache_path).is_file()
    assert "starting a new one" in caplog.text
    assert trt.STATE.configs[-1].get_timing_cache().device == "sm_90"


def test_fake_turns_a_bad_timing_cache_blob_into_an_empty_cache(trt) -> None:
    logger = trt.Logger()
    config = trt.Builder(logger).create_builder_config()
    fresh = config.create_timing_cache(b"")
    for blob in (b"garbage", fresh.serialize()[:10]):
        cache = config.create_timing_cache(blob)
        assert cache is not None and cache.entries == []  # empty, as TensorRT returns: not None
        assert memoryview(cache.serialize()) == memoryview(fresh.serialize())
    assert "Returning an empty timing cache" in logger.messages[-1][1]


def test_timing_cache_from_another_tensorrt_version_is_replaced(tmp_path: Path, trt, monkeypatch,
                                                                caplog) -> None:
    cache_path = tmp_path / "timing.cache"
    monkeypatch.setattr(trt, "__version__", "10.14.1.48")
    build_engine(spec_for(tmp_path), gpu_cc=H100, timing_cache=cache_path)
    monkeypatch.setattr(trt, "__version__", "10.15.1.29")
    with caplog.at_level(logging.WARNING):
        build_engine(spec_for(tmp_path), gpu_cc=H100, timing_cache=cache_path)
    assert "damaged or from another TensorRT version; starting a new one" in caplog.text
    (cache, _), = trt.STATE.configs[-1].timing_cache_calls
    assert cache.loaded_from == b""  # the fresh cache, not the dropped one
    assert b"10.15.1.29" in cache_path.read_bytes()


def test_an_empty_timing_cache_file_is_no_warning(tmp_path: Path, trt, caplog) -> None:
    cache_path = tmp_path / "timing.cache"
    config = trt.Builder(trt.Logger()).create_builder_config()
    cache_path.write_bytes(config.create_timing_cache(b"").serialize())
    with caplog.at_level(logging.WARNING):
        build_engine(spec_for(tmp_path), gpu_cc=H100, timing_cache=cache_path)
    assert "timing cache" not in caplog.text


def test_cancelled_build_does_not_touch_the_timing_cache(tmp_path: Path, trt) -> None:
    cache_path = tmp_path / "timing.cache"
    build_engine(spec_for(tmp_path), gpu_cc=H100, timing_cache=cache_path)
    before = cache_path.read_bytes()
    cancel = threading.Event()
    spec = spec_for(tmp_path, "decoder", engine="models/sm_90/same-s/dec.trt")
    with pytest.raises(BuildCancelled):
        build_engine(spec, gpu_cc=H100, cancel=cancel, timing_cache=cache_path,
                     progress=lambda phase, step, steps: cancel.set() if step else None)
    assert cache_path.read_bytes() == before


# ---- the built engine loads ---------------------------------------------------------------------

def test_built_engines_load_with_trtengine(tmp_path: Path, trt, caplog) -> None:
    with caplog.at_level(logging.INFO, logger="engines.models.builder"):
        dit = build_engine(spec_for(tmp_path), gpu_cc=H100)
    assert "Built sm_90/sa3-m/dit_fp16.trt from dit.onnx: fp16 strongly typed" in caplog.text
    with TrtEngine(dit, gpu_sm="sm_90") as engine:
        assert engine.input_names == ["x", "t", "t5_hidden", "t5_mask", "seconds_total",
                                      "local_add_cond"]
        assert engine.output_names == ["velocity"]
        assert engine.specs["x"].profile == default_profiles("dit")["x"]
        assert engine.specs["local_add_cond"].profile == default_profiles("dit")["local_add_cond"]
        assert engine.specs["t5_hidden"].shape == (1, 256, 768)
        context = engine.create_context()
        context.set_input_shape("x", (1, 256, 100))
        context.set_input_shape("local_add_cond", (1, 257, 100))
        assert context.output_shape("velocity") == (1, 256, 100)

    spec = spec_for(tmp_path, "decoder",
                    engine="models/sm_90/same-s/dec_bf16_chunkable_limiter.trt")
    spec = BuildSpec(spec.onnx_path, spec.engine_path, "decoder", "fp16",
                     default_profiles("decoder", wide=True))
    with TrtEngine(build_engine(spec, gpu_cc=H100), gpu_sm="sm_90") as decoder:
        assert decoder.specs["latent"].profile == ((1, 256, 1), (1, 256, 1292), (1, 256, 8192))
        assert decoder.specs["limiter_ceiling"].shape == ()
        assert decoder.specs["pcm"].dtype == "int32"
        context = decoder.create_context()
        context.set_input_shape("latent", (1, 256, 8000))
        assert context.output_shape("pcm") == (1, 8000 * 4096, 2)

    spec = spec_for(tmp_path, "encoder", engine="models/sm_90/same-s/enc_bf16_chunkable.trt")
    with TrtEngine(build_engine(spec, gpu_cc=H100), gpu_sm="sm_90") as encoder:
        assert encoder.specs["audio"].dtype == "float16"  # discovered, never assumed
        context = encoder.create_context()
        context.set_input_shape("audio", (1, 2, 64 * 4096))
        assert context.output_shape("latent") == (1, 256, 64)

    spec = spec_for(tmp_path, "text", engine="models/sm_90/t5gemma/t5gemma_fp16.trt")
    assert not spec.profiles
    with TrtEngine(build_engine(spec, gpu_cc=H100), gpu_sm="sm_90") as text:
        assert not trt.STATE.configs[-1].profiles  # static: no profile was added
        assert all(s.profile is None for s in text.specs.values())
        assert text.specs["input_ids"].dtype == "int64"


# ---- planning -----------------------------------------------------------------------------------

ONNX_TREE = {
    "t5gemma": ["t5gemma_fp16.onnx", "tokenizer.json"],
    "sa3-sm-music": ["dit_fp16mixed.onnx", "dit_fp8.onnx", "dit_fp32.onnx"],
    "sa3-sm-sfx": ["dit_fp16.onnx"],
    "sa3-m": ["dit_fp16.onnx"],
    "same-s": ["dec_bf16_chunkable_limiter.onnx", "enc_bf16_chunkable.onnx", "dec_fp8.onnx",
               "enc_fp8.onnx", "dec_fp8_fast.onnx", "dec_dynamic_bf16.onnx"],
    "same-l": ["dec_fp16_chunkable_limiter.onnx", "dec_dynamic_triton_swa.onnx"],
}


@pytest.fixture
def models(tmp_path: Path) -> Path:
    root = tmp_path / "models"
    for subdir, names in ONNX_TREE.items():
        for name in names:
            path = root / "onnx" / subdir / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"\x08\x08")  # content is irrelevant to planning
    return root


def _planned(specs: list[BuildSpec], root: Path) -> dict[str, tuple[str, str, str]]:
    return {str(s.engine_path.relative_to(root)): (s.onnx_path.name, s.role, s.precision)
            for s in specs}


def test_plan_fp16_small_sets_share_text_encoder_and_codec(models: Path) -> None:
    specs = plan_builds(models, ["sm-music", "sm-sfx"], "sm_120", "fp16mixed")
    assert _planned(specs, models) == {
        "sm_120/t5gemma/t5gemma_fp16.trt": ("t5gemma_fp16.onnx", "text", "fp16"),
        "sm_120/sa3-sm-music/dit_fp16.trt": ("dit_fp16mixed.onnx", "dit", "fp16"),
        "sm_120/same-s/dec_bf16_chunkable_limiter.trt":
            ("dec_bf16_chunkable_limiter.onnx", "decoder", "fp16"),
        "sm_120/same-s/enc_bf16_chunkable.trt": ("enc_bf16_chunkable.onnx", "encoder", "fp16"),
        "sm_120/sa3-sm-sfx/dit_fp16.trt": ("dit_fp16.onnx", "dit", "fp16"),
    }
    by_role = {s.role: s for s in specs}
    assert by_role["dit"].profiles == default_profiles("dit")
    assert by_role["decoder"].profiles == default_profiles("decoder")
    assert by_role["text"].profiles == {}


def test_plan_fp8_uses_the_fp8_tiers(models: Path) -> None:
    specs = plan_builds(models, ["sm-music"], "sm_90", "fp8")
    assert _planned(specs, models) == {
        "sm_90/t5gemma/t5gemma_fp16.trt": ("t5gemma_fp16.onnx", "text", "fp16"),
        "sm_90/sa3-sm-music/dit_fp8.trt": ("dit_fp8.onnx", "dit", "fp8"),
        "sm_90/same-s/dec_fp8.trt": ("dec_fp8.onnx", "decoder", "fp8"),
        "sm_90/same-s/enc_fp8.trt": ("enc_fp8.onnx", "encoder", "fp8"),
        "sm_90/same-s/dec_fp8_fast.trt": ("dec_fp8_fast.onnx", "decoder", "fp8"),
    }


def test_plan_adds_a_tier_for_a_missing_encoder(models: Path) -> None:
    (models / "onnx/same-s/enc_fp8.onnx").unlink()
    planned = _planned(plan_builds(models, ["sm-music"], "sm_90", "fp8"), models)
    assert {name for name in planned if "same-s" in name} == {
        "sm_90/same-s/dec_fp8.trt", "sm_90/same-s/dec_fp8_fast.trt",
        "sm_90/same-s/dec_bf16_chunkable_limiter.trt", "sm_90/same-s/enc_bf16_chunkable.trt"}
    (models / "onnx/same-s/enc_bf16_chunkable.onnx").unlink()
    planned = _planned(plan_builds(models, ["sm-music"], "sm_90", "fp16"), models)
    assert {name for name in planned if "same-s" in name} == {  # no encoder anywhere: one tier
        "sm_90/same-s/dec_bf16_chunkable_limiter.trt"}


def test_plan_medium_wide_without_encoder(models: Path) -> None:
    specs = plan_builds(models, ["medium"], "sm_90", "fp16", wide=True)
    planned = _planned(specs, models)
    assert planned["sm_90/same-l/dec_fp16_chunkable_limiter.trt"] == (
        "dec_fp16_chunkable_limiter.onnx", "decoder", "fp16")
    assert not any("enc" in name or "triton" in name for name in planned)
    decoder = next(s for s in specs if s.role == "decoder")
    assert decoder.profiles == default_profiles("decoder", wide=True)


def test_plan_fp32_keeps_the_canonical_codec(models: Path) -> None:
    planned = _planned(plan_builds(models, ["sm-music"], "sm_90", "fp32"), models)
    assert planned["sm_90/sa3-sm-music/dit_fp32.trt"] == ("dit_fp32.onnx", "dit", "fp32")
    assert "sm_90/same-s/dec_bf16_chunkable_limiter.trt" in planned


def test_plan_names_what_is_missing(models: Path) -> None:
    with pytest.raises(ModelUnavailableError, match=r"needs 'dit_fp8.onnx' in .*sa3-sm-sfx; "
                                                    r"download .*models download") as caught:
        plan_builds(models, ["sm-sfx"], "sm_90", "fp8")
    from engines.cli.words import say  # the command line words the remedy as its command

    assert "models download sm-sfx --onnx" in say(caught.value)
    (models / "onnx/same-l/dec_fp16_chunkable_limiter.onnx").unlink()
    with pytest.raises(ModelUnavailableError, match="dec_fp16_chunkable_limiter.onnx"):
        plan_builds(models, ["medium"], "sm_90", "fp16")  # the JIT graph is no substitute
    with pytest.raises(RequestError, match="sm_90"):
        plan_builds(models, ["medium"], "9.0", "fp16")
    with pytest.raises(RequestError, match="Unknown model"):
        plan_builds(models, ["large"], "sm_90", "fp16")


def test_plan_demo_set(models: Path) -> None:
    with pytest.raises(ModelUnavailableError, match="demo"):
        plan_builds(models, ["demo"], "sm_89", "fp16")
    for name in ("t5gemma.onnx", "dit_fp32.onnx", "enc.onnx", "dec.onnx"):
        (models / "onnx/demo" / name).parent.mkdir(parents=True, exist_ok=True)
        (models / "onnx/demo" / name).write_bytes(b"\x08")
    assert _planned(plan_builds(models, ["demo"], "sm_89", "fp16"), models) == {
        "sm_89/demo/t5gemma.trt": ("t5gemma.onnx", "text", "fp32"),
        "sm_89/demo/dit_fp32.trt": ("dit_fp32.onnx", "dit", "fp32"),
        "sm_89/demo/enc.trt": ("enc.onnx", "encoder", "fp32"),
        "sm_89/demo/dec.trt": ("dec.onnx", "decoder", "fp32"),
    }


@pytest.mark.parametrize(("model", "precision"), [("sm-music", "fp16"), ("sm-music", "fp8"),
                                                  ("medium", "fp16")])
def test_planned_engines_are_what_the_catalog_finds(models: Path, trt, model: str,
                                                    precision: str) -> None:
    # Build every planned engine from SA3-shaped ONNX files, then ask the catalog.
    specs = plan_builds(models, [model], "sm_90", precision)
    for spec in specs:
        write_onnx(spec.onnx_path, spec.role, fp8=spec.precision == "fp8")
        build_engine(spec, gpu_cc=H100)
    gpu = GpuInfo("NVIDIA H100", 9, 0)
    found = Catalog(models, gpu=gpu, tensorrt_version="10.15.1.29").resolve(
        model, precision=precision, backend="tensorrt", need_encoder=model != "medium")
    assert found.runnable, found.reason
    built = {s.engine_path for s in specs}
    assert {found.files.text_encoder, found.files.dit, found.files.decoder} <= built
    if found.files.encoder is not None:
        assert found.files.encoder in built
    for spec in specs:
        with TrtEngine(spec.engine_path, gpu_sm="sm_90") as engine:
            assert set(engine.specs) >= set(spec.profiles)


def test_the_real_demo_graphs_build_and_load(tmp_path: Path, trt) -> None:
    from engines import demo

    models = tmp_path / "models"
    demo.ensure_demo_models(models)
    specs = plan_builds(models, ["demo"], "sm_90", "fp32")
    for spec in specs:
        build_engine(spec, gpu_cc=H100)
        assert not trt.STATE.networks[-1].strongly_typed
    with TrtEngine(models / "sm_90/demo/dit_fp32.trt", gpu_sm="sm_90") as dit:
        assert dit.specs["x"].profile == default_profiles("dit")["x"]
        assert dit.output_names == ["velocity"]
    with TrtEngine(models / "sm_90/demo/dec.trt", gpu_sm="sm_90") as decoder:
        assert decoder.input_names == ["latent", "limiter_ceiling"]
        assert decoder.specs["pcm"].dtype == "int32"


def test_errors_are_studio_errors() -> None:
    assert issubclass(BuildError, BackendError)
    assert issubclass(BuildCancelled, CancelledError)
    assert str(BuildCancelled()) == "Build cancelled; no engine file was written."
