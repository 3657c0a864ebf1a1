"""Quality flags on synthetic takes: each flag on the case it is for, and none on a clean take."""

from __future__ import annotations

import numpy as np
import pytest

from engines.finish.quality import FLAG_CODES, describe_flag, quality_flags

FS = 44100


def clean_take(seconds: float = 2.0) -> np.ndarray:
    t = np.arange(round(seconds * FS)) / FS
    rng = np.random.default_rng(0)
    sig = 0.4 * np.sin(2 * np.pi * 220 * t) + 0.05 * rng.standard_normal(len(t))
    return np.stack([sig, 0.8 * sig], axis=1).astype(np.float32)


def test_clean_take_has_no_flags():
    assert quality_flags(clean_take(), FS) == []


def test_digital_silence():
    assert quality_flags(np.zeros((FS, 2), np.float32), FS) == ["silent"]
    whisper = np.full((FS, 2), 10 ** (-90 / 20), np.float32)
    assert quality_flags(whisper, FS) == ["silent"]
    assert quality_flags(np.zeros((0, 2), np.float32), FS) == ["silent"]


def test_flattened_waveform_is_clipping():
    take = clean_take()
    take[1000:1010] = 1.0  # ten samples stuck at full scale
    assert "clipping" in quality_flags(take, FS)


def test_inter_sample_peak_over_zero_dbtp_is_clipping():
    # A quarter-rate sine at 45 degrees: samples at 0.74, the wave between them at 1.05
    # (+0.4 dBTP): no sample reaches full scale, the converter's output still clips.
    n = np.arange(FS)
    sig = (1.05 * np.sin(np.pi / 2 * n + np.pi / 4)).astype(np.float32)
    take = np.stack([sig, sig], axis=1)
    assert np.abs(take).max() < 0.75
    assert "clipping" in quality_flags(take, FS)


def test_single_full_scale_sample_is_not_clipping():
    take = clean_take() * np.float32(0.5)
    take[500, 0] = 0.9995
    assert "clipping" not in quality_flags(take, FS)


def test_dc_offset():
    take = clean_take()
    take[:, 1] += 0.05
    assert quality_flags(take, FS) == ["dc-offset"]


def test_non_finite_samples():
    take = clean_take()
    take[10, 0] = np.nan
    take[20, 1] = -np.inf
    assert quality_flags(take, FS) == ["non-finite"]
    assert quality_flags(np.full((FS, 2), np.nan, np.float32), FS) == ["silent", "non-finite"]


def test_trailing_silence_over_a_second():
    take = np.concatenate([clean_take(1.0), np.zeros((round(1.5 * FS), 2), np.float32)])
    assert quality_flags(take, FS) == ["trailing-silence"]
    short_tail = np.concatenate([clean_take(1.0), np.zeros((FS // 2, 2), np.float32)])
    assert quality_flags(short_tail, FS) == []


def test_flags_come_in_stable_order():
    take = np.concatenate([clean_take(1.0), np.zeros((2 * FS, 2), np.float32)])
    take[:FS, 0] += 0.1  # an offset while the sound plays: the mean is 0.033
    take[100:110] = 1.0
    take[5, 1] = np.nan
    assert quality_flags(take, FS) == ["clipping", "dc-offset", "non-finite",
                                       "trailing-silence"]


@pytest.mark.parametrize("code", FLAG_CODES)
def test_every_flag_has_words(code):
    words = describe_flag(code)
    assert words.endswith(".") and len(words) > 20
    assert describe_flag("future-flag") == "Flag 'future-flag'."
