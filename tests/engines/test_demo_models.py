"""The demo model set: exact SA3 engine contract, deterministic build, a codec that inverts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from engines import demo
from engines.constants import LATENT_CHANNELS, SAMPLES_PER_LATENT, TEXT_HIDDEN, TEXT_TOKENS
from engines.demo.dft import DFT_LENGTH, dft
from engines.demo.graph_builder import OPSET, GraphBuilder, f32_info
from engines.demo.recipes import build_vocabulary
from engines.tokenizer import PromptTokenizer
from tests.demo_support import band_profile, similarity

# ONNX operators that TensorRT 10's ONNX parser imports natively (onnx-tensorrt's operator
# table), which the demo graphs must keep to so `models selftest` can build them into engines.
# DFT and STFT are deliberately absent: TensorRT has no importer for them.
TENSORRT_ONNX_OPS = frozenset({
    "Abs", "Add", "And", "ArgMax", "ArgMin", "AveragePool", "Cast", "Ceil", "Clip", "Concat",
    "Constant", "ConstantOfShape", "Conv", "Cos", "CumSum", "Div", "Einsum", "Equal", "Erf",
    "Exp", "Expand", "Flatten", "Floor", "Gather", "GatherElements", "GatherND", "Gemm",
    "Greater", "GreaterOrEqual", "Identity", "LayerNormalization", "Less", "LessOrEqual", "Log",
    "MatMul", "Max", "MaxPool", "Min", "Mod", "Mul", "Neg", "Not", "Or", "Pad", "Pow", "Range",
    "Reciprocal", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceSum", "Relu", "Reshape",
    "Round", "Shape", "Sigmoid", "Sign", "Sin", "Slice", "Softmax", "Split", "Sqrt", "Squeeze",
    "Sub", "Sum", "Tanh", "Tile", "Transpose", "Unsqueeze", "Where",
})
GRAPH_FILES = (demo.TEXT_ENCODER_FILE, demo.DIT_FILE, demo.DIT_BRANCH_FILE, demo.ENCODER_FILE,
               demo.DECODER_FILE, demo.DECODER_COARSE_FILE)


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo.ensure_demo_models(tmp_path_factory.mktemp("models"))


def _session(path: Path) -> ort.InferenceSession:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _io(path: Path) -> tuple[dict, dict]:
    model = onnx.load(str(path))

    def describe(values):
        out = {}
        for v in values:
            dims = [d.dim_value if d.HasField("dim_value") else d.dim_param
                    for d in v.type.tensor_type.shape.dim]
            out[v.name] = (onnx.helper.tensor_dtype_to_np_dtype(v.type.tensor_type.elem_type),
                           dims)
        return out

    return describe(model.graph.input), describe(model.graph.output)


def test_files_follow_the_sa3_engine_contract(demo_dir: Path) -> None:
    ins, outs = _io(demo_dir / demo.TEXT_ENCODER_FILE)
    assert ins == {"input_ids": (np.int64, [1, TEXT_TOKENS]),
                   "attention_mask": (np.int64, [1, TEXT_TOKENS])}
    assert outs == {"hidden_states": (np.float32, [1, TEXT_TOKENS, TEXT_HIDDEN])}

    ins, outs = _io(demo_dir / demo.DIT_FILE)
    assert ins == {"x": (np.float32, [1, LATENT_CHANNELS, "L"]), "t": (np.float32, [1]),
                   "t5_hidden": (np.float32, [1, TEXT_TOKENS, TEXT_HIDDEN]),
                   "t5_mask": (np.float32, [1, TEXT_TOKENS]),
                   "seconds_total": (np.float32, [1]),
                   "local_add_cond": (np.float32, [1, LATENT_CHANNELS + 1, "L"])}
    assert outs == {"velocity": (np.float32, [1, LATENT_CHANNELS, "L"])}

    ins, outs = _io(demo_dir / demo.ENCODER_FILE)
    assert ins == {"audio": (np.float32, [1, 2, "N"])}
    assert outs == {"latent": (np.float32, [1, LATENT_CHANNELS, "L"])}

    for decoder in (demo.DECODER_FILE, demo.DECODER_COARSE_FILE):  # both codec tiers
        ins, outs = _io(demo_dir / decoder)
        assert ins == {"latent": (np.float32, [1, LATENT_CHANNELS, "L"]),
                       "limiter_ceiling": (np.float32, [])}
        assert outs == {"pcm": (np.int32, [1, "N", 2])}


@pytest.mark.parametrize("name", GRAPH_FILES)
def test_graphs_use_only_operators_tensorrt_imports(demo_dir: Path, name: str) -> None:
    model = onnx.load(str(demo_dir / name))
    onnx.checker.check_model(model, full_check=True)
    # ONNX Runtime in some environments refuses newer IR versions: the pin stays.
    assert model.ir_version == 8
    assert [(o.domain, o.version) for o in model.opset_import] == [("", OPSET)]
    used = {node.op_type for node in model.graph.node}
    assert used <= TENSORRT_ONNX_OPS, sorted(used - TENSORRT_ONNX_OPS)
    assert all(node.domain in ("", "ai.onnx") for node in model.graph.node)


@pytest.mark.parametrize(("inputs", "outputs", "inverse"),
                         [(2 * SAMPLES_PER_LATENT, SAMPLES_PER_LATENT, False),
                          (SAMPLES_PER_LATENT, 2 * SAMPLES_PER_LATENT, True)])
def test_factored_dft_matches_an_fft(inputs: int, outputs: int, inverse: bool) -> None:
    """The codec's MatMul DFT agrees with a float64 FFT to float32 rounding."""
    length = DFT_LENGTH
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((3, inputs)) + 1j * rng.standard_normal((3, inputs)))
    x = x.astype(np.complex64)
    g = GraphBuilder("dft")
    re, im = dft(g, ("re", "im"), inputs, outputs, inverse)
    g.op("Identity", re, out="y_re")
    g.op("Identity", im, out="y_im")
    model = g.model([f32_info("re", [3, inputs]), f32_info("im", [3, inputs])],
                    [f32_info("y_re", [3, outputs]), f32_info("y_im", [3, outputs])], "dft")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    y_re, y_im = session.run(None, {"re": x.real.copy(), "im": x.imag.copy()})
    padded = np.pad(x.astype(np.complex128), ((0, 0), (0, length - inputs)))
    want = np.fft.ifft(padded) * length if inverse else np.fft.fft(padded)
    error = np.abs(y_re + 1j * y_im - want[:, :outputs]).max()
    assert error < 1e-5 * np.abs(want).max()


