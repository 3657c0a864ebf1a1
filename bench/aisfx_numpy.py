"""aisfx (Ma and Lerch, ISMIR 2022; CC BY 4.0 weights in the `aisfx` wheel on PyPI) run without
torch, for bench/bench_sound_search.py. The checkpoint is a torch zip of pickled tensors, read
with a restricted unpickler (tensor rebuilds, OrderedDict and numpy scalars only), and its
EmbeddingNet (4 conv blocks, 64 to 512 channels, BatchNorm folded in) runs as im2col matmuls,
or as one ONNX graph on ONNX Runtime (OnnxEmbeddingNet: the same numbers to 1e-5, 2.5x cheaper).
The spectrogram follows the package's librosa path (peak-normalised, 96 HTK mel bands, unit-sum,
log10(1e4 x + 1) / 9.4578), which its authors say may score a little below their Essentia one.

    python -m pip download aisfx --no-deps -d /tmp/aisfx   # a 23 MB wheel holding checkpoint.pth
"""

from __future__ import annotations

import collections
import io
import pickle
import zipfile

import numpy as np

_STORAGE = {"FloatStorage": np.float32, "LongStorage": np.int64, "HalfStorage": np.float16,
            "IntStorage": np.int32}
_SR, _FRAME, _HOP, _BANDS, _BLOCK = 44100, 2048, 1024, 96, 100


def load(path: str) -> tuple[dict, dict]:
    """(state dict of numpy arrays, dataset dict) of a checkpoint.pth, or of the wheel holding
    it."""
    archive = zipfile.ZipFile(path)
    inner = [n for n in archive.namelist() if n.endswith("models/checkpoint.pth")]
    if inner:
        archive = zipfile.ZipFile(io.BytesIO(archive.read(inner[0])))
    root = archive.namelist()[0].split("/")[0]

    def rebuild(storage, offset, size, stride, *_):
        key, dtype = storage
        raw = np.frombuffer(archive.read(f"{root}/data/{key}"), dtype=dtype)
        if not size:
            return raw[offset]
        strides = [step * raw.itemsize for step in stride]
        return np.lib.stride_tricks.as_strided(raw[offset:], shape=size, strides=strides).copy()

    allowed = {("torch._utils", "_rebuild_tensor_v2"): rebuild,
               ("collections", "OrderedDict"): collections.OrderedDict,
               ("numpy", "dtype"): np.dtype,
               ("numpy.core.multiarray", "scalar"):
                   lambda dtype, data: np.frombuffer(data, dtype=dtype)[0],
               ("_codecs", "encode"): lambda text, encoding="latin1": text.encode(encoding)}

    class Restricted(pickle.Unpickler):
        def find_class(self, module, name):
            if module == "torch" and name in _STORAGE:
                return name
            if (module, name) not in allowed:
                raise pickle.UnpicklingError(f"{module}.{name} is not allowed")
            return allowed[(module, name)]

        def persistent_load(self, pid):
            _, storage_type, key, _location, _count = pid
            return key, _STORAGE[storage_type]

    return Restricted(archive.open(f"{root}/data.pkl")).load()


def _mel_bank() -> np.ndarray:
    def to_mel(hz):
        return 2595.0 * np.log10(1.0 + hz / 700.0)
    edges = 700.0 * (10.0 ** (np.linspace(0.0, to_mel(_SR / 2), _BANDS + 2) / 2595.0) - 1.0)
    freqs = np.fft.rfftfreq(_FRAME, 1.0 / _SR)
    low, centre, high = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    rising, falling = (freqs - low) / (centre - low), (high - freqs) / (high - centre)
    bank = np.maximum(0, np.minimum(rising, falling))
    return (bank / np.maximum(bank.sum(axis=1, keepdims=True), 1e-12)).astype(np.float32)


_BANK = _mel_bank()
_WINDOW = np.hanning(_FRAME + 1)[:-1].astype(np.float32)


