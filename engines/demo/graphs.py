"""ONNX graphs of the demo model set, built with onnx.helper (no training, no downloads).

Tensor names, shapes and dtypes follow the SA3 engine contract exactly (SA3_CONTRACTS section 2),
so the ONNX Runtime backend (and later TensorRT) cannot tell the demo from the real engines:

* text encoder: input_ids, attention_mask (1,256) int64 -> hidden_states (1,256,768) fp32
* DiT: x (1,256,L), t (1,), t5_hidden, t5_mask, seconds_total (1,), local_add_cond (1,257,L)
  -> velocity (1,256,L)
* encoder: audio (1,2,N) -> latent (1,256,N/4096)
* decoder: latent (1,256,L), limiter_ceiling () -> pcm (1,L*4096,2) int32

The DiT is the exact posterior-mean denoiser of a Gaussian "data distribution" whose mean and
spread come from the prompt (band envelopes built from the embedding's sound parameters), with an
empirical-Wiener term that trusts the parts of x standing clearly above the noise level, so
audio-to-audio keeps what it should. The codec is the band vocoder described in `layout`.

Every operator used is one TensorRT 10's ONNX parser imports (test_demo_models keeps a list), so
`models selftest` can build the same graphs into engines; that is why the codec's transform is a
factored DFT of MatMuls rather than ONNX's DFT operator.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from engines.constants import (
    LATENT_CHANNELS,
    SAMPLE_RATE,
    SAMPLES_PER_LATENT,
    TEXT_HIDDEN,
    TEXT_TOKENS,
)
from engines.demo import coarse as coarse_tier
from engines.demo import layout as lay

OPSET = 17
INT_MAX = np.iinfo(np.int64).max
FRAME_SECONDS = SAMPLES_PER_LATENT / SAMPLE_RATE
N = SAMPLES_PER_LATENT
HASH_PRIME = 2147483647
PRIOR_FLOOR = 0.05  # std every latent element may take, whatever the prompt
POOL_FRAMES = 7  # frames pooled (with both stereo channels) to tell signal from noise
TRUST_RATIO = 3.5  # pooled power over noise power that counts as signal (chance ~3e-6)
MAX_SIGNAL_VAR = 36.0  # the largest variance a latent element is believed to have
DFT_LENGTH = 2 * N  # the codec's transform length (one MDCT frame)
DFT_ROWS = 64  # P of the four-step DFT, DFT_LENGTH = P * Q: both small dense DFTs stay tiny
DFT_COLS = DFT_LENGTH // DFT_ROWS  # Q

Complex = tuple[str, str]  # (real part, imaginary part) tensor names of one complex tensor


class GraphBuilder:
    """Appends nodes with generated names; each method returns the output tensor name."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = 0

    def _fresh(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, value, dtype=np.float32, hint: str = "c") -> str:
        name = self._fresh(hint)
        self.initializers.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def ints(self, *values: int) -> str:
        return self.const(list(values), np.int64, "i")

    def op(self, op_type: str, *inputs: str, out: str | None = None, **attrs) -> str:
        output = out or self._fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [output], **attrs))
        return output

    # Shorthands for the arithmetic below.
    def add(self, a: str, b: str) -> str:
        return self.op("Add", a, b)

    def sub(self, a: str, b: str) -> str:
        return self.op("Sub", a, b)

    def mul(self, *xs: str) -> str:
        acc = xs[0]
        for x in xs[1:]:
            acc = self.op("Mul", acc, x)
        return acc

    def div(self, a: str, b: str) -> str:
        return self.op("Div", a, b)

    def f(self, value: float) -> str:
        return self.const(value)

    def slice(self, x: str, starts, ends, axes) -> str:
        return self.op("Slice", x, self.ints(*starts), self.ints(*ends), self.ints(*axes))

    def column(self, x: str, index: int) -> str:
        """x[:, index:index+1] of a 2-D tensor."""
        return self.slice(x, [index], [index + 1], [1])

    def model(self, inputs, outputs, doc: str) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, self.name, inputs, outputs, self.initializers)
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            producer_name="sa3-studio-demo",
            doc_string=doc,
        )
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model


