"""Loudness, true peak and normalisation against oracles that do not share our code: the EBU
Tech 3341 test figure, the K-weighting coefficients printed in ITU-R BS.1770-4 (evaluated by
hand), pyloudnorm's own meter, inter-sample-peak test signals, and band-limited interpolation
of periodic signals by FFT."""

from __future__ import annotations

import math

import numpy as np
import pyloudnorm
import pytest
from scipy import signal

from engines.finish import loudness, normalization, true_peak

FS = 44100


def stereo_sine(freq: float, amplitude: float, seconds: float, rate: int = FS,
                phase: float = 0.0) -> np.ndarray:
    t = np.arange(round(seconds * rate)) / rate
    tone = (amplitude * np.sin(2 * np.pi * freq * t + phase)).astype(np.float32)
    return np.stack([tone, tone], axis=1)


def take_like(seconds: float, seed: int = 0, rate: int = FS) -> np.ndarray:
    """Noise through a swell, a low hum, and quiet gaps: content the gates act on."""
    rng = np.random.default_rng(seed)
    n = round(seconds * rate)
    t = np.arange(n) / rate
    swell = 0.2 + 0.6 * np.abs(np.sin(2 * np.pi * t / 3.7))
    noise = rng.standard_normal((n, 2)) * 0.08 * swell[:, None]
    hum = 0.1 * np.sin(2 * np.pi * 55 * t)[:, None]
    audio = noise + hum
    audio[(t % 5.0) > 4.2] *= 0.001  # near-silent stretches the relative gate drops
    return audio.astype(np.float32)


# 4x oversampling with the Annex 2 filter is not exact: its passband ripples by about +-0.2 dB
# and four points per sample can miss a crest by up to 0.17 dB at a quarter of the rate.
METHOD_TOLERANCE_DB = 0.3


def oracle_true_peak(audio: np.ndarray, periodic: bool = False, factor: int = 16) -> float:
    """Band-limited peak by FFT interpolation: exact for one period of a periodic signal; a
    one-shot gets silence around it first (as a player would play it)."""
    x = audio.astype(np.float64)
    if not periodic:
        x = np.pad(x, ((4096, 4096), (0, 0)))
    return float(np.abs(signal.resample(x, len(x) * factor, axis=0)).max())


# -------------------------------------------------------------------------------------------
# Integrated loudness


@pytest.mark.parametrize("rate", [44100, 48000])
def test_ebu_tech_3341_sine_reads_minus_23(rate):
    # EBU Tech 3341: 1 kHz stereo sine at -23 dBFS (peak per channel) reads -23.0 LUFS.
    audio = stereo_sine(1000.0, 10 ** (-23 / 20), 20.0, rate)
    assert loudness.integrated_loudness(audio, rate) == pytest.approx(-23.0, abs=0.1)


# ITU-R BS.1770-4 tables 1 and 2: the K-weighting stages at 48 kHz, as printed.
BS1770_SHELF = ([1.53512485958697, -2.69169618940638, 1.19839281085285],
                [1.0, -1.69065929318241, 0.73248077421585])
BS1770_HIGH_PASS = ([1.0, -2.0, 1.0], [1.0, -1.99004745483398, 0.99007225036621])


@pytest.mark.parametrize("freq", [60.0, 500.0, 1000.0, 4000.0, 12000.0])
def test_loudness_matches_hand_computed_k_weighting(freq):
    # A steady stereo sine of amplitude A has mean square A^2 / 2 per channel; K-weighting
    # scales it by |H(f)|^2 with H from the printed coefficients, and every block passes the
    # gates, so LUFS = -0.691 + 10 log10(2 * A^2 / 2 * |H|^2).
    rate, amplitude = 48000, 0.25
    response = 1.0
    for b, a in (BS1770_SHELF, BS1770_HIGH_PASS):
        _, h = signal.freqz(b, a, worN=[freq], fs=rate)
        response *= abs(h[0]) ** 2
    expected = -0.691 + 10 * math.log10(2 * amplitude**2 / 2 * response)
    audio = stereo_sine(freq, amplitude, 10.0, rate)
    assert loudness.integrated_loudness(audio, rate) == pytest.approx(expected, abs=0.05)


