"""Tests of engines/sampling.py against SA3_CONTRACTS section 4: schedule test vectors, inpaint
spans and masks, CFG/APG identities, and the pingpong loop driven by fake DiTs."""

from __future__ import annotations

import numpy as np
import pytest

from engines.noise import initial_noise, loop_noise
from engines.sampling import (
    SamplerPlan,
    guided_velocity,
    init_mix,
    keep_mask,
    local_add_cond,
    paste_back,
    pingpong_step,
    run_sampler,
    schedule,
    span_to_latents,
)

# --- schedule ----------------------------------------------------------------------------------

VEC_SHORT = [1, 0.920262, 0.831824, 0.733182, 0.622459, 0.497294, 0.354661, 0.190632, 0]
VEC_1292 = [1, 0.932218, 0.854952, 0.766059, 0.662703, 0.541042, 0.395740, 0.219164, 0]
VEC_4096 = [1, 0.956724, 0.904531, 0.840349, 0.759511, 0.654567, 0.512844, 0.310901, 0]
VEC_07_324 = [0.7, 0.724989, 0.648304, 0.564684, 0.473144, 0.372500, 0.261326, 0.137877, 0]


def _check_schedule(sig: np.ndarray, expected: list[float], sigma_max: float) -> None:
    assert sig.dtype == np.float32
    assert sig.shape == (len(expected),)
    np.testing.assert_allclose(sig, np.array(expected, np.float64), rtol=0, atol=1e-6)
    assert sig[0] == np.float32(sigma_max)
    assert sig[-1] == 0.0


@pytest.mark.parametrize("length", [1, 2, 32, 100, 255, 256])
def test_schedule_short_clips_use_256(length):
    _check_schedule(schedule(8, 1.0, length), VEC_SHORT, 1.0)


def test_schedule_1292():
    _check_schedule(schedule(8, 1.0, 1292), VEC_1292, 1.0)


@pytest.mark.parametrize("length", [4096, 4097, 5000, 100_000])
def test_schedule_4096_and_clamped_above(length):
    _check_schedule(schedule(8, 1.0, length), VEC_4096, 1.0)


def test_schedule_sigma_max_07_not_monotone():
    sig = schedule(8, 0.7, 324)
    _check_schedule(sig, VEC_07_324, 0.7)
    assert sig[1] > sig[0]  # the documented non-monotone start


def test_schedule_length_changes_shift():
    assert schedule(8, 1.0, 257)[4] > schedule(8, 1.0, 256)[4]
    assert schedule(8, 1.0, 2000)[4] < schedule(8, 1.0, 3000)[4]


@pytest.mark.parametrize("steps", [1, 2, 5, 8, 50, 100])
@pytest.mark.parametrize("sigma_max", [1.0, 0.7, 0.3, 0.01])
def test_schedule_endpoints_and_length(steps, sigma_max):
    sig = schedule(steps, sigma_max, 1292)
    assert sig.dtype == np.float32
    assert sig.shape == (steps + 1,)
    assert sig[0] == np.float32(sigma_max)
    assert sig[-1] == 0.0
    assert np.all(sig[1:-1] > 0) and np.all(sig < 1.0 + 1e-7)


def test_schedule_steps_one():
    np.testing.assert_array_equal(schedule(1, 1.0, 500), np.array([1.0, 0.0], np.float32))
    np.testing.assert_array_equal(schedule(1, 0.6, 500), np.array([0.6, 0.0], np.float32))


def test_schedule_matches_formula_independently():
    steps, sigma_max, length = 13, 0.85, 2000
    t = np.linspace(sigma_max, 0, steps + 1).astype(np.float64)
    lp = min(max(length, 256), 4096)
    mu = -(0.5 + 0.65 * (lp - 256) / 3840)
    with np.errstate(divide="ignore"):
        ref = 1 - np.exp(mu) / (np.exp(mu) + (1 / (1 - t) - 1))
    ref[0] = sigma_max
    np.testing.assert_allclose(schedule(steps, sigma_max, length), ref, rtol=0, atol=2e-6)


