"""The sampler's arithmetic as small NVRTC kernels, launched on the pipeline's stream.

Each kernel mirrors a function of `engines.sampling`, `engines.noise` or `engines.pipeline`
(the numpy reference) and is compiled with --fmad=false so it rounds like numpy does. Values
that change between generations (seed, sigmas, cfg, apg, limiter ceiling, seconds) are read
from device memory, so a captured graph stays valid when they change.
"""

from __future__ import annotations

from pathlib import Path

from engines.cuda.nvrtc import Module, f32, i32, i64, ptr, u32
from engines.cuda.stream import Stream

BLOCK = 256
REDUCE_BLOCKS = 264  # fixed grid for the guidance reductions (2 per SM on an H200): deterministic

# Slots of the float parameter block the host refreshes before each replay.
P_SECONDS, P_CFG, P_APG, P_LIMITER, P_SIGMA_MAX = 0, 1, 2, 3, 4
PARAM_FLOATS = 8

SOURCE = r"""
typedef unsigned int u32;
typedef unsigned long long u64;

__device__ __forceinline__ void philox_round(u32 c[4], u32 k[2]) {
    u64 p0 = (u64)0xD2511F53u * c[0];
    u64 p1 = (u64)0xCD9E8D57u * c[2];
    u32 hi0 = (u32)(p0 >> 32), lo0 = (u32)p0, hi1 = (u32)(p1 >> 32), lo1 = (u32)p1;
    u32 n0 = hi1 ^ c[1] ^ k[0], n2 = hi0 ^ c[3] ^ k[1];
    c[0] = n0; c[1] = lo1; c[2] = n2; c[3] = lo0;
}

// Philox4x32-10 + Box-Muller in double, as engines/noise.py documents: block `block` of the
// (seed, stream) sequence, written to out[4 * local ...] (clipped at n).
__device__ void philox_block(float* out, long long local, long long n, u64 block, u32 seed,
                             u32 stream) {
    u32 c[4] = {(u32)block, (u32)(block >> 32), 0u, 0u};
    u32 k[2] = {seed, stream};
    for (int r = 0; r < 10; ++r) {
        philox_round(c, k);
        k[0] += 0x9E3779B9u; k[1] += 0xBB67AE85u;
    }
    const double scale = 2.3283064365386963e-10;  // 2**-32
    for (int pair = 0; pair < 2; ++pair) {
        double ua = ((double)c[2 * pair] + 0.5) * scale;
        double ub = ((double)c[2 * pair + 1] + 0.5) * scale;
        double radius = sqrt(-2.0 * log(ua));
        double theta = 6.283185307179586 * ub;
        long long i = 4 * local + 2 * pair;
        if (i < n) out[i] = (float)(radius * cos(theta));
        if (i + 1 < n) out[i + 1] = (float)(radius * sin(theta));
    }
}

extern "C" __global__ void philox_gaussian(float* out, long long n, const u32* seed,
                                           u32 stream, u64 offset_blocks) {
    long long blocks = (n + 3) / 4;
    for (long long b = blockIdx.x * (long long)blockDim.x + threadIdx.x; b < blocks;
         b += (long long)gridDim.x * blockDim.x)
        philox_block(out, b, n, offset_blocks + (u64)b, seed[0], stream);
}

// The start noise (stream 0) and all loop noises (stream 1) in one launch.
extern "C" __global__ void philox_two(float* out0, long long n0, float* out1, long long n1,
                                      const u32* seed) {
    long long blocks0 = (n0 + 3) / 4, blocks1 = (n1 + 3) / 4;
    for (long long b = blockIdx.x * (long long)blockDim.x + threadIdx.x; b < blocks0 + blocks1;
         b += (long long)gridDim.x * blockDim.x) {
        if (b < blocks0) philox_block(out0, b, n0, (u64)b, seed[0], 0u);
        else philox_block(out1, b - blocks0, n1, (u64)(b - blocks0), seed[0], 1u);
    }
}

// x0 = init * (1 - sigma_max) + noise * sigma_max  (audio-to-audio start)
extern "C" __global__ void init_mix(float* x, const float* init, const float* noise,
                                    const float* params, int sigma_slot, long long n) {
    float s = params[sigma_slot];
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        x[i] = init[i] * (1.0f - s) + noise[i] * s;
}

// local_add_cond (C+1, L): row 0 keep, rows 1..C keep * init
extern "C" __global__ void local_cond(float* cond, const float* keep, const float* init,
                                      int channels, int length) {
    long long n = (long long)(channels + 1) * length;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        int row = (int)(i / length), col = (int)(i % length);
        cond[i] = row == 0 ? keep[col] : init[(long long)(row - 1) * length + col] * keep[col];
    }
}

// Block-wide sums of two doubles in a fixed tree order (deterministic); every thread gets them.
__device__ void block_sum2(double& a, double& b) {
    __shared__ double s_a[256];
    __shared__ double s_b[256];
    s_a[threadIdx.x] = a; s_b[threadIdx.x] = b;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) {
            s_a[threadIdx.x] += s_a[threadIdx.x + stride];
            s_b[threadIdx.x] += s_b[threadIdx.x + stride];
        }
        __syncthreads();
    }
    a = s_a[0]; b = s_b[0];
    __syncthreads();
}

// Guidance reductions, deterministic: fixed grid, fixed order.
extern "C" __global__ void guidance_partials(const float* x, const float* vc, const float* vu,
                                             const float* sigmas, int step, long long n,
                                             double* partials) {
    float s = sigmas[step];
    double cd2 = 0.0, dot = 0.0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        float cd = x[i] - s * vc[i];
        float ud = x[i] - s * vu[i];
        float diff = cd - ud;
        cd2 += (double)cd * (double)cd;
        dot += (double)diff * (double)cd;
    }
    block_sum2(cd2, dot);
    if (threadIdx.x == 0) {
        partials[2 * blockIdx.x] = cd2;
        partials[2 * blockIdx.x + 1] = dot;
    }
}

// v = (x - (cd + (cfg - 1) g)) / s  with APG g (engines.sampling.guided_velocity). Every block
// first reduces the fixed set of partial sums in the same order, so all blocks (and every
// replay) see identical totals without a separate finishing launch.
extern "C" __global__ void guidance_apply(float* v, const float* x, const float* vc,
                                          const float* vu, const double* partials, int count,
                                          const float* sigmas, int step, const float* params,
                                          long long n) {
    double a = 0.0, b = 0.0;
    for (int i = threadIdx.x; i < count; i += blockDim.x) {
        a += partials[2 * i];
        b += partials[2 * i + 1];
    }
    block_sum2(a, b);
    float s = sigmas[step], cfg = params[1], apg = params[2];
    double norm = sqrt(a);
    if (norm < 1e-8) norm = 1e-8;
    float normf = (float)norm;
    float proj = (float)(b / norm);
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        float cd = x[i] - s * vc[i];
        float ud = x[i] - s * vu[i];
        float diff = cd - ud;
        float g;
        if (apg <= 0.0f) {
            g = diff;
        } else {
            float u = cd / normf;
            float orth = diff - proj * u;
            g = apg >= 1.0f ? orth : apg * orth + (1.0f - apg) * diff;
        }
        v[i] = (x[i] - (cd + (cfg - 1.0f) * g)) / s;
    }
}

// Pingpong update, inpaint paste-back and the per-step latent copy in one pass. On the last
// step every block also writes whether any of its values is NaN or Inf (no reset needed).
extern "C" __global__ void pingpong(float* x, const float* v, const float* noise,
                                    const float* sigmas, int step, const float* keep,
                                    const float* init, int length, long long n,
                                    float* step_out, u32* block_flags) {
    float s = sigmas[step], sn = sigmas[step + 1];
    int bad = 0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        float den = x[i] - s * v[i];
        float next = noise ? (1.0f - sn) * den + sn * noise[i] : den;
        if (keep) {
            float k = keep[i % length];
            next = init[i] * k + next * (1.0f - k);
        }
        x[i] = next;
        if (step_out) step_out[i] = next;
        bad |= !isfinite(next);
    }
    if (block_flags) {
        bad = __syncthreads_or(bad);
        if (threadIdx.x == 0) block_flags[blockIdx.x] = (u32)bad;
    }
}

__device__ __forceinline__ short clamp_pcm(float value) {
    if (value != value) return 0;
    float r = rintf(value);
    r = fminf(fmaxf(r, -32767.0f), 32767.0f);
    return (short)r;
}

// int32 PCM (N, 2) -> int16, clamped to +-32767 before narrowing (32768 must not wrap)
extern "C" __global__ void narrow_pcm(short* out, const int* pcm, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        int value = pcm[i];
        out[i] = (short)(value > 32767 ? 32767 : (value < -32767 ? -32767 : value));
    }
}

// legacy float decoder output (2, N) planar -> int16 (frames, 2) interleaved
extern "C" __global__ void float_to_pcm(short* out, const float* audio, long long total,
                                        long long frames) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < frames * 2;
         i += (long long)gridDim.x * blockDim.x) {
        long long frame = i / 2; int ch = (int)(i % 2);
        out[i] = clamp_pcm(audio[ch * total + frame] * 32767.0f);
    }
}

// Inpainting keeps the user's audio outside the spans (engines.pipeline.paste_original).
extern "C" __global__ void paste_original(short* pcm, const int* pcm32,
                                          const float* original, long long total,
                                          long long frames, const float* keep, int length,
                                          int hop, int fade) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < frames * 2;
         i += (long long)gridDim.x * blockDim.x) {
        long long frame = i / 2; int ch = (int)(i % 2);
        int lat = (int)(frame / hop);
        float mask = 0.0f;
        if (keep[lat] == 0.0f) {
            int start = lat, end = lat + 1;
            while (start > 0 && keep[start - 1] == 0.0f) --start;
            while (end < length && keep[end] == 0.0f) ++end;
            long long s0 = (long long)start * hop, e0 = (long long)end * hop;
            if (s0 > frames) s0 = frames;
            if (e0 > frames) e0 = frames;
            long long span = e0 - s0;
            int f = (int)(span / 2 < fade ? span / 2 : fade);
            mask = 1.0f;
            if (f > 0) {
                if (s0 > 0 && frame < s0 + f)
                    mask = (float)(frame - s0 + 1) / (float)(f + 1);
                if (e0 < frames && frame >= e0 - f)
                    mask = (float)(e0 - frame) / (float)(f + 1);
            }
        }
        int raw = pcm32 ? pcm32[i] : (int)pcm[i];  // int32 decoders: narrow fused in
        raw = raw > 32767 ? 32767 : (raw < -32767 ? -32767 : raw);
        float generated = (float)raw / 32767.0f;
        float orig = original[ch * total + frame];
        pcm[i] = clamp_pcm((orig * (1.0f - mask) + generated * mask) * 32767.0f);
    }
}

// dtype ports for engines whose I/O is not fp32
extern "C" __global__ void f32_to_f16(unsigned short* out, const float* in, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(in[i])); out[i] = h;
    }
}
extern "C" __global__ void f16_to_f32(float* out, const unsigned short* in, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(in[i])); out[i] = f;
    }
}
extern "C" __global__ void f32_to_bf16(unsigned short* out, const float* in, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        u32 bits = __float_as_uint(in[i]);
        if ((bits & 0x7fffffffu) > 0x7f800000u) { out[i] = 0x7fc0; continue; }
        bits += 0x7fffu + ((bits >> 16) & 1u);
        out[i] = (unsigned short)(bits >> 16);
    }
}
extern "C" __global__ void bf16_to_f32(float* out, const unsigned short* in, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        out[i] = __uint_as_float(((u32)in[i]) << 16);
}
"""