def spectrogram(stereo: np.ndarray) -> np.ndarray:
    mono = stereo.mean(axis=1).astype(np.float32)
    peak = float(np.abs(mono).max())
    mono = np.pad(mono / (peak if peak > 0 else 1.0), (_FRAME // 2, _FRAME // 2))
    if mono.size < _FRAME:
        mono = np.pad(mono, (0, _FRAME - mono.size))
    frames = np.lib.stride_tricks.sliding_window_view(mono, _FRAME)[::_HOP] * _WINDOW
    power = (np.abs(np.fft.rfft(frames, axis=1)) ** 2).astype(np.float32)
    return np.log10(power @ _BANK.T * 1e4 + 1.0) / 9.457798957824707


def blocks(spec: np.ndarray, size: int = _BLOCK, hop: int = _BLOCK // 2) -> np.ndarray:
    """2 s blocks with 1 s hop, the last partial one dropped, zero-padded as aisfx does."""
    count = max(1, int(np.ceil((spec.shape[0] - size) / hop + 1)))
    if (spec.shape[0] - size) % hop != 0 and count > 1:
        count -= 1
    data = np.vstack([spec, np.zeros((size, spec.shape[1]), np.float32)])
    return np.stack([data[i * hop:i * hop + size] for i in range(count)])


class EmbeddingNet:
    def __init__(self, weights: dict) -> None:
        self.layers = []
        for block in range(1, 5):
            for conv in (1, 2):
                prefix = f"embedding_net.conv_block{block}."
                kernel = weights[prefix + f"conv{conv}.weight"]
                gamma, beta, mean, var = (weights[prefix + f"bn{conv}.{name}"] for name in
                                          ("weight", "bias", "running_mean", "running_var"))
                scale = gamma / np.sqrt(var + 1e-5)
                folded = (kernel * scale[:, None, None, None]).reshape(kernel.shape[0], -1)
                self.layers.append((folded.astype(np.float32),
                                    (beta - mean * scale).astype(np.float32)))

    @staticmethod
    def _conv_relu(x: np.ndarray, kernel: np.ndarray, bias: np.ndarray) -> np.ndarray:
        batch, channels, height, width = x.shape
        padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        cols = np.empty((batch, channels, 9, height, width), dtype=np.float32)
        for i in range(3):
            for j in range(3):
                cols[:, :, i * 3 + j] = padded[:, :, i:i + height, j:j + width]
        out = np.matmul(kernel, cols.reshape(batch, channels * 9, height * width))
        return np.maximum(out + bias[None, :, None], 0).reshape(batch, -1, height, width)

    @staticmethod
    def _pool(x: np.ndarray) -> np.ndarray:
        batch, channels, height, width = x.shape
        x = x[:, :, :height // 2 * 2, :width // 2 * 2]
        return x.reshape(batch, channels, height // 2, 2, width // 2, 2).max(axis=(3, 5))

    def __call__(self, spec_blocks: np.ndarray) -> np.ndarray:
        x = spec_blocks[:, None].astype(np.float32)
        for index, (kernel, bias) in enumerate(self.layers):
            x = self._conv_relu(x, kernel, bias)
            if index % 2 == 1 and index < 6:  # the fourth block pools (1, 1): nothing
                x = self._pool(x)
        return x.mean(axis=3).max(axis=2)  # mean over frequency, max over time


def embed(net, stereo: np.ndarray) -> np.ndarray:
    """(512,) aisfx embedding of float (N, 2) audio at 44.1 kHz: the mean over its 2 s blocks
    (`net` an EmbeddingNet or an OnnxEmbeddingNet: the same function of the blocks)."""
    return net(blocks(spectrogram(stereo))).mean(axis=0)


class OnnxEmbeddingNet:
    """The same network as one ONNX graph on ONNX Runtime's CPU provider (the runtime the app
    already ships): about 2.5 times cheaper than the numpy matmuls, which is the cost an
    adoption would pay (bench/bench_sound_search.py reports it)."""

    def __init__(self, net: EmbeddingNet) -> None:
        import onnxruntime
        from onnx import TensorProto, helper, numpy_helper

        nodes, weights, x = [], [], "blocks"
        for index, (kernel, bias) in enumerate(net.layers):
            weights += [numpy_helper.from_array(kernel.reshape(kernel.shape[0], -1, 3, 3),
                                                f"w{index}"),
                        numpy_helper.from_array(bias, f"b{index}")]
            nodes += [helper.make_node("Conv", [x, f"w{index}", f"b{index}"], [f"c{index}"],
                                       pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
                      helper.make_node("Relu", [f"c{index}"], [f"r{index}"])]
            x = f"r{index}"
            if index % 2 == 1 and index < 6:
                nodes.append(helper.make_node("MaxPool", [x], [f"p{index}"],
                                              kernel_shape=[2, 2], strides=[2, 2]))
                x = f"p{index}"
        nodes += [helper.make_node("ReduceMean", [x], ["by_time"], axes=[3], keepdims=0),
                  helper.make_node("ReduceMax", ["by_time"], ["embedding"], axes=[2], keepdims=0)]
        graph = helper.make_graph(
            nodes, "aisfx", [helper.make_tensor_value_info("blocks", TensorProto.FLOAT,
                                                           ["n", 1, _BLOCK, _BANDS])],
            [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["n", 512])], weights)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        options = onnxruntime.SessionOptions()
        # Idle threads that spin would bill their CPU to whatever the process runs next (the
        # bench times our features in between).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                                     providers=["CPUExecutionProvider"])

    def __call__(self, spec_blocks: np.ndarray) -> np.ndarray:
        return self._session.run(None, {"blocks": spec_blocks[:, None].astype(np.float32)})[0]
