"""The finishing chain and its steps: trim thresholds, fade shapes, the order of steps, loops,
rate and channel changes, and a report that says what was done."""

from __future__ import annotations

import importlib.util
import json
import math

import numpy as np
import pytest

from engines.errors import RequestError
from engines.finish import loudness
from engines.finish.chain import finish
from engines.finish.fades import apply_fades, fade_gains
from engines.finish.presets import BUILTIN_PRESETS
from engines.finish.settings import FinishSettings
from engines.finish.trim import MIN_KEEP_S, sound_span, trim_points, trim_silence

FS = 44100


def tone(seconds: float, freq: float = 440.0, amplitude: float = 0.5,
         channels: int = 2) -> np.ndarray:
    t = np.arange(round(seconds * FS)) / FS
    mono = (amplitude * np.sin(2 * np.pi * freq * t)).astype(np.float32)
    return np.repeat(mono[:, None], channels, axis=1)


def framed(before_s: float, sound: np.ndarray, after_s: float,
           floor: float = 0.0) -> np.ndarray:
    """Silence (or a noise floor of `floor` peak), the sound, silence again."""
    rng = np.random.default_rng(0)
    head = rng.uniform(-floor, floor, (round(before_s * FS), 2)).astype(np.float32)
    tail = rng.uniform(-floor, floor, (round(after_s * FS), 2)).astype(np.float32)
    return np.concatenate([head, sound, tail])


def has_delivery_resample() -> bool:
    if importlib.util.find_spec("engines.finish.output_format") is None:
        return False
    from engines.finish import output_format

    return hasattr(output_format, "resample")


# -------------------------------------------------------------------------------------------
# Trim


def test_trim_keeps_the_tone_and_the_pad():
    audio = framed(1.0, tone(2.0), 1.5, floor=10 ** (-70 / 20))  # floor under -60 dBFS
    trimmed, (start, end) = trim_silence(audio, FS, threshold_db=-60.0, pad_ms=10.0)
    pad = round(0.010 * FS)
    sound_start, sound_end = FS, FS + 2 * FS
    # The sine's first samples are near zero, so the sound starts within one cycle.
    assert sound_start - pad <= start <= sound_start - pad + FS // 440
    assert sound_end + pad - FS // 440 <= end <= sound_end + pad
    assert len(trimmed) == end - start


def test_trim_threshold_decides_what_is_silence():
    quiet_hum = tone(1.0, amplitude=10 ** (-50 / 20))  # -50 dBFS
    audio = framed(0.5, np.concatenate([quiet_hum, tone(1.0)]), 0.5)
    assert sound_span(audio, -60.0)[0] <= round(0.5 * FS) + FS // 440  # the hum is sound
    assert sound_span(audio, -40.0)[0] >= round(1.5 * FS)  # the hum is below the threshold


def test_trim_of_silence_keeps_a_short_piece():
    audio = np.zeros((3 * FS, 2), np.float32)
    trimmed, span = trim_silence(audio, FS)
    assert span == (0, round(MIN_KEEP_S * FS)) and len(trimmed) > 0
    assert sound_span(audio, -60.0) is None


def test_manual_points():
    audio = tone(3.0)
    trimmed, span = trim_points(audio, FS, 0.5, 2.0)
    assert span == (round(0.5 * FS), 2 * FS) and len(trimmed) == round(1.5 * FS)
    _, span = trim_points(audio, FS, None, 99.0)  # past the end: the end
    assert span == (0, 3 * FS)
    with pytest.raises(RequestError, match="past the end"):
        trim_points(audio, FS, 3.5, None)


# -------------------------------------------------------------------------------------------
# Fades


@pytest.mark.parametrize("curve", ["linear", "equal-power", "exponential"])
def test_fade_gains_rise_monotonically_from_zero(curve):
    gains = fade_gains(1000, curve)
    assert gains[0] == 0.0 and gains[-1] < 1.0
    assert np.all(np.diff(gains) > 0)


def test_fade_curve_shapes():
    n = 10000
    mid = n // 2
    assert fade_gains(n, "linear")[mid] == pytest.approx(0.5, abs=1e-4)
    assert 20 * math.log10(fade_gains(n, "equal-power")[mid]) == pytest.approx(-3.01, abs=0.01)
    # exponential: a straight line in dB from -60 dB, less the -60 dB floor so it starts at
    # exact 0: the midpoint is (10^(-30/20) - 10^(-60/20)) / (1 - 10^(-60/20)), -30.27 dB.
    floor = 10 ** (-60 / 20)
    expected = (10 ** (-30 / 20) - floor) / (1 - floor)
    assert fade_gains(n, "exponential")[mid] == pytest.approx(expected, rel=1e-4)