# --- spans, keep mask, local_add_cond ----------------------------------------------------------


@pytest.mark.parametrize(
    ("start_s", "end_s", "expected"),
    [
        (0.0, 0.0, (0, 0)),
        (1.0, 2.0, (11, 22)),  # 10.77 -> 11, 21.53 -> 22
        (0.5, 3.3, (5, 36)),  # 5.38 -> 5, 35.53 -> 36
        (0.04, 0.05, (0, 1)),  # 0.43 -> 0, 0.54 -> 1
        (10.0, 30.0, (108, 323)),  # 107.67 -> 108, 322.998 -> 323
        (380.0, 380.4, (4091, 4096)),
    ],
)
def test_span_to_latents(start_s, end_s, expected):
    got = span_to_latents(start_s, end_s)
    assert got == expected
    assert got == (round(start_s * 44100 / 4096), round(end_s * 44100 / 4096))
    assert all(isinstance(v, int) for v in got)


def test_keep_mask_several_spans():
    keep = keep_mask([(2, 5), (8, 10)], 12)
    assert keep.dtype == np.float32
    assert keep.shape == (12,)
    expected = np.ones(12, np.float32)
    expected[[2, 3, 4, 8, 9]] = 0
    np.testing.assert_array_equal(keep, expected)
    assert set(np.unique(keep).tolist()) == {0.0, 1.0}


def test_keep_mask_clipped_to_clip():
    keep = keep_mask([(-3, 2), (10, 20), (30, 40)], 12)
    expected = np.ones(12, np.float32)
    expected[[0, 1, 10, 11]] = 0
    np.testing.assert_array_equal(keep, expected)


def test_keep_mask_overlapping_and_empty():
    np.testing.assert_array_equal(keep_mask([], 5), np.ones(5, np.float32))
    np.testing.assert_array_equal(keep_mask([(3, 3)], 5), np.ones(5, np.float32))
    np.testing.assert_array_equal(
        keep_mask([(1, 3), (2, 4)], 5), np.array([1, 0, 0, 0, 1], np.float32)
    )
    np.testing.assert_array_equal(keep_mask([(0, 5)], 5), np.zeros(5, np.float32))


def test_keep_mask_span_entirely_before_clip():
    np.testing.assert_array_equal(keep_mask([(-5, -2)], 12), np.ones(12, np.float32))
    expected = np.ones(12, np.float32)
    np.testing.assert_array_equal(keep_mask([(3, -2)], 12), expected)  # reversed: nothing


def test_keep_mask_from_seconds():
    length = 323  # 30 s
    spans = [span_to_latents(1.0, 2.0), span_to_latents(10.0, 40.0)]
    keep = keep_mask(spans, length)
    assert keep[:11].min() == 1 and keep[11:22].max() == 0 and keep[22:108].min() == 1
    assert keep[108:].max() == 0


def test_local_add_cond_inpainting():
    c, length = 4, 6
    rng = np.random.default_rng(0)
    init = rng.standard_normal((c, length)).astype(np.float32)
    keep = keep_mask([(1, 3)], length)
    cond = local_add_cond(keep, init, length, c)
    assert cond.shape == (1, c + 1, length)
    assert cond.dtype == np.float32
    np.testing.assert_array_equal(cond[0, 0], keep)
    np.testing.assert_array_equal(cond[0, 1:], init * keep[None, :])
    np.testing.assert_array_equal(cond[0, 1:, 1:3], 0)
    np.testing.assert_array_equal(cond[0, 1:, 3:], init[:, 3:])


def test_local_add_cond_text_to_audio_is_zero():
    cond = local_add_cond(None, None, 7, 5)
    assert cond.shape == (1, 6, 7)
    assert cond.dtype == np.float32
    assert not np.any(cond)


# --- init_mix, paste_back ----------------------------------------------------------------------


