"""Short sounds are levelled (issue 31, item 5): a take shorter than BS.1770's 400 ms gating
block is measured as BS.1770-4 with one block (the take padded with silence to 400 ms; a loop
repeated as it plays), brought to the preset's target under the true-peak ceiling, and the
method is named in the report. Held to two oracles that share nothing with our meter: pyloudnorm
run on the padded take, and the K-weighting coefficients printed in BS.1770-4 (48 kHz) applied
with scipy's lfilter."""

from __future__ import annotations

import numpy as np
import pyloudnorm
import pytest
from scipy import signal

from engines.finish import loudness
from engines.finish.chain import finish
from engines.finish.finished_take import FinishedTake, describe
from engines.finish.presets import BUILTIN_PRESETS
from engines.finish.settings import FinishSettings

# ITU-R BS.1770-4, tables 1 and 2: the K-weighting stages at 48 kHz.
SHELF_B = [1.53512485958697, -2.69169618940638, 1.19839281085285]
SHELF_A = [1.0, -1.69065929318241, 0.73248077421585]
HIGH_PASS_B = [1.0, -2.0, 1.0]
HIGH_PASS_A = [1.0, -1.99004745483398, 0.99007225036621]


def padded(audio: np.ndarray, rate: int) -> np.ndarray:
    x = audio if audio.ndim == 2 else audio[:, None]
    out = np.zeros((max(len(x), round(0.4 * rate)), x.shape[1]))
    out[:len(x)] = x
    return out


def bs1770_one_block(audio: np.ndarray) -> float:
    """BS.1770-4 at 48 kHz from the standard's printed coefficients: the take padded to one
    400 ms block, channel weights 1 (mono, stereo)."""
    x = padded(audio, 48000)
    weighted = signal.lfilter(HIGH_PASS_B, HIGH_PASS_A, signal.lfilter(SHELF_B, SHELF_A, x,
                                                                      axis=0), axis=0)
    return -0.691 + 10.0 * np.log10(np.sum(np.mean(weighted ** 2, axis=0)))


def oracle(audio: np.ndarray, rate: int) -> float:
    """pyloudnorm's integrated loudness of the take padded to 400 ms: one gating block."""
    return pyloudnorm.Meter(rate).integrated_loudness(padded(audio, rate))


def click(seconds: float, rate: int, decay_s: float, freq: float, level: float,
          seed: int, channels: int = 2) -> np.ndarray:
    """A UI-click-like take: a decaying tone burst with a little noise floor."""
    rng = np.random.default_rng(seed)
    t = np.arange(round(seconds * rate)) / rate
    tone = level * np.exp(-t / decay_s) * np.sin(2 * np.pi * freq * t + rng.uniform(0, 6))
    noise = 1e-4 * rng.standard_normal((len(t), channels))
    return (tone[:, None] * np.linspace(1.0, 0.8, channels) + noise).astype(np.float32)


@pytest.mark.parametrize(("seconds", "rate", "channels"), [
    (0.05, 48000, 1), (0.25, 48000, 2), (0.3, 44100, 2), (0.399, 48000, 1)])
def test_one_block_loudness_is_what_a_bs1770_meter_reads_on_the_padded_take(seconds, rate,
                                                                           channels):
    audio = click(seconds, rate, 0.03, 1500.0, 0.5, seed=3, channels=channels)
    ours = loudness.one_block_loudness(audio, rate)
    assert ours == pytest.approx(oracle(audio, rate), abs=0.01)
    if rate == 48000:  # pyloudnorm designs its filters; the printed ones read 0.04 dB apart
        assert ours == pytest.approx(bs1770_one_block(audio), abs=0.06)
    lufs, peak, method = loudness.measure_level(audio, rate)
    assert method == loudness.ONE_BLOCK and lufs == ours and peak > 0


def test_from_one_block_on_the_method_is_integrated_loudness():
    audio = click(0.4, 48000, 0.05, 800.0, 0.5, seed=4)
    assert loudness.levelling_method(len(audio), 48000) == loudness.INTEGRATED
    lufs, _, method = loudness.measure_level(audio, 48000)
    assert method == loudness.INTEGRATED
    assert lufs == pytest.approx(pyloudnorm.Meter(48000).integrated_loudness(audio), abs=0.01)
    # at exactly one block the two methods agree: the padded take is the take itself
    assert loudness.one_block_loudness(audio, 48000) == pytest.approx(lufs, abs=0.01)