def _f32(name: str, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


# --------------------------------------------------------------------------- text encoder
def text_encoder_model(embeddings: np.ndarray, bigrams: np.ndarray) -> onnx.ModelProto:
    """Embedding lookup; spelled-out pieces (letters, bytes) take the texture of their letter
    pair, so made-up words sound distinct rather than like an average of the alphabet."""
    g = GraphBuilder("demo_t5")
    table = g.const(embeddings, hint="embedding")
    hidden = g.op("Gather", table, "input_ids", axis=0)  # (1, 256, 768)
    previous = g.op("Concat", g.const([[0]], np.int64),
                    g.slice("input_ids", [0], [-1], [1]), axis=1)
    bucket = g.op("Mod", g.add(g.mul(previous, g.const(7919, np.int64)),
                               g.mul("input_ids", g.const(104729, np.int64))),
                  g.const(lay.BIGRAM_BUCKETS, np.int64))
    pair = g.op("Gather", g.const(bigrams, hint="bigrams"), bucket, axis=0)  # (1, 256, 304)
    pair = g.op("Pad", pair, g.ints(0, 0, 0, 0, 0, TEXT_HIDDEN - bigrams.shape[1]))
    spelled = g.slice(hidden, [lay.SPELLED_DIM], [lay.SPELLED_DIM + 1], [2])
    hidden = g.add(g.mul(hidden, g.sub(g.f(1.0), spelled)), g.mul(pair, spelled))
    mask = g.op("Unsqueeze", g.op("Cast", "attention_mask", to=TensorProto.FLOAT), g.ints(-1))
    g.op("Mul", hidden, mask, out="hidden_states")
    return g.model(
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, TEXT_TOKENS]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [1, TEXT_TOKENS])],
        [_f32("hidden_states", [1, TEXT_TOKENS, TEXT_HIDDEN])],
        "Demo text encoder (procedural, not Stable Audio 3): embedding lookup.",
    )


# --------------------------------------------------------------------------- DiT
def _frame_times(g: GraphBuilder, length: str) -> tuple[str, str]:
    """(j * frame, (j + 1) * frame) for j in 0..L-1, as float (L,)."""
    j = g.op("Cast", g.op("Range", g.const(0, np.int64), length, g.const(1, np.int64)),
             to=TensorProto.FLOAT)
    tau = g.mul(j, g.f(FRAME_SECONDS))
    return j, tau


def _inpaint_time(g: GraphBuilder, j: str, tau: str) -> str:
    """Time since the start of the span each frame sits in (0-based), or since 0 outside inpainting.

    Inside a regenerated span the prompt's sound starts over, as a designer expects when they
    paint a region. Start times are a running max computed with an (L, L) triangle.
    """
    keep = g.op("Reshape", g.slice("local_add_cond", [0, 0], [1, 1], [0, 1]), g.ints(-1))
    hole = g.sub(g.f(1.0), keep)
    prev = g.op("Concat", g.f([0.0]), g.slice(hole, [0], [-1], [0]), axis=0)
    start_flag = g.mul(hole, g.sub(g.f(1.0), prev))
    start_time = g.op("Unsqueeze", g.mul(start_flag, tau), g.ints(0))  # (1, L) over k
    tri = g.op("Cast", g.op("LessOrEqual", g.op("Unsqueeze", j, g.ints(0)),
                            g.op("Unsqueeze", j, g.ints(1))), to=TensorProto.FLOAT)  # [j, k]
    latest = g.op("ReduceMax", g.mul(tri, start_time), axes=[1], keepdims=0)
    return g.sub(tau, latest)