def test_fades_applied_at_both_ends_and_input_untouched():
    audio = np.ones((FS, 2), np.float32)
    out, report = apply_fades(audio, FS, 100.0, 200.0, "equal-power")
    assert np.all(audio == 1.0)
    n_in, n_out = round(0.1 * FS), round(0.2 * FS)
    assert out[0, 0] == 0.0 and out[-1, 0] == 0.0
    assert np.all(np.diff(out[:n_in, 0]) > 0) and np.all(np.diff(out[-n_out:, 0]) < 0)
    assert np.all(out[n_in:-n_out] == 1.0)
    assert not report.clamped and report.in_ms == pytest.approx(100.0, abs=0.05)


def test_fades_longer_than_the_take_are_clamped():
    audio = np.ones((FS // 10, 2), np.float32)  # 100 ms
    out, report = apply_fades(audio, FS, 300.0, 100.0, "linear")
    assert report.clamped
    assert report.in_ms + report.out_ms <= 100.0 + 1e-6
    assert report.in_ms == pytest.approx(75.0, abs=0.1)
    assert out[0, 0] == 0.0 and out[-1, 0] == 0.0


# -------------------------------------------------------------------------------------------
# The chain


def test_identity_settings_return_the_take():
    audio = tone(1.0)
    done = finish(audio, FinishSettings())
    assert FinishSettings().is_identity
    np.testing.assert_array_equal(done.audio, audio)
    assert done.rate == FS and done.loop_points is None and done.report["done"] == []
    assert done.report["final"]["true_peak_dbtp"] == pytest.approx(-6.02, abs=0.05)
    assert done.chain == FinishSettings().to_dict()


def test_game_sfx_preset_finishes_a_take():
    rng = np.random.default_rng(2)
    body = tone(1.5, 330.0, 0.3) + (rng.standard_normal((round(1.5 * FS), 2)) * 0.05)
    audio = framed(0.7, body.astype(np.float32), 1.2)
    original = audio.copy()
    settings = BUILTIN_PRESETS["Game SFX one-shot"]
    done = finish(audio, settings)
    np.testing.assert_array_equal(audio, original)  # the raw take is never touched
    report = done.report
    assert report["done"] == ["trim", "resample", "fades", "loudness"]
    kept = report["trim"]["kept_frames"]
    assert kept == pytest.approx(1.5 * FS + 2 * round(0.010 * FS), abs=FS // 330 + 1)
    assert done.rate == 48000 and done.audio.shape == (round(kept * 48000 / FS), 2)
    assert done.audio.dtype == np.float32 and done.audio.flags.c_contiguous
    assert done.audio[0].tolist() == [0.0, 0.0]  # faded at the delivered rate: exact 0
    assert done.audio[-1].tolist() == [0.0, 0.0]
    final = report["final"]
    assert final["loudness_lufs"] == pytest.approx(-18.0, abs=0.3)
    assert final["true_peak_dbtp"] <= -1.0 + 1e-6
    # the figures are the delivered file's own
    assert loudness.integrated_loudness(done.audio, 48000) == pytest.approx(
        final["loudness_lufs"], abs=0.01)
    assert loudness.true_peak_dbtp(done.audio) == pytest.approx(final["true_peak_dbtp"],
                                                                abs=0.01)
    step = report["loudness"]
    assert step["action"] == "gain" and step["true_peak_after_dbtp"] <= -1.0
    assert step["gain_db"] == pytest.approx(-18.0 - step["loudness_before_lufs"])
    assert report["resample"] == {"from_rate": FS, "to_rate": 48000, "circular": False,
                                  "method": "soxr VHQ"}
    assert done.chain["preset"] == "Game SFX one-shot"
    json.dumps(report, allow_nan=False)  # JSON-ready, no NaN or infinities


def test_mono_delivery_reaches_the_loudness_target():
    # Folding changes loudness (same sound in both channels: -3 LU), so it comes first.
    settings = FinishSettings(mono=True, loudness_lufs=-20.0, true_peak_dbtp=-1.0)
    done = finish(tone(3.0, amplitude=0.1), settings)
    assert done.audio.shape == (3 * FS, 1)
    assert done.report["done"] == ["mono", "loudness"]
    assert loudness.integrated_loudness(done.audio, FS) == pytest.approx(-20.0, abs=0.05)


def test_manual_points_then_silence_trim():
    audio = framed(1.0, tone(1.0), 1.0)
    settings = FinishSettings(trim=True, trim_in_s=0.5, trim_out_s=2.5, trim_pad_ms=0.0)
    done = finish(audio, settings)
    trim = done.report["trim"]
    assert trim["manual"] and trim["silence_trim"]
    assert trim["start_frame"] == pytest.approx(FS, abs=FS // 440 + 1)
    assert trim["end_frame"] == pytest.approx(2 * FS, abs=FS // 440 + 1)
    assert len(done.audio) == trim["kept_frames"]


def test_all_silent_take_is_kept_short_and_said():
    done = finish(np.zeros((2 * FS, 2), np.float32),
                  FinishSettings(trim=True, loudness_lufs=-18.0, true_peak_dbtp=-1.0))
    assert len(done.audio) == round(MIN_KEEP_S * FS)
    assert done.report["trim"]["all_silent"]
    notes = " ".join(done.report["notes"])
    assert "below -60 dBFS" in notes and "undefined" in notes
    assert done.report["loudness"]["gain_db"] == 0.0


def test_non_finite_samples_become_silence():
    audio = tone(1.0)
    audio[100, 0] = np.nan
    audio[200, 1] = np.inf
    done = finish(audio, FinishSettings(loudness_lufs=-20.0, true_peak_dbtp=-1.0))
    assert np.isfinite(done.audio).all()
    assert done.report["non_finite_zeroed"] == 2
    assert math.isfinite(done.report["loudness"]["gain_db"])


def test_loudness_without_ceiling_keeps_zero_dbtp():
    done = finish(tone(2.0, amplitude=0.9), FinishSettings(loudness_lufs=-5.0))
    assert done.report["final"]["true_peak_dbtp"] <= 1e-6
    assert any("0 dBTP" in note for note in done.report["notes"])


@pytest.mark.parametrize("mode", ["reduce", "limit"])
def test_ceiling_holds_at_the_delivered_rate(mode):
    # Near-Nyquist content: a new rate reconstructs the peaks differently, so the ceiling is
    # measured and kept after the rate change, on the samples that are delivered.
    t = np.arange(2 * FS) / FS
    sig = 0.5 * np.sin(2 * np.pi * 19000 * t) + 0.5 * np.sin(2 * np.pi * 17500 * t + 1.0)
    audio = np.stack([sig, sig], axis=1).astype(np.float32)
    settings = FinishSettings(true_peak_dbtp=-1.0, peak_mode=mode, rate=48000)
    done = finish(audio, settings)
    assert done.report["done"] == ["resample", "loudness"]
    assert loudness.true_peak_dbtp(done.audio) <= -1.0 + 1e-4
    assert done.report["final"]["true_peak_dbtp"] <= -1.0 + 1e-6


def test_loop_skips_trim_and_fades_and_reduces():
    rng = np.random.default_rng(4)
    loop = (rng.standard_normal((4 * 4096, 2)) * 0.3).astype(np.float32)
    settings = FinishSettings(loop=True, trim=True, fade_in_ms=10.0, fade_out_ms=10.0,
                              loudness_lufs=-5.0, true_peak_dbtp=-1.0, peak_mode="limit")
    done = finish(loop, settings)
    # 16384 frames are 0.37 s, under BS.1770's 0.4 s block: measured as the loop plays
    # (repeated over a block, issue 31), -5 LUFS would pass the ceiling, so the gain is
    # reduced (as for any loop) until the peak sits there
    assert set(done.report["skipped"]) == {"trim", "fades"}
    assert done.report["done"] == ["loudness"] and not done.report["warnings"]
    assert done.report["final"]["loudness_method"] == loudness.ONE_BLOCK_LOOP
    assert done.report["loudness"]["mode"] == "reduce"
    assert done.report["loudness"]["reduced"]
    assert len(done.audio) == len(loop) and done.loop_points == (0, len(loop) - 1)
    assert loudness.true_peak_dbtp(done.audio, circular=True) <= -1.0 + 1e-4
    gain = done.audio[:, 0] / np.where(loop[:, 0] == 0, 1, loop[:, 0])
    assert np.ptp(gain[np.abs(loop[:, 0]) > 0.01]) < 1e-4  # one static gain: still seamless


def test_loop_at_48k_is_resampled_circularly():
    if not has_delivery_resample():
        pytest.skip("engines.finish.output_format.resample is not there yet")
    period = 4 * 4096
    t = np.arange(period) / period
    sig = 0.4 * np.sin(2 * np.pi * 37 * t) + 0.2 * np.sin(2 * np.pi * 401 * t)  # whole cycles
    loop = np.stack([sig, sig], axis=1).astype(np.float32)
    done = finish(loop, FinishSettings(loop=True, rate=48000))
    n = round(period * 48000 / FS)
    assert done.audio.shape == (n, 2) and done.loop_points == (0, n - 1)
    assert done.report["resample"]["circular"]
    wrap = abs(float(done.audio[0, 0] - done.audio[-1, 0]))
    steps = np.abs(np.diff(done.audio[:, 0]))
    assert wrap <= steps.max() * 1.01  # the wrap is no bigger a step than any inside


def test_empty_take_and_bad_settings_are_sentences():
    with pytest.raises(RequestError, match="no audio"):
        finish(np.zeros((0, 2), np.float32), FinishSettings())
    with pytest.raises(RequestError, match="loudness -70 LUFS is out of range"):
        finish(tone(1.0), FinishSettings(loudness_lufs=-70.0))