def test_k_weighting_is_pyloudnorms():
    meter = pyloudnorm.Meter(FS)
    stages = list(meter._filters.values())  # the meter's own filter objects
    ours = loudness.k_weighting_sos(FS)
    for row, stage in zip(ours, stages, strict=True):
        np.testing.assert_allclose(row, [*stage.b, *stage.a], rtol=1e-12)


@pytest.mark.parametrize("seconds, seed", [(0.45, 1), (3.33, 2), (12.07, 3), (31.0, 4)])
def test_loudness_agrees_with_pyloudnorm(seconds, seed):
    audio = take_like(seconds, seed)
    expected = pyloudnorm.Meter(FS, block_size=0.4).integrated_loudness(audio.astype(np.float64))
    assert loudness.integrated_loudness(audio, FS) == pytest.approx(expected, abs=0.02)


def test_loudness_of_mono_agrees_with_pyloudnorm():
    audio = take_like(8.0, 5)[:, :1]
    expected = pyloudnorm.Meter(FS).integrated_loudness(audio[:, 0].astype(np.float64))
    assert loudness.integrated_loudness(audio, FS) == pytest.approx(expected, abs=0.02)


def test_loudness_undefined_when_short_or_silent():
    assert loudness.integrated_loudness(stereo_sine(1000, 0.5, 0.39), FS) is None
    assert loudness.integrated_loudness(np.zeros((FS * 2, 2), np.float32), FS) is None
    quiet = stereo_sine(1000, 10 ** (-80 / 20), 2.0)  # every block under the -70 LUFS gate
    assert loudness.integrated_loudness(quiet, FS) is None


# -------------------------------------------------------------------------------------------
# True peak


def test_quarter_rate_sine_at_45_degrees_peaks_3_db_between_samples():
    # Samples of sin(pi/2 n + pi/4) are all +-0.707: the sample peak reads -3.01 dBFS while
    # the waveform between them reaches 1.0 (0 dBTP).
    audio = stereo_sine(FS / 4, 1.0, 1.0, phase=np.pi / 4)
    assert loudness.to_db(true_peak.sample_peak(audio)) == pytest.approx(-3.01, abs=0.01)
    assert loudness.true_peak_dbtp(audio) == pytest.approx(0.0, abs=0.2)


@pytest.mark.parametrize("cycles, phase", [(441, 0.3), (5000, 1.0), (11000, 0.7),
                                           (14700, np.pi / 3)])
def test_true_peak_of_sines_matches_band_limited_peak(cycles, phase):
    n = FS  # whole cycles in one second: periodic, so the FFT oracle is exact
    t = np.arange(n) / n
    tone = (0.8 * np.sin(2 * np.pi * cycles * t + phase)).astype(np.float32)
    audio = np.stack([tone, -tone], axis=1)
    expected = 20 * math.log10(oracle_true_peak(audio, periodic=True))
    measured = loudness.true_peak_dbtp(audio, circular=True)
    assert measured == pytest.approx(expected, abs=METHOD_TOLERANCE_DB)