def test_a_short_loop_is_measured_as_it_plays():
    period = 12000  # 0.25 s at 48 kHz
    t = np.arange(period) / period
    loop = (0.3 * np.sin(2 * np.pi * 60 * t) + 0.05 * np.sin(2 * np.pi * 1999 * t))
    loop = np.stack([loop, loop], axis=1).astype(np.float32)
    ours = loudness.one_block_loudness(loop, 48000, circular=True)
    played = pyloudnorm.Meter(48000).integrated_loudness(np.tile(loop, (40, 1)))
    assert ours == pytest.approx(played, abs=0.02)
    assert loudness.measure_level(loop, 48000, circular=True)[2] == loudness.ONE_BLOCK_LOOP


def test_a_family_of_clicks_finished_with_ui_click_comes_out_level_matched():
    """Three clicks of different lengths, decays and levels (peaks from -26 to -3 dBFS) come
    out at the preset's -18 LUFS by one padded block (pyloudnorm agrees), within 1 LU of each
    other, with the true peak under the -1 dBTP ceiling (4x oversampled by scipy)."""
    preset = BUILTIN_PRESETS["UI click"]
    takes = [click(0.25, 44100, 0.02, 2500.0, 0.05, seed=1),
             click(0.3, 44100, 0.06, 1200.0, 0.7, seed=2),
             click(0.18, 44100, 0.03, 3500.0, 0.3, seed=3)]
    levels = []
    for take in takes:
        done = finish(take, preset)
        final = done.report["final"]
        assert final["loudness_method"] == loudness.ONE_BLOCK and done.rate == 48000
        assert "loudness" in done.report["done"] and not done.report["skipped"]
        measured = oracle(done.audio, done.rate)
        assert final["loudness_lufs"] == pytest.approx(measured, abs=0.05)
        assert bs1770_one_block(done.audio) == pytest.approx(measured, abs=0.06)
        oversampled = signal.resample_poly(done.audio[:, 0], 4, 1)
        assert 20 * np.log10(np.abs(oversampled).max()) <= -1.0 + 0.1
        levels.append(measured)
    assert max(levels) - min(levels) <= 1.0
    assert all(level == pytest.approx(-18.0, abs=0.1) for level in levels)


def test_the_method_is_named_in_the_record_and_the_line():
    settings = FinishSettings(loudness_lufs=-18.0, true_peak_dbtp=-1.0, preset="UI click")
    take = FinishedTake(finish(click(0.2, 44100, 0.03, 2000.0, 0.2, seed=5), settings),
                        settings, None)
    report = take.record()["report"]  # what the sidecar and the library keep
    assert report["final"]["loudness_method"] == "one block"
    assert report["loudness"]["method"] == "one block"
    assert "padded with silence" in report["loudness"]["method_words"]
    assert "-18.0 LUFS (one 400 ms block, padded with silence)" in describe(take)
    assert take.warnings == []


def test_silence_still_cannot_be_levelled_and_says_so():
    done = finish(np.zeros((4410, 2), np.float32), FinishSettings(loudness_lufs=-18.0))
    assert "loudness" in done.report["skipped"] and "loudness" not in done.report["done"]
    assert done.report["warnings"] == [
        "The loudness target of -18 LUFS was not applied: the take is silent (under the -70 "
        "LUFS gate), so it has no loudness to bring to a target."]
    assert np.all(done.audio == 0)


def test_a_click_too_spiky_for_the_target_under_the_ceiling_is_limited_and_said():
    """The ceiling wins over the target: a 5 ms burst cannot reach -18 LUFS over a 400 ms block
    under -1 dBTP; the report says the limiter worked, and the figure stated is the truth."""
    burst = click(0.02, 48000, 0.002, 3000.0, 0.5, seed=6)
    done = finish(burst, FinishSettings(loudness_lufs=-18.0, true_peak_dbtp=-1.0, rate=48000))
    step = done.report["loudness"]
    assert step["limited"] and any("limiter" in note for note in done.report["notes"])
    assert done.report["final"]["loudness_lufs"] == pytest.approx(
        oracle(done.audio, 48000), abs=0.05)
    assert loudness.true_peak_dbtp(done.audio) <= -1.0 + 1e-4