def _envelopes(g: GraphBuilder, layers: str, tau_p: str, tau_c: str, decay_scale: str) -> str:
    """(512, L) amplitude envelope of every token layer."""
    env = [g.column(layers, lay.ENV_OFFSET + i) for i in range(11)]
    attack = g.op("Max", env[lay.ENV_ATTACK], g.f(0.002))
    decay = g.mul(g.op("Max", env[lay.ENV_DECAY], g.f(1e-3)), decay_scale)
    repeat = env[lay.ENV_REPEAT]
    repeat_decay = g.mul(g.op("Max", env[lay.ENV_REPEAT_DECAY], g.f(1e-3)), decay_scale)
    tt = g.sub(tau_p, env[lay.ENV_ONSET])  # (512, L)
    active = g.op("Cast", g.op("GreaterOrEqual", tt, g.f(0.0)), to=TensorProto.FLOAT)
    ttp = g.op("Relu", tt)
    rise = g.op("Min", g.div(g.add(ttp, g.f(FRAME_SECONDS)), attack), g.f(1.0))
    fall = g.op("Exp", g.op("Neg", g.div(ttp, decay)))
    period = g.op("Max", repeat, g.f(1e-3))
    phase = g.sub(ttp, g.mul(period, g.op("Floor", g.div(ttp, period))))
    pulses = g.op("Where", g.op("Greater", repeat, g.f(0.0)),
                  g.op("Exp", g.op("Neg", g.div(phase, repeat_decay))), g.f(1.0))
    wobble = g.op("Cos", g.mul(g.f(2 * np.pi), env[lay.ENV_AM_RATE], ttp))
    am = g.sub(g.f(1.0), g.mul(env[lay.ENV_AM_DEPTH], g.f(0.5), g.sub(g.f(1.0), wobble)))
    progress = g.op("Clip", g.div(tau_c, g.op("Max", "seconds_total", g.f(1e-3))), g.f(0.0),
                    g.f(1.0))
    arch = g.op("Relu", g.op("Sin", g.mul(progress, g.f(np.pi))))
    swell = g.op("Pow", arch, g.op("Relu", env[lay.ENV_SWELL]))
    tail = g.op("Clip", g.div(g.sub("seconds_total", tau_c), g.f(FRAME_SECONDS)), g.f(0.0),
                g.f(1.0))
    return g.mul(active, rise, fall, pulses, am, swell, tail)


def _shift_bands(g: GraphBuilder, x: str, shift: str) -> str:
    """Move (256, L) band amplitudes up by `shift` (1, L) grid steps, linear interpolation."""
    k = g.const(np.arange(lay.BANDS, dtype=np.float32).reshape(-1, 1))
    src = g.sub(k, shift)  # (64, L)
    i0 = g.op("Floor", src)
    frac = g.sub(src, i0)
    i1 = g.add(i0, g.f(1.0))

    def gather(index: str) -> str:
        inside = g.op("Cast", g.op("And", g.op("GreaterOrEqual", index, g.f(0.0)),
                                   g.op("LessOrEqual", index, g.f(lay.BANDS - 1.0))),
                      to=TensorProto.FLOAT)
        clipped = g.op("Cast", g.op("Clip", index, g.f(0.0), g.f(lay.BANDS - 1.0)),
                       to=TensorProto.INT64)
        shape = g.op("Concat", g.ints(4), g.op("Shape", src), axis=0)
        idx = g.op("Expand", g.op("Unsqueeze", clipped, g.ints(0)), shape)
        blocks = g.op("Reshape", x, g.ints(4, lay.BANDS, -1))
        return g.mul(g.op("GatherElements", blocks, idx, axis=1), inside)

    out = g.add(g.mul(gather(i0), g.sub(g.f(1.0), frac)), g.mul(gather(i1), frac))
    return g.op("Reshape", out, g.ints(LATENT_CHANNELS, -1))


