"""The demo DiT as an ONNX graph: x (1,256,L), t (1,), t5_hidden, t5_mask, seconds_total (1,),
local_add_cond (1,257,L) -> velocity (1,256,L), the SA3 engine contract's names and shapes.

It is the exact posterior-mean denoiser of a Gaussian "data distribution" whose mean and spread
come from the prompt (band envelopes built from the embedding's sound parameters), with an
empirical-Wiener term that trusts the parts of x standing clearly above the noise level, so
audio-to-audio keeps what it should.
"""

from __future__ import annotations

import numpy as np

from engines.constants import (
    LATENT_CHANNELS,
    SAMPLE_RATE,
    SAMPLES_PER_LATENT,
    TEXT_HIDDEN,
    TEXT_TOKENS,
)
from engines.demo import layout as lay
from engines.demo.dit_linears import LinearForm
from engines.demo.graph_builder import GraphBuilder, f32_info
from engines.lazy import lazy_import

onnx = lazy_import("onnx")

FRAME_SECONDS = SAMPLES_PER_LATENT / SAMPLE_RATE
PRIOR_FLOOR = 0.05  # std every latent element may take, whatever the prompt
POOL_FRAMES = 7  # frames pooled (with both stereo channels) to tell signal from noise
TRUST_RATIO = 3.5  # pooled power over noise power that counts as signal (chance ~3e-6)
MAX_SIGNAL_VAR = 36.0  # the largest variance a latent element is believed to have


def _frame_times(g: GraphBuilder, length: str) -> tuple[str, str]:
    """(j * frame, (j + 1) * frame) for j in 0..L-1, as float (L,)."""
    j = g.op("Cast", g.op("Range", g.const(0, np.int64), length, g.const(1, np.int64)),
             to=onnx.TensorProto.FLOAT)
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
                            g.op("Unsqueeze", j, g.ints(1))), to=onnx.TensorProto.FLOAT)  # [j, k]
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
    active = g.op("Cast", g.op("GreaterOrEqual", tt, g.f(0.0)), to=onnx.TensorProto.FLOAT)
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
                      to=onnx.TensorProto.FLOAT)
        clipped = g.op("Cast", g.op("Clip", index, g.f(0.0), g.f(lay.BANDS - 1.0)),
                       to=onnx.TensorProto.INT64)
        shape = g.op("Concat", g.ints(4), g.op("Shape", src), axis=0)
        idx = g.op("Expand", g.op("Unsqueeze", clipped, g.ints(0)), shape)
        blocks = g.op("Reshape", x, g.ints(4, lay.BANDS, -1))
        return g.mul(g.op("GatherElements", blocks, idx, axis=1), inside)

    out = g.add(g.mul(gather(i0), g.sub(g.f(1.0), frac)), g.mul(gather(i1), frac))
    return g.op("Reshape", out, g.ints(LATENT_CHANNELS, -1))


def dit_model(linears: LinearForm | None = None) -> onnx.ModelProto:
    """The demo DiT; `linears` picks its adaptable linears' form (engines.demo.dit_linears):
    plain by default, the branch form for adapters."""
    linears = linears or LinearForm()
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
    mean = linears.apply(g, _shift_bands(g, g.mul(mean, colour), shift), "band_mean")
    std = linears.apply(g, _shift_bands(g, g.mul(spread_std, colour), shift), "band_spread")
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
        [f32_info("x", [1, LATENT_CHANNELS, "L"]), f32_info("t", [1]),
         f32_info("t5_hidden", [1, TEXT_TOKENS, TEXT_HIDDEN]),
         f32_info("t5_mask", [1, TEXT_TOKENS]), f32_info("seconds_total", [1]),
         f32_info("local_add_cond", [1, LATENT_CHANNELS + 1, "L"]), *linears.inputs()],
        [f32_info("velocity", [1, LATENT_CHANNELS, "L"])],
        "Demo DiT (procedural, not Stable Audio 3): Gaussian posterior-mean denoiser.",
    )