def test_true_peak_of_band_limited_noise_matches_oracle():
    rng = np.random.default_rng(7)
    n = 1 << 15
    spectrum = rng.standard_normal((n // 2 + 1, 2)) + 1j * rng.standard_normal((n // 2 + 1, 2))
    spectrum[int(n * 0.45):] = 0  # below 0.45 fs, where the Annex filter is specified
    audio = np.fft.irfft(spectrum, n=n, axis=0)
    audio = (audio / np.abs(audio).max() * 0.9).astype(np.float32)
    expected = 20 * math.log10(oracle_true_peak(audio, periodic=True))
    measured = loudness.true_peak_dbtp(audio, circular=True)
    assert measured == pytest.approx(expected, abs=METHOD_TOLERANCE_DB)
    assert measured >= 20 * math.log10(0.9) - 1e-6  # never below the sample peak


def annex_peak_by_convolution(audio: np.ndarray) -> float:
    """The Annex 2 filter applied the slow, obvious way: each phase convolved in full."""
    peaks = [np.abs(np.convolve(audio[:, c].astype(np.float64), phase)).max()
             for c in range(audio.shape[1]) for phase in true_peak.ANNEX2_PHASES]
    return max(max(peaks), float(np.abs(audio).max()))


def test_lazy_true_peak_equals_full_oversampling():
    # A quiet bed with one loud burst: most chunks are skipped, the answer must not change.
    rng = np.random.default_rng(12)
    audio = (rng.standard_normal((20 * FS, 2)) * 0.01).astype(np.float32)
    burst = slice(13 * FS, 13 * FS + 3000)
    audio[burst] = stereo_sine(FS / 4, 0.9, 3000 / FS, phase=np.pi / 4)[:3000]
    audio[7 * FS] = [0.5, -0.6]
    assert true_peak.true_peak(audio) == pytest.approx(annex_peak_by_convolution(audio),
                                                      rel=1e-5)
    assert true_peak.true_peak(audio) > 0.85  # found the inter-sample peak of the burst


def test_true_peak_of_silence_is_none_and_frame_peaks_agree():
    assert loudness.true_peak_dbtp(np.zeros((1000, 2), np.float32)) is None
    audio = take_like(2.0, 9)
    assert true_peak.frame_true_peaks(audio).max() == pytest.approx(true_peak.true_peak(audio),
                                                                   rel=1e-6)


def test_true_peak_of_tiny_takes():
    rng = np.random.default_rng(3)
    for n in (1, 5, 12, 13, 5000):
        audio = np.full((n, 2), 0.5, np.float32)
        assert true_peak.true_peak(audio) >= 0.5
        assert true_peak.true_peak(audio, circular=True) >= 0.5
        # Channels wrap on their own: a loop and its mirror image read the same.
        mono = rng.uniform(-0.5, 0.5, (n, 1)).astype(np.float32)
        stereo = np.hstack([mono, -mono])
        assert true_peak.true_peak(stereo, circular=True) == pytest.approx(
            true_peak.true_peak(mono, circular=True), rel=1e-6)


def test_measure_side_by_side_equals_one_by_one():
    audio = take_like(4.0, 13)
    lufs, peak = loudness.measure(audio, FS)
    assert lufs == loudness.integrated_loudness(audio, FS)
    assert peak == true_peak.true_peak(audio)


# -------------------------------------------------------------------------------------------
# Normalisation


def loud_take(seconds: float = 12.0) -> np.ndarray:
    """Drum-like: decaying noise hits over a bass tone, true peak far above its loudness. The
    noise stops at 16 kHz, as recorded sound does: the ideal (FFT) reconstruction of noise that
    reaches the Nyquist frequency overshoots where any real converter's filter rolls off, so
    it would not be a fair oracle."""
    rng = np.random.default_rng(3)
    n = round(seconds * FS)
    t = np.arange(n) / FS
    band = signal.butter(8, 16000, fs=FS, output="sos")
    hits = np.exp(-(t % 0.5) * 18.0) * signal.sosfiltfilt(band, rng.standard_normal(n)) * 0.3
    bass = 0.12 * np.sin(2 * np.pi * 60 * t)
    mono = hits + bass
    return np.stack([mono, 0.9 * mono], axis=1).astype(np.float32)


def test_limit_mode_reaches_target_under_ceiling():
    audio = loud_take()
    out, report = normalization.normalize(audio, FS, -14.0, -1.0, mode="limit")
    assert report.limited and report.action == "limited"
    assert report.limiter_reduction_db > 0
    measured = loudness.integrated_loudness(out, FS)
    assert measured == pytest.approx(-14.0, abs=0.3)
    assert report.loudness_after_lufs == pytest.approx(measured, abs=1e-6)
    assert loudness.true_peak_dbtp(out) <= -1.0 + 0.1
    assert 20 * math.log10(oracle_true_peak(out)) <= -1.0 + METHOD_TOLERANCE_DB  # independent
    assert report.true_peak_after_dbtp <= -1.0 + 1e-6
    assert any("limiter" in note for note in report.notes)


def test_limit_mode_leaves_audio_far_from_peaks_alone():
    audio = stereo_sine(220.0, 0.1, 6.0)
    audio[3 * FS] = 0.9  # one click, three seconds in
    out, report = normalization.normalize(audio, FS, None, -6.0, mode="limit")
    assert report.limited
    early = slice(0, 3 * FS - 1000)  # long before the click: untouched
    np.testing.assert_allclose(out[early], audio[early], atol=1e-6)
    late = slice(3 * FS + FS, None)  # 1 s (10 release time constants) after: back to unity
    np.testing.assert_allclose(out[late], audio[late], atol=1e-4)


def test_reduce_mode_puts_peak_at_ceiling_and_reports_the_shortfall():
    audio = loud_take()
    out, report = normalization.normalize(audio, FS, -14.0, -1.0, mode="reduce")
    assert report.reduced and not report.limited
    assert loudness.true_peak_dbtp(out) == pytest.approx(-1.0, abs=0.01)
    measured = loudness.integrated_loudness(out, FS)
    assert measured < -14.0 - 0.3
    assert report.loudness_after_lufs == pytest.approx(measured, abs=0.01)
    assert "reduced" in report.notes[0]


def test_gain_only_when_the_ceiling_allows():
    audio = take_like(10.0, 11) * np.float32(0.1)
    out, report = normalization.normalize(audio, FS, -23.0, -1.0)
    assert report.action == "gain"
    assert loudness.integrated_loudness(out, FS) == pytest.approx(-23.0, abs=0.01)
    assert report.gain_db == pytest.approx(-23.0 - report.loudness_before_lufs)


def test_short_audio_is_levelled_by_one_padded_block_under_the_ceiling():
    """Issue 31 item 5 (was: short audio got peak handling only): under BS.1770's 400 ms
    block the take is levelled by the loudness of one block, padded with silence."""
    audio = stereo_sine(1000.0, 1.2, 0.2)  # over full scale, shorter than one block
    out, report = normalization.normalize(audio, FS, -18.0, -1.0, mode="limit")
    assert report.method == loudness.ONE_BLOCK
    assert "shorter than BS.1770's 400 ms block" in report.notes[0]
    padded = np.zeros((round(0.4 * FS), 2))
    padded[:len(out)] = out
    assert pyloudnorm.Meter(FS).integrated_loudness(padded) == pytest.approx(-18.0, abs=0.1)
    assert report.loudness_after_lufs == pytest.approx(-18.0, abs=0.1)
    assert math.isfinite(report.gain_db)
    assert loudness.true_peak_dbtp(out) <= -1.0 + 1e-6


def test_silence_is_never_given_nan_gain():
    silence = np.zeros((FS, 2), np.float32)
    out, report = normalization.normalize(silence, FS, -18.0, -1.0)
    assert report.gain_db == 0.0 and report.action == "none"
    assert np.all(out == 0)
    assert "silence" in report.notes[0]


def test_report_to_dict_is_plain():
    _, report = normalization.normalize(take_like(3.0), FS, -20.0, -1.0)
    data = report.to_dict()
    assert {"limited", "reduced", "gain_db", "loudness_before_lufs"} <= set(data)
    assert all(isinstance(v, (int, float, str, bool, list, type(None))) for v in data.values())