def test_decoder_output_is_int32_pcm_of_the_right_length(demo_dir: Path) -> None:
    latent = np.random.default_rng(1).standard_normal((1, LATENT_CHANNELS, 33)).astype(np.float32)
    pcm = _session(demo_dir / demo.DECODER_FILE).run(
        None, {"latent": latent, "limiter_ceiling": np.array(0.977, np.float32)})[0]
    assert pcm.dtype == np.int32 and pcm.shape == (1, 33 * SAMPLES_PER_LATENT, 2)
    assert np.abs(pcm).max() <= round(0.977 * 32767)  # the limiter holds its ceiling


def test_coarse_tier_is_the_demo_decoder_of_coarsely_quantised_latents(demo_dir: Path) -> None:
    """The second demo codec tier: the same decoder after a float quantisation with 2 mantissa
    bits (checked against that rule written out by hand, not against the graph's own code)."""
    rng = np.random.default_rng(5)
    latent = (2.0 * rng.standard_normal((1, LATENT_CHANNELS, 40))).astype(np.float32)
    by_hand = np.zeros_like(latent)
    for index, value in np.ndenumerate(latent):
        magnitude = abs(float(value))
        if magnitude >= 1 / 64:  # quieter coefficients are flushed
            step = 2.0 ** (np.floor(np.log2(magnitude)) - 2)
            by_hand[index] = np.sign(value) * round(magnitude / step) * step
    ceiling = {"limiter_ceiling": np.array(0.977, np.float32)}
    coarse = _session(demo_dir / demo.DECODER_COARSE_FILE).run(None, {"latent": latent,
                                                                     **ceiling})[0]
    expected = _session(demo_dir / demo.DECODER_FILE).run(None, {"latent": by_hand,
                                                                **ceiling})[0]
    assert np.abs(coarse.astype(int) - expected).max() <= 1  # rounding ties at most
    plain = _session(demo_dir / demo.DECODER_FILE).run(None, {"latent": latent, **ceiling})[0]
    assert not np.array_equal(coarse, plain)