def test_init_mix_formula():
    rng = np.random.default_rng(1)
    init = rng.standard_normal((3, 9)).astype(np.float32)
    noise = rng.standard_normal((3, 9)).astype(np.float32)
    for sm in (0.01, 0.3, 0.7, 1.0):
        got = init_mix(init, noise, sm)
        assert got.dtype == np.float32
        ref = init.astype(np.float64) * (1 - sm) + noise.astype(np.float64) * sm
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(init_mix(init, noise, 1.0), noise)


def test_paste_back_bit_exact_where_kept():
    rng = np.random.default_rng(2)
    c, length = 5, 20
    init = rng.standard_normal((c, length)).astype(np.float32) * 3
    init[0, 0] = 0.0
    init[1, 1] = np.float32(1e-38)  # subnormal-adjacent, still kept exactly
    x = rng.standard_normal((c, length)).astype(np.float32) * 50
    keep = keep_mask([(4, 9), (15, 30)], length)
    out = paste_back(x, init, keep)
    assert out.dtype == np.float32 and out.shape == (c, length)
    k = keep.astype(bool)
    np.testing.assert_array_equal(out[:, k].view(np.uint32), init[:, k].view(np.uint32))
    np.testing.assert_array_equal(out[:, ~k], x[:, ~k])


def test_paste_back_signed_zero_keeps_value():
    # The contract's arithmetic form init*k + x*(1-k) keeps init's VALUE where keep = 1; the sign
    # bit of a -0.0 init is not preserved when x > 0 (-0.0 + 0.0 = +0.0). Value equality is what
    # matters downstream, so only that is asserted.
    one = np.ones(1, np.float32)
    out = paste_back(np.array([[1.0]], np.float32), np.array([[-0.0]], np.float32), one)
    assert out[0, 0] == 0.0


# --- guided_velocity ---------------------------------------------------------------------------


