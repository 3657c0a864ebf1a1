"""What a game sound designer sees in the window: readable empty plots, channel labels that do
not collide, inpainted parts marked on the result, length messages that do not contradict
themselves, and one default length per model set in the window and on the command line."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QApplication

from engines.constants import SAMPLE_RATE, SAMPLES_PER_LATENT
from engines.durations import duration_text, same_when_shown
from engines.request import GenerationRequest, default_seconds, validate_request
from tests.cli_runner import run_cli
from tests.gui_support import child

ROOT = Path(__file__).resolve().parents[2]
WAIT_MS = 60_000


def generate(qtbot, win, seconds: float | None = None, seed: int = 3) -> None:
    takes = child(win, "takesList")
    before = takes.count()
    child(win, "promptEdit").setPlainText("door slam")
    if seconds is not None:
        child(win, "secondsSpin").setValue(seconds)
    child(win, "seedEdit").setText(str(seed))
    child(win, "seedLockCheck").setChecked(True)
    child(win, "generateButton").click()
    qtbot.waitUntil(lambda: takes.count() > before and not win.studio.gpu.running,
                    timeout=WAIT_MS)


def flat(spans) -> list[float]:
    return [edge for span in spans for edge in span]


def axis_title(plot, side: str) -> str:
    return plot.getAxis(side).label.toPlainText().strip()


def tick_values(axis) -> list[float]:
    low, high = axis.range
    return [v for _spacing, values in axis.tickValues(low, high, 400) for v in values]


# ---- 1. empty plots read like filled ones --------------------------------------------------


def test_a_short_spectrogram_keeps_its_frequency_title_whole(qtbot):
    """At the window's minimum size the plot is short and "Frequency (kHz)" was cut to
    "Frequency (kH": the title must fit the axis it labels."""
    from app.widgets.spectrogram import SpectrogramView

    view = SpectrogramView()
    qtbot.addWidget(view)
    view.show()
    for height in (110, 400, 110):
        view.resize(600, height)
        qtbot.waitUntil(lambda h=height: view.height() == h)
        QApplication.processEvents()
        axis = view.plot_item.getAxis("left")
        title = axis.label
        # the title is drawn rotated along the axis: its width must fit the axis height
        assert title.boundingRect().width() <= axis.geometry().height() + 1, \
            (height, axis_title(view.plot_item, "left"))
        assert "kHz" in axis_title(view.plot_item, "left")
    view.resize(600, 400)
    qtbot.waitUntil(lambda: axis_title(view.plot_item, "left") == "Frequency (kHz)")


def test_plots_before_the_first_take_show_seconds_and_kilohertz(qtbot):
    from app.widgets.latent_view import LatentView
    from app.widgets.plot_axes import EMPTY_SECONDS
    from app.widgets.spectrogram import SpectrogramView
    from app.widgets.waveform import WaveformView

    spectrogram, waveform, latents = SpectrogramView(), WaveformView(), LatentView()
    for view in (spectrogram, waveform, latents):
        qtbot.addWidget(view)
        view.resize(600, 260)
        view.show()
    plot = spectrogram.plot_item
    assert axis_title(plot, "left") == "Frequency (kHz)"
    assert axis_title(plot, "bottom") == "Time (s)"
    (x0, x1), (y0, y1) = plot.getViewBox().viewRange()
    assert (x0, x1) == pytest.approx((0.0, EMPTY_SECONDS))
    assert (y0, y1) == pytest.approx((0.0, SAMPLE_RATE / 2000))  # 0 .. 22.05 kHz
    assert min(tick_values(plot.getAxis("bottom"))) >= 0.0  # never "-400 ms"
    assert axis_title(waveform.plot_items()[1], "bottom") == "Time (s)"
    assert waveform.visible_range() == pytest.approx((0.0, EMPTY_SECONDS))
    latent_plot = latents._plot.getPlotItem()
    assert axis_title(latent_plot, "bottom") == "Time (s)"
    assert latent_plot.getViewBox().viewRange()[1] == pytest.approx([0.0, 256.0])

    # A short take keeps seconds (pyqtgraph's SI prefix made it "ms"), and clearing goes back
    # to the empty axes.
    blip = (np.random.default_rng(1).standard_normal((SAMPLE_RATE // 4, 2)) * 3000)
    spectrogram.set_audio(blip.astype(np.int16))
    waveform.set_audio(blip.astype(np.int16))
    assert axis_title(plot, "bottom") == "Time (s)"
    assert plot.getAxis("bottom").autoSIPrefixScale == 1.0
    assert axis_title(waveform.plot_items()[1], "bottom") == "Time (s)"
    spectrogram.clear()
    assert plot.getViewBox().viewRange()[0] == pytest.approx([0.0, EMPTY_SECONDS])


def _tone(hz: float, seconds: float) -> np.ndarray:
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    return (np.column_stack([np.sin(2 * np.pi * hz * t)] * 2) * 16000).astype(np.int16)


def test_a_long_take_without_prepared_data_is_analysed_off_the_gui_thread(qtbot):
    """The STFT of a long take is not done in set_audio (a frozen window); the image arrives a
    moment later, and a take skipped past meanwhile never overwrites the one shown."""
    from app.widgets.spectrogram import BINS_PER_ROW, N_FFT, SpectrogramView

    view = SpectrogramView()
    qtbot.addWidget(view)
    view.set_audio(_tone(1000, 6.0))
    assert view.image().size == 0  # not computed on the calling (GUI) thread
    assert view.plot_item.getViewBox().viewRange()[0] == pytest.approx([0.0, 6.0])
    with qtbot.waitSignal(view.imageShown, timeout=WAIT_MS):
        view.set_audio(_tone(5000, 6.0))
    qtbot.wait(300)  # the 1 kHz result, if it were not dropped, would land by now
    bin_hz = SAMPLE_RATE / N_FFT
    assert abs(np.argmax(view.image().mean(axis=0)) * bin_hz - 5000) <= bin_hz
    # The coloured image drawn (rows = frequency, bottom up) is bright at 5 kHz too.
    rows = view._item.image[..., :3].astype(float).sum(axis=2).mean(axis=1)
    assert abs(np.argmax(rows) * BINS_PER_ROW * bin_hz - 5000) <= BINS_PER_ROW * bin_hz


# ---- 2. channel labels do not collide ------------------------------------------------------


def _label_rects(axis):
    image = QImage(8, 8, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        _axis, _ticks, texts = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [(axis.mapRectToScene(rect), text) for rect, _flags, text in texts]


@pytest.mark.parametrize("height", [300, 200, 150])
def test_the_channels_amplitude_labels_never_overlap(qtbot, height):
    from app.widgets.waveform import WaveformView

    view = WaveformView()
    qtbot.addWidget(view)
    view.resize(640, height)
    view.show()
    qtbot.waitExposed(view)
    noise = np.random.default_rng(2).standard_normal((SAMPLE_RATE, 2)) * 8000
    view.set_audio(noise.astype(np.int16))
    left, right = (_label_rects(p.getAxis("left")) for p in view.plot_items())
    assert any(text == "0" for _r, text in left) and any(text == "0" for _r, text in right)
    for rect_l, text_l in left:
        for rect_r, text_r in right:
            assert not rect_l.intersects(rect_r), f"L {text_l!r} overlaps R {text_r!r}"
    for labels in (left, right):  # nor do a channel's own labels overlap each other
        for i, (a, text_a) in enumerate(labels):
            for b, text_b in labels[i + 1:]:
                assert not a.intersects(b), f"{text_a!r} overlaps {text_b!r}"


# ---- 3. an inpainted take shows what was regenerated ---------------------------------------


def test_an_inpainted_take_shows_its_regenerated_spans(qtbot, window, tmp_path):
    t = np.arange(3 * SAMPLE_RATE) / SAMPLE_RATE
    tone = 0.3 * np.sin(2 * np.pi * 440 * t)
    wav = tmp_path / "walk.wav"
    sf.write(wav, np.column_stack([tone, tone]), SAMPLE_RATE)
    waveform = child(window, "waveformView")
    waveform.fileDropped.emit(str(wav))
    session = window.studio.session
    init = session.init_take
    child(window, "spanModeCheck").setChecked(True)
    waveform.set_spans([(1.0, 1.5)])
    assert waveform.painted_spans() == []  # the init take shows editable spans instead
    generate(qtbot, window, seconds=3.0)

    take = session.current_take()
    assert take is not init and take.result.request.mode == "inpaint"
    latent_s = SAMPLES_PER_LATENT / SAMPLE_RATE
    expected = [(a * latent_s, b * latent_s) for a, b in take.result.request.regen_spans_latent]
    assert flat(waveform.painted_spans()) == pytest.approx(flat(expected))
    start, end = expected[0]
    assert start <= 1.0 and end >= 1.5  # covers what was painted, snapped to latents
    regions = waveform.painted_regions()
    assert len(regions) == 2  # one per channel
    assert all(r.isVisible() and not r.movable for r in regions)
    assert waveform.spans() == []  # nothing editable on the result

    session.select(init)  # back on the init: its editable spans, no record
    assert waveform.painted_spans() == [] and len(waveform.spans()) == 1
    session.select(take)
    assert flat(waveform.painted_spans()) == pytest.approx(flat(expected))


# ---- 4. length messages compare what they print --------------------------------------------


def test_lengths_read_as_people_say_them():
    assert duration_text(0.25) == "250 ms"
    assert duration_text(1.0899) == "1.09 s"
    assert duration_text(1.1) == "1.1 s"
    assert duration_text(2.0) == "2 s"
    assert duration_text(125.0) == "2 min 5 s"
    assert duration_text(0.9996) == "1 s"  # never "1000 ms"
    assert duration_text(59.999) == "1 min"  # never "60 s"
    assert same_when_shown(48065 / SAMPLE_RATE, 1.09)


def test_a2a_warnings_never_say_a_length_is_shorter_than_itself():
    init = np.full((48065, 2), 0.1, np.float32)  # 1.08991 s
    same = validate_request(GenerationRequest("x", init_audio=init, seconds=1.09, seed=1), 380)
    assert [w for w in same.warnings if "init audio" in w] == []
    longer = validate_request(GenerationRequest("x", init_audio=init, seconds=2.0, seed=1), 380)
    assert "The init audio (1.09 s) is shorter than 2 s; the rest is silence." in \
        longer.warnings


def test_window_a2a_on_a_take_uses_its_length_without_a_contradiction(qtbot, window, tmp_path):
    frames = 48065  # 1.08991 s: the Length box shows it as 1.09
    t = np.arange(frames) / SAMPLE_RATE
    wav = tmp_path / "hit.wav"
    sf.write(wav, np.column_stack([np.sin(2 * np.pi * 220 * t)] * 2) * 0.3, SAMPLE_RATE)
    child(window, "waveformView").fileDropped.emit(str(wav))
    assert child(window, "secondsSpin").value() == pytest.approx(1.09)
    generate(qtbot, window)
    take = window.studio.session.current_take()
    assert take.result.request.mode == "a2a"
    status = child(window, "statusBar").currentMessage()
    assert "shorter than" not in status and "longer than" not in status, status
    assert not [w for w in take.result.warnings if "init audio" in w]

    window.studio.session.select(window.studio.session.init_take)
    generate(qtbot, window, seconds=2.0)
    take = window.studio.session.current_take()
    assert "The init audio (1.09 s) is shorter than 2 s; the rest is silence." in \
        take.result.warnings
    assert "(1.09 s) is shorter than 2 s" in child(window, "statusBar").currentMessage()


# ---- 5. one default length per model set ---------------------------------------------------


def test_sfx_sets_default_short_and_music_sets_long():
    assert default_seconds("sm-sfx") == default_seconds("demo") <= 3.0
    assert default_seconds("sm-music") >= 20.0
    assert default_seconds("sm-sfx") < default_seconds("medium") < default_seconds("sm-music")


def test_window_length_follows_the_model_until_the_user_sets_one(qtbot):
    from app.shell.studio import build_main_window
    from engines.catalog import MODEL_SETS

    win = build_main_window(start_worker=False)
    qtbot.addWidget(win)
    try:
        combo, spin = child(win, "modelCombo"), child(win, "secondsSpin")
        assert combo.currentData() == "demo" and spin.value() == default_seconds("demo")
        for key in MODEL_SETS:
            combo.setCurrentIndex(combo.findData(key))
            assert spin.value() == default_seconds(key), key
        spin.setValue(7.5)  # the user's own length
        for key in MODEL_SETS:
            combo.setCurrentIndex(combo.findData(key))
            assert spin.value() == 7.5, key
    finally:
        win.studio.shutdown()


def test_cli_without_seconds_uses_the_same_rule(tmp_path):
    out = tmp_path / "f.wav"
    started = time.perf_counter()
    done = run_cli(["generate", "--model", "demo", "--prompt", "x", "--out", str(out)],
                   cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    info = sf.info(out)
    assert info.frames == round(default_seconds("demo") * SAMPLE_RATE), \
        f"{info.frames} frames after {time.perf_counter() - started:.0f} s"
    help_text = run_cli(["generate", "--help"], cwd=ROOT, timeout=120).stdout
    assert "2 s for demo and sm-sfx" in " ".join(help_text.split())
