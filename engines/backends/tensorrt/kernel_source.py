"""The CUDA C source of the sampler kernels (engines.backends.tensorrt.kernels compiles it with
NVRTC and launches it). Each kernel mirrors a function of `engines.sampling`, `engines.noise` or
`engines.backends.eager_pipeline`, the numpy reference, and is compiled with --fmad=false so it
rounds as numpy does.
"""

from __future__ import annotations

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

// The guidance totals: every block reduces the fixed set of partial sums in the same order, so
// all blocks (and every replay) see identical totals without a separate finishing launch.
__device__ void guidance_totals(const double* partials, int count, float& normf,
                                float& proj) {
    double a = 0.0, b = 0.0;
    for (int i = threadIdx.x; i < count; i += blockDim.x) {
        a += partials[2 * i];
        b += partials[2 * i + 1];
    }
    block_sum2(a, b);
    double norm = sqrt(a);
    if (norm < 1e-8) norm = 1e-8;
    normf = (float)norm;
    proj = (float)(b / norm);
}

// v = (x - (cd + (cfg - 1) g)) / s  with APG g (engines.sampling.guided_velocity)
__device__ __forceinline__ float guided_velocity(float x, float vc, float vu, float s,
                                                 float cfg, float apg, float normf,
                                                 float proj) {
    float cd = x - s * vc;
    float ud = x - s * vu;
    float diff = cd - ud;
    float g;
    if (apg <= 0.0f) {
        g = diff;
    } else {
        float u = cd / normf;
        float orth = diff - proj * u;
        g = apg >= 1.0f ? orth : apg * orth + (1.0f - apg) * diff;
    }
    return (x - (cd + (cfg - 1.0f) * g)) / s;
}

// One pingpong update of element i, with the inpaint paste-back of the kept latents. Indices
// fit in int: a latent tensor has at most 256 * 4096 elements.
__device__ __forceinline__ float pingpong_value(float x, float v, const float* noise, int i,
                                                float s, float sn, const float* keep,
                                                const float* init, int length) {
    float den = x - s * v;
    float next = noise ? (1.0f - sn) * den + sn * noise[i] : den;
    if (keep) {
        float k = keep[i % length];
        next = init[i] * k + next * (1.0f - k);
    }
    return next;
}

// Pingpong update, inpaint paste-back and the per-step latent copy in one pass. On the last
// step every block also writes whether any of its values is NaN or Inf (no reset needed).
extern "C" __global__ void pingpong(float* x, const float* v, const float* noise,
                                    const float* sigmas, int step, const float* keep,
                                    const float* init, int length, int n,
                                    float* step_out, u32* block_flags) {
    float s = sigmas[step], sn = sigmas[step + 1];
    int bad = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float next = pingpong_value(x[i], v[i], noise, i, s, sn, keep, init, length);
        x[i] = next;
        if (step_out) step_out[i] = next;
        bad |= !isfinite(next);
    }
    if (block_flags) {
        bad = __syncthreads_or(bad);
        if (threadIdx.x == 0) block_flags[blockIdx.x] = (u32)bad;
    }
}

// The same step with CFG/APG: the guided velocity is made in registers from both DiT passes
// (never written out), then the pingpong update as above. One launch instead of two, and the
// velocity's write and read are gone.
extern "C" __global__ void guided_pingpong(float* x, const float* vc, const float* vu,
                                           const double* partials, int count,
                                           const float* noise, const float* sigmas, int step,
                                           const float* params, const float* keep,
                                           const float* init, int length, int n,
                                           float* step_out, u32* block_flags) {
    float normf, proj;
    guidance_totals(partials, count, normf, proj);
    float s = sigmas[step], sn = sigmas[step + 1], cfg = params[1], apg = params[2];
    int bad = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float xi = x[i];
        float v = guided_velocity(xi, vc[i], vu[i], s, cfg, apg, normf, proj);
        float next = pingpong_value(xi, v, noise, i, s, sn, keep, init, length);
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

// Inpainting keeps the user's audio outside the spans
// (engines.backends.eager_pipeline.paste_original).
// `bounds` holds, for each regenerated latent, the [start, end) of its span in latents, made on
// the host from the keep mask (kernels.span_bounds): each sample then costs O(1), not
// a walk over its span. Indices fit in int: at most 4096 * 4096 frames of 2 channels.
extern "C" __global__ void paste_original(short* pcm, const int* pcm32,
                                          const float* original, long long total,
                                          int frames, const float* keep, const int* bounds,
                                          int hop, int fade) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < frames * 2;
         i += gridDim.x * blockDim.x) {
        int frame = i >> 1, ch = i & 1;
        int lat = frame / hop;
        float mask = 0.0f;
        if (keep[lat] == 0.0f) {
            int s0 = bounds[2 * lat] * hop, e0 = bounds[2 * lat + 1] * hop;
            if (s0 > frames) s0 = frames;
            if (e0 > frames) e0 = frames;
            int span = e0 - s0;
            int f = span / 2 < fade ? span / 2 : fade;
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
