"""Counter-based Gaussian noise, identical on every backend.

Generator (documented so a CUDA kernel can reproduce it bit for bit in the integer part):

* Philox4x32-10 (Salmon et al., SC'11, as in Random123): key = (seed, stream) as two uint32
  words, counter = (block low word, block high word, 0, 0). Each block yields four uint32 words.
* Uniforms: ``u = (word + 0.5) * 2**-32``, so 0 < u < 1 and the log is finite.
* Box-Muller on lane pairs (0, 1) and (2, 3) of each block:
  ``r = sqrt(-2 ln u_a)``, ``z_a = r cos(2 pi u_b)``, ``z_b = r sin(2 pi u_b)``.
  The reference computes this in float64 and rounds to float32; a float32 GPU transform agrees
  within a few ulp.
* Element ``i`` of a stream is lane ``i % 4`` of block ``offset_blocks + i // 4``; arrays are
  filled in C order.

Streams: the initial latent comes from stream 0; the loop noises of the pingpong sampler come
from stream 1, step ``i`` taking elements ``[i * 256 * L, (i + 1) * 256 * L)``.
"""

from __future__ import annotations

import numpy as np

PHILOX_M0 = 0xD2511F53
PHILOX_M1 = 0xCD9E8D57
PHILOX_W0 = 0x9E3779B9
PHILOX_W1 = 0xBB67AE85
PHILOX_ROUNDS = 10
_MASK32 = np.uint64(0xFFFFFFFF)

STREAM_INITIAL = 0
STREAM_LOOP = 1


def philox4x32(counters: np.ndarray, key: tuple[int, int]) -> np.ndarray:
    """Philox4x32-10 of `counters` (n, 4) uint32 under `key`; returns (n, 4) uint32."""
    c = [counters[:, j].astype(np.uint64) for j in range(4)]
    k0, k1 = int(key[0]) & 0xFFFFFFFF, int(key[1]) & 0xFFFFFFFF
    m0, m1 = np.uint64(PHILOX_M0), np.uint64(PHILOX_M1)
    for _ in range(PHILOX_ROUNDS):
        p0 = m0 * c[0]
        p1 = m1 * c[2]
        hi0, lo0 = p0 >> np.uint64(32), p0 & _MASK32
        hi1, lo1 = p1 >> np.uint64(32), p1 & _MASK32
        c = [hi1 ^ c[1] ^ np.uint64(k0), lo1, hi0 ^ c[3] ^ np.uint64(k1), lo0]
        k0 = (k0 + PHILOX_W0) & 0xFFFFFFFF
        k1 = (k1 + PHILOX_W1) & 0xFFFFFFFF
    return np.stack(c, axis=1).astype(np.uint32)


def uniform_words(seed: int, stream: int, count: int, offset_blocks: int = 0) -> np.ndarray:
    """`count` raw uint32 words of (seed, stream), starting at block `offset_blocks`."""
    n_blocks = -(-count // 4)
    block = np.arange(offset_blocks, offset_blocks + n_blocks, dtype=np.uint64)
    counters = np.zeros((n_blocks, 4), dtype=np.uint32)
    counters[:, 0] = (block & _MASK32).astype(np.uint32)
    counters[:, 1] = (block >> np.uint64(32)).astype(np.uint32)
    return philox4x32(counters, (seed, stream)).reshape(-1)[:count]


def gaussian(seed: int, stream: int, shape: tuple[int, ...] | int,
             offset_blocks: int = 0) -> np.ndarray:
    """Standard normal float32 array of `shape` from the (seed, stream) sequence."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    count = int(np.prod(shape, dtype=np.int64))
    words = uniform_words(seed, stream, count + (count % 2), offset_blocks)
    u = (words.astype(np.float64) + 0.5) * 2.0**-32
    u = u.reshape(-1, 2)
    r = np.sqrt(-2.0 * np.log(u[:, 0]))
    theta = 2.0 * np.pi * u[:, 1]
    z = np.empty_like(u)
    z[:, 0] = r * np.cos(theta)
    z[:, 1] = r * np.sin(theta)
    return z.reshape(-1)[:count].astype(np.float32).reshape(shape)


def initial_noise(seed: int, latent_channels: int, latent_len: int) -> np.ndarray:
    """The starting latent x ~ N(0, I), shape (C, L)."""
    return gaussian(seed, STREAM_INITIAL, (latent_channels, latent_len))


def loop_noise(seed: int, steps: int, latent_channels: int, latent_len: int) -> np.ndarray:
    """The steps-1 re-noising draws of the pingpong sampler, shape (steps-1, C, L)."""
    return gaussian(seed, STREAM_LOOP, (max(steps - 1, 0), latent_channels, latent_len))
