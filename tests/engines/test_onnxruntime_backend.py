"""The ONNX Runtime backend on engine sets other than the stock demo: decoder flavours, dtypes."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from engines import demo
from engines.backends.onnxruntime import OnnxRuntimeBackend
from engines.catalog import EngineFiles
from engines.errors import ModelUnavailableError
from engines.request import GenerationRequest, validate_request

L_SAMPLES = 4096
# Pinned as engines/demo/graph_builder.py pins the demo: left unset, the installed onnx stamps its
# newest IR version, which an older installed ONNX Runtime refuses to load.
ONNX_IR_VERSION = 8
ONNX_OPSET = 17


def _pinned_model(graph: onnx.GraphProto) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)])
    model.ir_version = ONNX_IR_VERSION
    return model


def _save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def _decoder(path: Path, output: str, scale: float) -> Path:
    """latent (1,256,L) -> repeats latent channels 0/1 over each 4096-sample frame, times scale."""
    nodes = [
        helper.make_node("Slice", ["latent", "s0", "s1", "ax"], ["two"]),  # (1, 2, L)
        helper.make_node("Unsqueeze", ["two", "last"], ["two4"]),  # (1, 2, L, 1)
        helper.make_node("Expand", ["two4", "rep"], ["frames"]),  # (1, 2, L, 4096)
        helper.make_node("Reshape", ["frames", "flat"], ["planar"]),  # (1, 2, N)
        helper.make_node("Mul", ["planar", "scale"], ["scaled"]),
    ]
    inits = [
        helper.make_tensor("s0", TensorProto.INT64, [1], [0]),
        helper.make_tensor("s1", TensorProto.INT64, [1], [2]),
        helper.make_tensor("ax", TensorProto.INT64, [1], [1]),
        helper.make_tensor("last", TensorProto.INT64, [1], [-1]),
        helper.make_tensor("rep", TensorProto.INT64, [4], [1, 1, 1, L_SAMPLES]),
        helper.make_tensor("flat", TensorProto.INT64, [3], [1, 2, -1]),
        helper.make_tensor("scale", TensorProto.FLOAT, [], [scale]),
    ]
    if output == "audio":
        nodes.append(helper.make_node("Identity", ["scaled"], ["audio"]))
        out = helper.make_tensor_value_info("audio", TensorProto.FLOAT, [1, 2, "N"])
    else:
        nodes += [helper.make_node("Transpose", ["scaled"], ["inter"], perm=[0, 2, 1]),
                  helper.make_node("Cast", ["inter"], [output], to=TensorProto.INT32)]
        out = helper.make_tensor_value_info(output, TensorProto.INT32, [1, "N", 2])
    graph = helper.make_graph(
        nodes, "test_decoder",
        [helper.make_tensor_value_info("latent", TensorProto.FLOAT, [1, 256, "L"])], [out], inits)
    return _save(_pinned_model(graph), path)


def _fp16_dit(source: Path, path: Path) -> Path:
    """The demo DiT with its `x` input declared float16, as a half-precision export would be."""
    model = onnx.load(str(source))
    for value in model.graph.input:
        if value.name == "x":
            value.type.tensor_type.elem_type = TensorProto.FLOAT16
    for node in model.graph.node:
        node.input[:] = ["x_f32" if name == "x" else name for name in node.input]
    model.graph.node.insert(0, helper.make_node("Cast", ["x"], ["x_f32"], to=TensorProto.FLOAT))
    return _save(model, path)


@pytest.fixture(scope="module")
def engine_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = demo.ensure_demo_models(tmp_path_factory.mktemp("demo"))
    folder = tmp_path_factory.mktemp("engines")
    for name in (demo.TEXT_ENCODER_FILE, demo.ENCODER_FILE, demo.TOKENIZER_FILE):
        shutil.copy(source / name, folder / name)
    _fp16_dit(source / demo.DIT_FILE, folder / "dit_fp16.onnx")
    _decoder(folder / "dec_audio.onnx", "audio", 0.5)
    _decoder(folder / "dec_unbounded.onnx", "pcm_unbounded", 20000.0)
    return folder


def _files(folder: Path, decoder: str) -> EngineFiles:
    return EngineFiles(format="onnx", text_encoder=folder / demo.TEXT_ENCODER_FILE,
                       tokenizer=folder / demo.TOKENIZER_FILE, dit=folder / "dit_fp16.onnx",
                       decoder=folder / decoder, encoder=folder / demo.ENCODER_FILE,
                       codec_tier="canonical", jit_plugin=False)


def _request(**kwargs):
    return validate_request(GenerationRequest(prompt="bell", seconds=3.0, seed=1, **kwargs),
                            380.0)


def test_legacy_float_audio_decoder(engine_dir: Path) -> None:
    backend = OnnxRuntimeBackend(_files(engine_dir, "dec_audio.onnx"))
    assert backend.decoder_output == "audio"
    result = backend.generate(_request())
    expected = np.clip(np.repeat(result.latents[:2], L_SAMPLES, axis=1).T * 0.5, -1, 1)
    expected = np.rint(expected * 32767).astype(np.int16)[: result.pcm.shape[0]]
    np.testing.assert_array_equal(result.pcm, expected)


def test_unbounded_pcm_decoder_is_clamped_not_wrapped(engine_dir: Path) -> None:
    backend = OnnxRuntimeBackend(_files(engine_dir, "dec_unbounded.onnx"))
    assert backend.decoder_output == "pcm_unbounded"
    pcm = backend.decode(np.full((1, 256, 32), 3.0, np.float32), 0.977)
    assert pcm.dtype == np.int16 and pcm.shape == (32 * L_SAMPLES, 2)
    assert pcm.max() == 32767  # 60000 clamps; a plain cast would wrap to negative
    pcm = backend.decode(np.full((1, 256, 32), -3.0, np.float32), 0.977)
    assert pcm.min() == -32767


def test_float16_inputs_are_fed_as_declared(engine_dir: Path) -> None:
    backend = OnnxRuntimeBackend(_files(engine_dir, "dec_audio.onnx"))
    assert backend._dit.inputs["x"] is np.float16
    result = backend.generate(_request(cfg=2.0, negative_prompt="metal"))
    assert np.all(np.isfinite(result.latents)) and np.abs(result.latents).max() > 0.1


def test_a_graph_without_an_sa3_decoder_output_is_refused(engine_dir: Path, tmp_path: Path):
    bad = tmp_path / "dec_other.onnx"
    model = onnx.load(str(engine_dir / "dec_audio.onnx"))
    model.graph.output[0].name = "waveform"
    model.graph.node[-1].output[0] = "waveform"
    _save(model, bad)
    files = _files(engine_dir, "dec_audio.onnx")
    files = EngineFiles(**{**files.__dict__, "decoder": bad})
    with pytest.raises(ModelUnavailableError, match="not an SA3 decoder"):
        OnnxRuntimeBackend(files)


def test_a_corrupt_file_is_one_clear_error(engine_dir: Path, tmp_path: Path) -> None:
    broken = tmp_path / "dit_fp16.onnx"
    broken.write_bytes(b"\x00not a protobuf")
    files = EngineFiles(**{**_files(engine_dir, "dec_audio.onnx").__dict__, "dit": broken})
    with pytest.raises(ModelUnavailableError, match="could not load the DiT 'dit_fp16.onnx'"):
        OnnxRuntimeBackend(files)
