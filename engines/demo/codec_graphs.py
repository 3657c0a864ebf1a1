"""The demo codec as ONNX graphs: encoder audio (1,2,N) -> latent (1,256,N/4096), and decoder
latent (1,256,L), limiter_ceiling () -> pcm (1,L*4096,2) int32, the SA3 engine contract's names
and shapes. Both are the band vocoder described in `layout` (MDCT bins grouped into bands; a
soft-knee limiter on the way out). The transform is the factored DFT of `dft`, because
TensorRT's ONNX parser has no DFT operator.
"""

from __future__ import annotations

import numpy as np

from engines.constants import LATENT_CHANNELS, SAMPLES_PER_LATENT
from engines.demo import coarse as coarse_tier
from engines.demo import layout as lay
from engines.demo.dft import dft
from engines.demo.graph_builder import GraphBuilder, f32_info
from engines.lazy import lazy_import

onnx = lazy_import("onnx")
helper = lazy_import("onnx.helper")

INT_MAX = np.iinfo(np.int64).max
N = SAMPLES_PER_LATENT
HASH_PRIME = 2147483647


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
    return g.sub(g.f(1.0), g.mul(g.f(2.0), g.op("Cast", bit, to=onnx.TensorProto.FLOAT)))


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
    spec = dft(g, (re, im), inputs=2 * N, outputs=N)  # the MDCT needs only the first N bins
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
        [f32_info("audio", [1, 2, "N"])],
        [f32_info("latent", [1, LATENT_CHANNELS, "L"])],
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
    wave = dft(g, (re, im), inputs=N, outputs=2 * N, inverse=True)
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
    pcm = g.op("Cast", g.op("Round", g.mul(limited, g.f(32767.0))), to=onnx.TensorProto.INT32)
    g.op("Unsqueeze", pcm, g.ints(0), out="pcm")
    return g.model(
        [f32_info("latent", [1, LATENT_CHANNELS, "L"]), f32_info("limiter_ceiling", [])],
        [helper.make_tensor_value_info("pcm", onnx.TensorProto.INT32, [1, "N", 2])],
        coarse_tier.DESCRIPTION if coarse else
        "Demo decoder (procedural, not Stable Audio 3): band vocoder, inverse MDCT, limiter.",
    )