def dit_model() -> onnx.ModelProto:
    g = GraphBuilder("demo_dit")
    hidden = g.op("Squeeze", "t5_hidden", g.ints(0))  # (256, 768)
    mask = g.op("Squeeze", "t5_mask", g.ints(0))  # (256,)
    length = g.op("Gather", g.op("Shape", "x"), g.const(2, np.int64))
    j, tau = _frame_times(g, length)
    tau_c = g.op("Unsqueeze", g.add(tau, g.f(FRAME_SECONDS)), g.ints(0))
    tau_p = g.op("Unsqueeze", _inpaint_time(g, j, tau), g.ints(0))  # (1, L)

    # Token weights: content words only, salience-weighted, normalised to sum 1.
    content = g.op("Gather", hidden, g.const(lay.CONTENT_DIM, np.int64), axis=1)
    salience = g.op("Gather", hidden, g.const(lay.SALIENCE_DIM, np.int64), axis=1)
    weight = g.mul(mask, content, g.op("Exp", salience))
    total = g.op("ReduceSum", weight, g.ints(0), keepdims=1)
    weight = g.div(weight, g.op("Max", total, g.f(1e-6)))
    glob = g.slice(hidden, [lay.GLOBAL_OFFSET], [lay.GLOBAL_OFFSET + lay.GLOBAL_DIM], [1])
    content_avg = g.op("MatMul", g.op("Unsqueeze", weight, g.ints(0)), glob)  # (1, 12)
    modifier_sum = g.op("MatMul", g.op("Unsqueeze", mask, g.ints(0)), glob)  # (1, 12)
    chirp = g.column(content_avg, lay.G_CHIRP)
    pitch = g.add(g.column(content_avg, lay.G_PITCH), g.column(modifier_sum, lay.M_PITCH))
    tilt_db = g.column(modifier_sum, lay.M_TILT)
    decay_scale = g.op("Pow", g.f(2.0), g.column(modifier_sum, lay.M_DECAY))
    gain = g.op("Pow", g.f(10.0), g.div(g.column(modifier_sum, lay.M_GAIN), g.f(20.0)))

    layer_rows = lay.LAYERS_PER_TOKEN * TEXT_TOKENS
    layers = g.op("Reshape", g.slice(hidden, [0], [lay.GLOBAL_OFFSET], [1]),
                  g.ints(layer_rows, lay.LAYER_DIM))
    per_layer = g.op("Reshape", g.op("Expand", g.op("Unsqueeze", weight, g.ints(1)),
                                     g.ints(TEXT_TOKENS, lay.LAYERS_PER_TOKEN)),
                     g.ints(layer_rows, 1))
    base = g.mul(per_layer, g.column(layers, lay.ENV_OFFSET + lay.ENV_GAIN))
    envelope = _envelopes(g, layers, tau_p, tau_c, decay_scale)  # (512, L)

    noise = g.slice(layers, [lay.NOISE_SLICE.start], [lay.NOISE_SLICE.stop], [1])
    tone = g.slice(layers, [lay.TONE_SLICE.start], [lay.TONE_SLICE.stop], [1])
    var = g.op("Clip", g.column(layers, lay.ENV_OFFSET + lay.ENV_VARIABILITY), g.f(0.0),
               g.f(1.0))
    tone_var = g.mul(var, g.f(0.3))
    pan = g.op("Clip", g.column(layers, lay.ENV_OFFSET + lay.ENV_PAN), g.f(-1.0), g.f(1.0))
    left = g.op("Sqrt", g.sub(g.f(1.0), pan))
    right = g.op("Sqrt", g.add(g.f(1.0), pan))

    def spread(noise_w: str, tone_w: str) -> str:
        parts = [g.mul(noise, base, noise_w, left), g.mul(noise, base, noise_w, right),
                 g.mul(tone, base, tone_w, left), g.mul(tone, base, tone_w, right)]
        table = g.op("Concat", *parts, axis=1)  # (512, 256)
        return g.op("MatMul", g.op("Transpose", table, perm=[1, 0]), envelope)  # (256, L)

    one = g.f(1.0)
    mean = spread(g.op("Sqrt", g.sub(one, var)), g.op("Sqrt", g.sub(one, tone_var)))
    spread_std = spread(g.op("Sqrt", var), g.op("Sqrt", tone_var))
    band_pos = np.tile(np.arange(lay.BANDS) / (lay.BANDS - 1) - 0.5, 4).reshape(-1, 1)
    tilt = g.op("Pow", g.f(10.0), g.div(g.mul(tilt_db, g.const(band_pos)), g.f(20.0)))
    colour = g.mul(tilt, gain)
    shift = g.add(pitch, g.mul(chirp, tau_p))  # (1, L)
    mean = _shift_bands(g, g.mul(mean, colour), shift)
    std = _shift_bands(g, g.mul(spread_std, colour), shift)
    prior_var = g.add(g.mul(std, std), g.f(PRIOR_FLOOR**2))

    # Posterior mean of x0 given x_t = (1-t) x0 + t eps. The prior is widened where x holds
    # clearly more energy than noise of level t, pooled over 7 frames x 2 channels so that noise
    # alone rarely passes: that is what lets audio-to-audio keep the init audio's structure.
    x = g.op("Squeeze", "x", g.ints(0))
    t = "t"
    a = g.sub(one, t)
    resid = g.sub(x, g.mul(a, mean))
    power = g.op("Reshape", g.mul(resid, resid), g.ints(2, 2, lay.BANDS, -1))
    power = g.op("Expand", g.op("ReduceMean", power, axes=[1], keepdims=1), g.op("Shape", power))
    power = g.op("AveragePool", g.op("Reshape", power, g.ints(1, LATENT_CHANNELS, -1)),
                 kernel_shape=[POOL_FRAMES], pads=[POOL_FRAMES // 2, POOL_FRAMES // 2],
                 count_include_pad=0)
    power = g.op("Reshape", power, g.ints(LATENT_CHANNELS, -1))
    noise_power = g.mul(t, t)
    passes = g.op("Greater", power, g.mul(g.f(TRUST_RATIO), noise_power))
    excess = g.op("Where", passes, g.op("Relu", g.sub(power, noise_power)), g.f(0.0))
    signal_var = g.op("Min", g.div(excess, g.op("Max", g.mul(a, a), g.f(1e-6))),
                      g.f(MAX_SIGNAL_VAR))
    var_total = g.add(prior_var, signal_var)
    w = g.div(g.mul(a, var_total), g.add(g.mul(a, a, var_total), noise_power))
    denoised = g.add(mean, g.mul(w, resid))
    velocity = g.div(g.sub(x, denoised), g.op("Max", t, g.f(1e-4)))
    g.op("Unsqueeze", velocity, g.ints(0), out="velocity")
    return g.model(
        [_f32("x", [1, LATENT_CHANNELS, "L"]), _f32("t", [1]),
         _f32("t5_hidden", [1, TEXT_TOKENS, TEXT_HIDDEN]), _f32("t5_mask", [1, TEXT_TOKENS]),
         _f32("seconds_total", [1]), _f32("local_add_cond", [1, LATENT_CHANNELS + 1, "L"])],
        [_f32("velocity", [1, LATENT_CHANNELS, "L"])],
        "Demo DiT (procedural, not Stable Audio 3): Gaussian posterior-mean denoiser.",
    )


# --------------------------------------------------------------------------- factored DFT
# TensorRT imports no ONNX DFT, and a dense 8192-point basis would be a 100+ MB initializer. The
# "four-step" factorisation needs only a P-point and a Q-point DFT matrix plus a (P, Q) twiddle:
# with n = Q*n1 + n2 and m = m1 + P*m2,
#   X[m1 + P*m2] = sum_n2 W_Q^(n2*m2) * W_M^(n2*m1) * sum_n1 W_P^(n1*m1) * x[Q*n1 + n2].
# Known zeros in x (a zero-padded tail) and unwanted bins (a discarded half) shrink the matrices.
def _unit_roots(sign: int, rows: np.ndarray, cols: np.ndarray, length: int) -> np.ndarray:
    """exp(sign * 2 pi i * row * col / length) as a complex (len(rows), len(cols)) matrix."""
    return np.exp(sign * 2j * np.pi * np.outer(rows, cols) / length)


def _complex_matmul_left(g: GraphBuilder, matrix: np.ndarray, z: Complex) -> Complex:
    """matrix @ z over the second-to-last axis, as one real MatMul of stacked [re; im]."""
    block = np.block([[matrix.real, -matrix.imag], [matrix.imag, matrix.real]])
    out = g.op("MatMul", g.const(block), g.op("Concat", *z, axis=-2))
    rows = matrix.shape[0]
    return (g.slice(out, [0], [rows], [-2]), g.slice(out, [rows], [2 * rows], [-2]))


def _complex_matmul_right(g: GraphBuilder, z: Complex, matrix: np.ndarray) -> Complex:
    """z @ matrix over the last axis, as one real MatMul of side-by-side [re | im]."""
    block = np.block([[matrix.real, matrix.imag], [-matrix.imag, matrix.real]])
    out = g.op("MatMul", g.op("Concat", *z, axis=-1), g.const(block))
    cols = matrix.shape[1]
    return (g.slice(out, [0], [cols], [-1]), g.slice(out, [cols], [2 * cols], [-1]))


def _complex_scale(g: GraphBuilder, z: Complex, factor: np.ndarray) -> Complex:
    """Elementwise z * factor for a constant complex factor."""
    re, im = z
    fr, fi = g.const(factor.real), g.const(factor.imag)
    return (g.sub(g.mul(re, fr), g.mul(im, fi)), g.add(g.mul(re, fi), g.mul(im, fr)))


def _dft(g: GraphBuilder, z: Complex, inputs: int, outputs: int, inverse: bool = False) -> Complex:
    """Unnormalised DFT of length DFT_LENGTH along the last axis: (..., inputs) -> (B, outputs).

    Only the first `inputs` samples may be non-zero (a multiple of Q: the rest are taken as zero)
    and only the first `outputs` bins are returned (a multiple of P). Leading axes are flattened
    into one batch axis B. `inverse` flips the sign of the exponent (no 1/length factor).
    """
    sign = 1 if inverse else -1
    p, q = DFT_ROWS, DFT_COLS
    n1, m2 = np.arange(inputs // q), np.arange(outputs // p)
    grid = g.ints(-1, len(n1), q)
    rows = (g.op("Reshape", z[0], grid), g.op("Reshape", z[1], grid))  # (B, n1, n2)
    z = _complex_matmul_left(g, _unit_roots(sign, np.arange(p), n1, p), rows)  # (B, m1, n2)
    z = _complex_scale(g, z, _unit_roots(sign, np.arange(p), np.arange(q), DFT_LENGTH))
    z = _complex_matmul_right(g, z, _unit_roots(sign, np.arange(q), m2, q))  # (B, m1, m2)
    flat = g.ints(-1, outputs)  # bin m1 + P * m2: m2 becomes the slow axis
    return (g.op("Reshape", g.op("Transpose", z[0], perm=[0, 2, 1]), flat),
            g.op("Reshape", g.op("Transpose", z[1], perm=[0, 2, 1]), flat))


# --------------------------------------------------------------------------- codec
def _mdct_grid() -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """Sample index n (2N), bin index k (N), the MDCT phase offset n0, and the sine window."""
    n = np.arange(2 * N)
    return n, np.arange(N), 0.5 + N / 2, np.sin(np.pi * (n + 0.5) / (2 * N))


def _signs(g: GraphBuilder, length: str) -> str:
    """(2, L, N) pseudo-random +-1 per (channel, frame, bin): integer hash, exact everywhere."""
    ch = g.const(np.arange(2, dtype=np.int64).reshape(2, 1, 1) * 1299709, np.int64)
    k = g.const((np.arange(N, dtype=np.int64) * 104729 + 12345).reshape(1, 1, N), np.int64)
    j = g.op("Range", g.const(0, np.int64), length, g.const(1, np.int64))
    j = g.op("Reshape", g.op("Mul", j, g.const(7919, np.int64)), g.ints(1, -1, 1))
    prime = g.const(HASH_PRIME, np.int64)
    a = g.op("Mod", g.add(g.add(j, k), ch), prime)
    b = g.op("Mod", g.mul(a, a), prime)
    c = g.op("Mod", g.add(g.mul(b, g.const(48271, np.int64)), g.const(11, np.int64)), prime)
    bit = g.op("Mod", g.div(c, g.const(128, np.int64)), g.const(2, np.int64))
    return g.sub(g.f(1.0), g.mul(g.f(2.0), g.op("Cast", bit, to=TensorProto.FLOAT)))


def encoder_model() -> onnx.ModelProto:
    g = GraphBuilder("demo_encoder")
    n, k, n0, win = _mdct_grid()
    segments = g.op("Reshape", "audio", g.ints(2, -1, N))  # (2, L, N)
    length = g.op("Gather", g.op("Shape", segments), g.const(1, np.int64))
    following = g.op("Concat", g.slice(segments, [1], [INT_MAX], [1]),
                     g.slice(segments, [0], [1], [1]), axis=1)
    frames = g.op("Concat", segments, following, axis=2)  # (2, L, 2N), circular
    re = g.mul(frames, g.const(win * np.cos(np.pi * n / (2 * N))))
    im = g.mul(frames, g.const(-win * np.sin(np.pi * n / (2 * N))))
    spec = _dft(g, (re, im), inputs=2 * N, outputs=N)  # the MDCT needs only the first N bins
    zr = g.op("Reshape", spec[0], g.ints(2, -1, N))
    zi = g.op("Reshape", spec[1], g.ints(2, -1, N))
    phi = np.pi * n0 * (k + 0.5) / N
    scale = np.sqrt(2.0 / N)
    coeffs = g.add(g.mul(zr, g.const(scale * np.cos(phi))), g.mul(zi, g.const(scale * np.sin(phi))))

    member_t = g.const(lay.noise_membership().T)  # (N, 64)
    signs = _signs(g, length)
    projection = g.op("MatMul", g.mul(coeffs, signs), member_t)
    magnitude = g.op("Sqrt", g.op("MatMul", g.mul(coeffs, coeffs), member_t))
    noise = g.mul(g.op("Sign", projection), magnitude)  # (2, L, 64)
    tone = g.op("MatMul", coeffs, g.const(lay.tone_onehot().T))  # (2, L, 64)

    def channel(x: str, c: int) -> str:
        return g.op("Gather", x, g.const(c, np.int64), axis=0)  # (L, 64)

    latent = g.op("Concat", channel(noise, 0), channel(noise, 1), channel(tone, 0),
                  channel(tone, 1), axis=1)  # (L, 256)
    g.op("Unsqueeze", g.op("Transpose", latent, perm=[1, 0]), g.ints(0), out="latent")
    return g.model(
        [_f32("audio", [1, 2, "N"])],
        [_f32("latent", [1, LATENT_CHANNELS, "L"])],
        "Demo encoder (procedural, not Stable Audio 3): MDCT band analysis.",
    )


def decoder_model(coarse: bool = False) -> onnx.ModelProto:
    """The demo decoder; `coarse` builds the demo's coarse codec tier (see coarse.py)."""
    g = GraphBuilder("demo_decoder_coarse" if coarse else "demo_decoder")
    n, k, n0, win = _mdct_grid()
    z = g.op("Transpose", g.op("Squeeze", "latent", g.ints(0)), perm=[1, 0])  # (L, 256)
    if coarse:
        z = coarse_tier.quantize(g, z)
    length = g.op("Gather", g.op("Shape", z), g.const(0, np.int64))

    def pair(lo: int) -> str:
        left = g.op("Unsqueeze", g.slice(z, [lo], [lo + lay.BANDS], [1]), g.ints(0))
        right = g.op("Unsqueeze", g.slice(z, [lo + lay.BANDS], [lo + 2 * lay.BANDS], [1]),
                     g.ints(0))
        return g.op("Concat", left, right, axis=0)  # (2, L, 64)

    atoms = lay.noise_membership() / np.sqrt(lay.noise_membership().sum(axis=1, keepdims=True))
    coeffs = g.add(g.mul(g.op("MatMul", pair(0), g.const(atoms)), _signs(g, length)),
                   g.op("MatMul", pair(2 * lay.BANDS), g.const(lay.tone_onehot())))  # (2, L, N)
    re = g.mul(coeffs, g.const(np.cos(np.pi * n0 * k / N)))
    im = g.mul(coeffs, g.const(np.sin(np.pi * n0 * k / N)))
    # The spectrum's upper half is zero: the DFT skips it rather than padding.
    wave = _dft(g, (re, im), inputs=N, outputs=2 * N, inverse=True)
    yr = g.op("Reshape", wave[0], g.ints(2, -1, 2 * N))
    yi = g.op("Reshape", wave[1], g.ints(2, -1, 2 * N))
    amp = np.sqrt(2.0 / N) * win
    ang = np.pi * (n + n0) / (2 * N)
    frames = g.sub(g.mul(yr, g.const(amp * np.cos(ang))), g.mul(yi, g.const(amp * np.sin(ang))))
    first = g.slice(frames, [0], [N], [2])
    second = g.slice(frames, [N], [2 * N], [2])
    carried = g.op("Concat", g.slice(second, [-1], [INT_MAX], [1]),
                   g.slice(second, [0], [-1], [1]), axis=1)  # frame j-1's tail, circular
    audio = g.op("Transpose", g.op("Reshape", g.add(first, carried), g.ints(2, -1)), perm=[1, 0])

    # Soft-knee limiter: linear up to 75 % of the ceiling, tanh above it.
    ceiling = g.op("Max", "limiter_ceiling", g.f(1e-3))
    knee = g.mul(ceiling, g.f(0.75))
    room = g.sub(ceiling, knee)
    mag = g.op("Abs", audio)
    soft = g.add(knee, g.mul(room, g.op("Tanh", g.div(g.sub(mag, knee), room))))
    limited = g.mul(g.op("Sign", audio), g.op("Where", g.op("Greater", mag, knee), soft, mag))
    pcm = g.op("Cast", g.op("Round", g.mul(limited, g.f(32767.0))), to=TensorProto.INT32)
    g.op("Unsqueeze", pcm, g.ints(0), out="pcm")
    return g.model(
        [_f32("latent", [1, LATENT_CHANNELS, "L"]), _f32("limiter_ceiling", [])],
        [helper.make_tensor_value_info("pcm", TensorProto.INT32, [1, "N", 2])],
        coarse_tier.DESCRIPTION if coarse else
        "Demo decoder (procedural, not Stable Audio 3): band vocoder, inverse MDCT, limiter.",
    )
