"""The Finish panel's readout names how a short take was levelled and what trim cut (issue 31,
items 5 and 6), on the demo set offscreen: a 0.3 s click under "UI click" reads -18.0 LUFS by
one 400 ms block (pyloudnorm agrees on the finished audio, padded), and a trim that cuts
nothing says so in the readout and on the status line, with the threshold to set in the
panel's own words; setting it cuts the take, and the readout gives the new length."""

from __future__ import annotations

import re

import numpy as np
import pyloudnorm
import pytest

from tests.app.test_finish_gui import choose_preset, finish_ctl, wait_finished
from tests.app.test_gui import child, generate

LABEL = "loudnessLabel"


@pytest.fixture
def window(qtbot):
    from app import build_main_window

    win = build_main_window()
    qtbot.addWidget(win)
    child(win, "autoplayCheck").setChecked(False)
    yield win
    win.studio.shutdown()


def padded_loudness(audio: np.ndarray, rate: int) -> float:
    block = np.zeros((max(len(audio), round(0.4 * rate)), audio.shape[1]))
    block[:len(audio)] = audio
    return pyloudnorm.Meter(rate).integrated_loudness(block)


def test_a_short_click_reads_its_level_and_method(qtbot, window):
    generate(qtbot, window, "ui click", seconds=0.3, seed=7)
    choose_preset(window, "UI click")
    take = wait_finished(qtbot, window)
    text = child(window, LABEL).text()
    assert re.search(r"-> -18\.0 LUFS, -?\d+\.\d dBTP, by one 400 ms block, padded with "
                     r"silence; trim 0\.30 s -> 0\.\d\d s", text), text
    assert "not applied" not in text
    finished = take.finished.finished_take.finished
    assert padded_loudness(finished.audio, finished.rate) == pytest.approx(-18.0, abs=0.1)
    assert "shorter than BS.1770's 400 ms block" in child(window, LABEL).toolTip()


def test_a_trim_that_cuts_nothing_says_so_and_the_threshold_it_offers_cuts(qtbot, window):
    generate(qtbot, window, "coin pickup, bright, short", seconds=3.0, seed=5)
    child(window, "trimCheck").setChecked(True)
    finish_ctl(window).apply_now()
    take = wait_finished(qtbot, window)
    assert "; trim 3.00 s -> 3.00 s, nothing below -60 dBFS" in child(window, LABEL).text()
    suggested = take.finished.finished_take.finished.report["trim"]["suggested_threshold_db"]
    assert isinstance(suggested, int)
    said = [line for line in window.studio.notifier.history if "Trim cut nothing" in line]
    assert said and said[-1].endswith(
        f"raise the threshold: {suggested} in Trim's dBFS threshold (the Finish panel).")
    assert "--trim-db" not in said[-1]  # the window names its control, not a flag
    assert "Trim cut nothing" in child(window, LABEL).toolTip()

    child(window, "trimDbSpin").setValue(suggested)
    finish_ctl(window).apply_now()
    take = wait_finished(qtbot, window)
    kept = take.finished.finished_take.finished.report["trim"]["seconds_after"]
    assert kept < 3.0
    assert child(window, LABEL).text().endswith(f"; trim 3.00 s -> {kept:.2f} s")