def test_build_is_deterministic_small_and_labelled(demo_dir: Path, tmp_path: Path) -> None:
    again = demo.ensure_demo_models(tmp_path)
    names = [demo.TEXT_ENCODER_FILE, demo.DIT_FILE, demo.ENCODER_FILE, demo.DECODER_FILE,
             demo.DECODER_COARSE_FILE, demo.TOKENIZER_FILE]
    for name in names:
        assert (demo_dir / name).read_bytes() == (again / name).read_bytes(), name
    total = sum((demo_dir / name).stat().st_size for name in names)
    assert total < 12_000_000
    assert demo.DEMO_LABEL == "Demo (procedural, not Stable Audio 3)"
    coarse_doc = onnx.load(str(demo_dir / demo.DECODER_COARSE_FILE)).doc_string
    assert coarse_doc.startswith("Demo tier (procedural, not Stable Audio 3)")
    for name in names[:5]:
        assert "not Stable Audio 3" in onnx.load(str(demo_dir / name)).graph.doc_string or \
               "not Stable Audio 3" in onnx.load(str(demo_dir / name)).doc_string


def test_outdated_or_damaged_build_is_rebuilt(tmp_path: Path) -> None:
    folder = demo.ensure_demo_models(tmp_path)
    (folder / demo.DIT_FILE).write_bytes(b"broken")
    (folder / demo.STAMP_NAME).write_text('{"builder": 0}')
    assert not demo.is_current(tmp_path)
    demo.ensure_demo_models(tmp_path)
    assert demo.is_current(tmp_path)
    onnx.checker.check_model(onnx.load(str(folder / demo.DIT_FILE)))


def test_encoder_inverts_the_decoder(demo_dir: Path) -> None:
    rng = np.random.default_rng(7)
    latent = (3.0 * rng.standard_normal((1, LATENT_CHANNELS, 40))).astype(np.float32)
    pcm = _session(demo_dir / demo.DECODER_FILE).run(
        None, {"latent": latent, "limiter_ceiling": np.array(1e4, np.float32)})[0]
    audio = (pcm[0].T[None] / 32767.0).astype(np.float32)
    back = _session(demo_dir / demo.ENCODER_FILE).run(None, {"audio": audio})[0]
    # int16 rounding of the audio is the only loss
    assert np.max(np.abs(back - latent)) < 0.02 * np.max(np.abs(latent))


def test_encoder_keeps_the_spectral_shape_of_any_audio(demo_dir: Path) -> None:
    """Foreign audio survives a round trip as a band vocoder: same spectrum, same envelope."""
    n = 64 * SAMPLES_PER_LATENT
    t = np.arange(n) / 44100
    rng = np.random.default_rng(3)
    sweep = 0.3 * np.sin(2 * np.pi * (200 * t + 400 * t**2))
    hiss = 0.05 * rng.standard_normal(n) * (t > 3)
    audio = np.stack([sweep + hiss, 0.5 * sweep + hiss]).astype(np.float32)[None]
    latent = _session(demo_dir / demo.ENCODER_FILE).run(None, {"audio": audio})[0]
    pcm = _session(demo_dir / demo.DECODER_FILE).run(
        None, {"latent": latent, "limiter_ceiling": np.array(1e4, np.float32)})[0][0]
    assert similarity(band_profile(pcm), band_profile(audio[0].T * 32767)) > 0.95


def test_tokenizer_pieces(demo_dir: Path) -> None:
    tok = PromptTokenizer(demo_dir / demo.TOKENIZER_FILE)
    vocab = build_vocabulary()
    coin = tok.encode("Coin pickup, bright")
    pieces = [vocab.pieces[i] for i in coin.input_ids[0, : int(coin.attention_mask.sum())]]
    assert pieces == ["\u2581coin", "\u2581pickup", ",", "\u2581bright", "<eos>"]
    assert coin.input_ids.shape == (1, TEXT_TOKENS) and coin.input_ids.dtype == np.int64
    assert coin.input_ids[0, 5:].max() == 0 and coin.attention_mask[0, 5:].max() == 0
    unicode = tok.encode("雷鳴 ⚡ thunder")
    assert not unicode.truncated and unicode.attention_mask.sum() > 3
    assert 3 not in unicode.input_ids[0]  # byte fallback: no <unk> for any unicode
    long = tok.encode("laser " * 300)
    assert long.truncated and long.token_count > TEXT_TOKENS
    assert long.attention_mask.sum() == TEXT_TOKENS
