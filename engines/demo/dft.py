"""A DFT built from MatMuls, for the demo codec's graphs.

TensorRT imports no ONNX DFT, and a dense 8192-point basis would be a 100+ MB initializer. The
"four-step" factorisation needs only a P-point and a Q-point DFT matrix plus a (P, Q) twiddle:
with n = Q*n1 + n2 and m = m1 + P*m2,
  X[m1 + P*m2] = sum_n2 W_Q^(n2*m2) * W_M^(n2*m1) * sum_n1 W_P^(n1*m1) * x[Q*n1 + n2].
Known zeros in x (a zero-padded tail) and unwanted bins (a discarded half) shrink the matrices.
"""

from __future__ import annotations

import numpy as np

from engines.constants import SAMPLES_PER_LATENT
from engines.demo.graph_builder import GraphBuilder

DFT_LENGTH = 2 * SAMPLES_PER_LATENT  # the codec's transform length (one MDCT frame)
DFT_ROWS = 64  # P of the four-step DFT, DFT_LENGTH = P * Q: both small dense DFTs stay tiny
DFT_COLS = DFT_LENGTH // DFT_ROWS  # Q

Complex = tuple[str, str]  # (real part, imaginary part) tensor names of one complex tensor


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


def dft(g: GraphBuilder, z: Complex, inputs: int, outputs: int, inverse: bool = False) -> Complex:
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