def _rand(shape, seed, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


SHAPE = (8, 16)


def _plain_cfg(x, s, vc, vu, cfg):
    x, vc, vu = (a.astype(np.float64) for a in (x, vc, vu))
    cd, ud = x - s * vc, x - s * vu
    return (x - (cd + (cfg - 1) * (cd - ud))) / s


def _apg_ref(x, s, vc, vu, cfg, apg):
    x, vc, vu = (a.astype(np.float64) for a in (x, vc, vu))
    cd, ud = x - s * vc, x - s * vu
    diff = cd - ud
    u = cd / max(np.linalg.norm(cd), 1e-8)
    orth = diff - np.sum(diff * u) * u
    g = diff if apg <= 0 else orth if apg >= 1 else apg * orth + (1 - apg) * diff
    return (x - (cd + (cfg - 1) * g)) / s


@pytest.mark.parametrize("apg", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("sigma", [1.0, 0.5, 0.19])
def test_cfg_one_is_conditional_velocity(apg, sigma):
    x, vc, vu = _rand(SHAPE, 1), _rand(SHAPE, 2), _rand(SHAPE, 3, 5.0)
    v = guided_velocity(x, sigma, vc, vu, 1.0, apg)
    assert v.dtype == np.float32 and v.shape == SHAPE
    assert np.linalg.norm(v - vc) / np.linalg.norm(vc) < 1e-6
    # v_uncond has no influence at cfg = 1.
    np.testing.assert_array_equal(v, guided_velocity(x, sigma, vc, vc * 7, 1.0, apg))


@pytest.mark.parametrize("cfg", [2.0, 4.5, 7.0])
def test_apg_zero_is_plain_cfg(cfg):
    x, vc, vu = _rand(SHAPE, 4), _rand(SHAPE, 5), _rand(SHAPE, 6)
    s = 0.6
    v = guided_velocity(x, s, vc, vu, cfg, 0.0)
    np.testing.assert_allclose(v, _plain_cfg(x, s, vc, vu, cfg), rtol=1e-5, atol=1e-5)
    # apg below zero is the same branch.
    np.testing.assert_array_equal(v, guided_velocity(x, s, vc, vu, cfg, -1.0))


@pytest.mark.parametrize("cfg", [2.0, 5.0])
def test_apg_one_guidance_orthogonal_to_cd(cfg):
    x, vc, vu = _rand(SHAPE, 7), _rand(SHAPE, 8), _rand(SHAPE, 9)
    s = 0.8
    v = guided_velocity(x, s, vc, vu, cfg, 1.0).astype(np.float64)
    x64 = x.astype(np.float64)
    cd = x64 - s * vc.astype(np.float64)
    ud = x64 - s * vu.astype(np.float64)
    g = (x64 - s * v - cd) / (cfg - 1)  # v = (x - (cd + (cfg-1) g)) / s
    cos = np.sum(g * cd) / (np.linalg.norm(g) * np.linalg.norm(cd))
    assert abs(cos) < 1e-5
    # ... and g is a real guidance term, not zero: the orthogonal part of diff.
    diff = cd - ud
    assert np.linalg.norm(g) > 0.5 * np.linalg.norm(diff)
    np.testing.assert_allclose(g, diff - np.sum(diff * cd) / np.sum(cd * cd) * cd, atol=1e-4)
    np.testing.assert_allclose(v, _apg_ref(x, s, vc, vu, cfg, 1.0), rtol=1e-5, atol=1e-5)
    # apg above one is clamped to the orthogonal guidance.
    np.testing.assert_array_equal(
        guided_velocity(x, s, vc, vu, cfg, 2.0), guided_velocity(x, s, vc, vu, cfg, 1.0)
    )


@pytest.mark.parametrize("apg", [0.25, 0.5, 0.9])
def test_apg_fraction_is_blend(apg):
    x, vc, vu = _rand(SHAPE, 10), _rand(SHAPE, 11), _rand(SHAPE, 12)
    s, cfg = 0.4, 3.0
    v = guided_velocity(x, s, vc, vu, cfg, apg).astype(np.float64)
    v0 = guided_velocity(x, s, vc, vu, cfg, 0.0).astype(np.float64)
    v1 = guided_velocity(x, s, vc, vu, cfg, 1.0).astype(np.float64)
    np.testing.assert_allclose(v, apg * v1 + (1 - apg) * v0, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(v, _apg_ref(x, s, vc, vu, cfg, apg), rtol=1e-5, atol=1e-4)
    assert not np.allclose(v0, v1, atol=1e-2)  # the blend is not trivially equal


def test_zero_cd_does_not_divide_by_zero():
    x = np.zeros(SHAPE, np.float32)
    vc = np.zeros(SHAPE, np.float32)
    vu = _rand(SHAPE, 13)
    s, cfg = 0.5, 3.0
    with np.errstate(all="raise"):
        v = guided_velocity(x, s, vc, vu, cfg, 1.0)
        v_half = guided_velocity(x, s, vc, vu, cfg, 0.5)
    assert np.all(np.isfinite(v)) and np.all(np.isfinite(v_half))
    # cd = 0: u = 0, orth = diff = s * vu, so v = -(cfg - 1) * vu.
    np.testing.assert_allclose(v, -(cfg - 1) * vu, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(v, guided_velocity(x, s, vc, vu, cfg, 0.0))


def test_pingpong_step_formula():
    x, v, n = _rand(SHAPE, 14), _rand(SHAPE, 15), _rand(SHAPE, 16)
    got = pingpong_step(x, v, 0.8, 0.6, n)
    den = x.astype(np.float64) - 0.8 * v
    np.testing.assert_allclose(got, 0.4 * den + 0.6 * n, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(pingpong_step(x, v, 0.8, 0.0, None), den, rtol=1e-6, atol=1e-6)


# --- run_sampler -------------------------------------------------------------------------------

C, L = 4, 10


class TargetDit:
    """velocity = (x - target[branch]) / sigma, so denoised = target; records every call."""

    def __init__(self, targets, shared_buffer: bool = False):
        self.targets = [np.asarray(t, np.float32) for t in targets]
        self.calls: list[tuple[np.ndarray, float, int]] = []
        self.buf = np.empty_like(self.targets[0]) if shared_buffer else None

    def __call__(self, x, sigma, branch):
        self.calls.append((x.copy(), sigma, branch))
        v = ((x - self.targets[branch]) / np.float32(sigma)).astype(np.float32)
        if self.buf is None:
            return v
        self.buf[...] = v  # the original runtime's trap: one output buffer for both passes
        return self.buf


def _plan(steps=8, sigma_max=1.0, seed=3, **kw):
    return SamplerPlan(
        sigmas=schedule(steps, sigma_max, L),
        x0=initial_noise(seed, C, L),
        loop_noise=loop_noise(seed, steps, C, L),
        **kw,
    )


def test_run_sampler_reaches_target():
    target = _rand((C, L), 20)
    plan = _plan()
    x0_before = plan.x0.copy()
    out = run_sampler(plan, TargetDit([target]))
    assert out.dtype == np.float32 and out.shape == (C, L)
    np.testing.assert_allclose(out, target, rtol=0, atol=1e-5)
    np.testing.assert_array_equal(plan.x0, x0_before)  # the plan is not mutated


def test_run_sampler_steps_one():
    target = _rand((C, L), 21)
    plan = _plan(steps=1)
    assert plan.loop_noise.shape == (0, C, L)
    dit = TargetDit([target])
    out = run_sampler(plan, dit)
    np.testing.assert_allclose(out, target, rtol=0, atol=1e-5)
    assert len(dit.calls) == 1
    assert dit.calls[0][1] == 1.0
    np.testing.assert_array_equal(dit.calls[0][0], plan.x0)


def test_run_sampler_uses_loop_noise_i_at_step_i_and_none_at_last():
    steps = 5
    sig = schedule(steps, 1.0, L)
    base = _rand((steps, C, L), 22)
    ln = base * (10.0 * np.arange(1, steps + 1, dtype=np.float32))[:, None, None]
    ln[steps - 1] = np.nan  # an extra row: must never be read (no noise at the last step)
    x0 = _rand((C, L), 23)
    plan = SamplerPlan(sigmas=sig, x0=x0, loop_noise=ln)
    seen_x, seen_sigma = [], []

    def dit(x, sigma, branch):
        assert branch == 0
        seen_x.append(x.copy())
        seen_sigma.append(sigma)
        return np.zeros_like(x)  # denoised = x

    stepped = []
    out = run_sampler(plan, dit, on_step=lambda i, x: stepped.append((i, x.copy())))
    assert [i for i, _ in stepped] == list(range(steps))
    assert seen_sigma == [float(s) for s in sig[:-1]]
    x = x0.astype(np.float64)
    for i in range(steps - 1):
        np.testing.assert_allclose(seen_x[i], x, rtol=1e-6, atol=1e-5)
        sn = float(sig[i + 1])
        x = (1 - sn) * x + sn * ln[i].astype(np.float64)
        np.testing.assert_allclose(stepped[i][1], x, rtol=1e-6, atol=1e-5)
    # Last step: no re-noising, velocity 0 -> the latent passes through unchanged.
    assert np.all(np.isfinite(out))
    np.testing.assert_array_equal(out, stepped[-2][1])
    np.testing.assert_array_equal(stepped[-1][1], out)


def test_run_sampler_dit_call_counts_and_branch_order():
    tc = _rand((C, L), 24)
    for cfg, per_step in ((1.0, [0]), (3.0, [0, 1])):
        dit = TargetDit([tc, tc])
        plan = _plan(steps=6, cfg=cfg)
        run_sampler(plan, dit)
        assert [b for _, _, b in dit.calls] == per_step * 6
        sigmas = [s for _, s, _ in dit.calls]
        assert sigmas == [float(s) for s in plan.sigmas[:-1] for _ in per_step]
        if cfg != 1.0:
            for i in range(6):  # both branches see the same latent at a step
                np.testing.assert_array_equal(dit.calls[2 * i][0], dit.calls[2 * i + 1][0])


@pytest.mark.parametrize("shared", [False, True])
def test_run_sampler_cfg_apg0_keeps_both_velocities(shared):
    tc, tu = _rand((C, L), 25), _rand((C, L), 26)
    cfg = 3.0
    out = run_sampler(_plan(cfg=cfg, apg=0.0), TargetDit([tc, tu], shared_buffer=shared))
    # denoised targets: cd = tc, ud = tu, guided denoise = tc + (cfg-1)(tc - tu) every step.
    expected = tc.astype(np.float64) + (cfg - 1) * (tc.astype(np.float64) - tu)
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-4)
    # The trap (v_cond overwritten by v_uncond) would land on tu: far from the expected result.
    assert np.abs(tu - expected).max() > 1.0


def _hand_sampler(plan, targets, cfg, apg):
    """Float64 hand computation of the guided pingpong loop with distinct velocities."""
    x = plan.x0.astype(np.float64)
    steps = len(plan.sigmas) - 1
    for i in range(steps):
        s, sn = float(plan.sigmas[i]), float(plan.sigmas[i + 1])
        vc = (x - targets[0]) / s
        vu = (x - targets[1]) / s
        v = _apg_ref(x, s, vc, vu, cfg, apg)
        den = x - s * v
        x = (1 - sn) * den + sn * plan.loop_noise[i] if i < steps - 1 else den
    return x


@pytest.mark.parametrize("apg", [1.0, 0.5])
def test_run_sampler_cfg_shared_buffer_matches_hand_computation(apg):
    tc, tu = _rand((C, L), 27), _rand((C, L), 28)
    cfg = 4.0
    plan = _plan(cfg=cfg, apg=apg)
    out = run_sampler(plan, TargetDit([tc, tu], shared_buffer=True))
    expected = _hand_sampler(plan, [tc.astype(np.float64), tu.astype(np.float64)], cfg, apg)
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-4)
    # With v_cond aliased to v_uncond the result would be (about) tu.
    assert np.abs(expected - tu).max() > 0.5
    # The same run with separate output arrays gives the identical result.
    np.testing.assert_array_equal(out, run_sampler(plan, TargetDit([tc, tu])))


def test_run_sampler_inpainting_keeps_init_every_step():
    steps = 8
    init = _rand((C, L), 29, 2.0)
    target = _rand((C, L), 30)
    keep = keep_mask([(2, 4), (7, 9)], L)
    k = keep.astype(bool)
    plan = _plan(steps=steps, init_latents=init, keep=keep, cfg=2.5, apg=1.0)
    seen = []

    def on_step(i, x):
        seen.append(i)
        np.testing.assert_array_equal(x[:, k].view(np.uint32), init[:, k].view(np.uint32))
        assert not np.array_equal(x[:, ~k], init[:, ~k])

    out = run_sampler(plan, TargetDit([target, target]), on_step=on_step)
    assert seen == list(range(steps))
    np.testing.assert_array_equal(out[:, k], init[:, k])
    np.testing.assert_allclose(out[:, ~k], target[:, ~k], rtol=0, atol=1e-5)


def test_run_sampler_without_keep_does_not_paste():
    target = _rand((C, L), 31)
    plan = _plan(init_latents=_rand((C, L), 32), keep=None)
    np.testing.assert_allclose(run_sampler(plan, TargetDit([target])), target, atol=1e-5)


class Cancelled(Exception):
    pass


def test_run_sampler_on_step_exception_cancels():
    dit = TargetDit([_rand((C, L), 33)])
    seen = []

    def on_step(i, x):
        seen.append(i)
        if i == 2:
            raise Cancelled

    with pytest.raises(Cancelled):
        run_sampler(_plan(steps=8), dit, on_step=on_step)
    assert seen == [0, 1, 2]
    assert len(dit.calls) == 3


def test_sampler_plan_defaults():
    plan = SamplerPlan(sigmas=schedule(2, 1.0, L), x0=np.zeros((C, L), np.float32),
                       loop_noise=np.zeros((1, C, L), np.float32))
    assert plan.cfg == 1.0 and plan.apg == 1.0
    assert plan.init_latents is None and plan.keep is None