CAST_KERNELS = {("float32", "float16"): "f32_to_f16", ("float16", "float32"): "f16_to_f32",
                ("float32", "bfloat16"): "f32_to_bf16", ("bfloat16", "float32"): "bf16_to_f32"}


def grid_for(n: int, cap: int = 4096) -> int:
    return max(1, min(cap, -(-int(n) // BLOCK)))


class SamplerKernels:
    """The compiled module plus one typed launcher per kernel."""

    def __init__(self, cache_dir: Path | None = None) -> None:
        self.module = Module(SOURCE, "sa3_sampler", ("--fmad=false",), cache_dir)

    def _go(self, name: str, stream: Stream, n: int, *args) -> None:
        self.module.kernel(name).launch(stream, grid_for(n), BLOCK, *args)

    def gaussian(self, stream: Stream, out: int, n: int, seed_ptr: int, noise_stream: int,
                 offset_blocks: int = 0) -> None:
        blocks = -(-n // 4)
        self.module.kernel("philox_gaussian").launch(
            stream, grid_for(blocks), BLOCK, ptr(out), i64(n), ptr(seed_ptr), u32(noise_stream),
            ctypes_u64(offset_blocks))

    def gaussian_two(self, stream: Stream, out0: int, n0: int, out1: int, n1: int,
                     seed_ptr: int) -> None:
        blocks = -(-n0 // 4) + -(-n1 // 4)
        self.module.kernel("philox_two").launch(stream, grid_for(blocks), BLOCK, ptr(out0),
                                                i64(n0), ptr(out1), i64(n1), ptr(seed_ptr))

    def init_mix(self, stream, x, init, noise, params, n) -> None:
        self._go("init_mix", stream, n, ptr(x), ptr(init), ptr(noise), ptr(params),
                 i32(P_SIGMA_MAX), i64(n))

    def local_cond(self, stream, cond, keep, init, channels, length) -> None:
        self._go("local_cond", stream, (channels + 1) * length, ptr(cond), ptr(keep), ptr(init),
                 i32(channels), i32(length))

    def guidance(self, stream, v, x, vc, vu, sigmas, step, params, partials, n) -> None:
        self.module.kernel("guidance_partials").launch(
            stream, REDUCE_BLOCKS, BLOCK, ptr(x), ptr(vc), ptr(vu), ptr(sigmas), i32(step),
            i64(n), ptr(partials))
        self._go("guidance_apply", stream, n, ptr(v), ptr(x), ptr(vc), ptr(vu), ptr(partials),
                 i32(REDUCE_BLOCKS), ptr(sigmas), i32(step), ptr(params), i64(n))

    def pingpong(self, stream, x, v, noise, sigmas, step, keep, init, length, n,
                 step_out, block_flags=0) -> None:
        self._go("pingpong", stream, n, ptr(x), ptr(v), ptr(noise), ptr(sigmas), i32(step),
                 ptr(keep), ptr(init), i32(length), i64(n), ptr(step_out), ptr(block_flags))

    def narrow_pcm(self, stream, out, pcm, n) -> None:
        self._go("narrow_pcm", stream, n, ptr(out), ptr(pcm), i64(n))

    def float_to_pcm(self, stream, out, audio, total, frames) -> None:
        self._go("float_to_pcm", stream, 2 * frames, ptr(out), ptr(audio), i64(total),
                 i64(frames))

    def paste_original(self, stream, pcm, pcm32, original, total, frames, keep, length, hop,
                       fade) -> None:
        """pcm32 = the decoder's int32 output (narrow fused in), or 0 to read int16 pcm."""
        self._go("paste_original", stream, 2 * frames, ptr(pcm), ptr(pcm32), ptr(original),
                 i64(total), i64(frames), ptr(keep), i32(length), i32(hop), i32(fade))

    def cast(self, stream, src_dtype: str, dst_dtype: str, out: int, src: int, n: int) -> None:
        self._go(CAST_KERNELS[(src_dtype, dst_dtype)], stream, n, ptr(out), ptr(src), i64(n))

    def free(self) -> None:
        self.module.free()


def ctypes_u64(value: int):
    import ctypes

    return ctypes.c_ulonglong(int(value))


__all__ = ["SamplerKernels", "f32", "CAST_KERNELS", "PARAM_FLOATS"]
