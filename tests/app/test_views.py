"""Plot widgets: peak downsampling, span snapping, and the waveform/spectrogram/latent views."""

from __future__ import annotations

import numpy as np
import pytest

from app.widgets.peaks import PeakPyramid, column_block, peak_envelope
from app.widgets.wave_data import snap_spans
from engines.constants import SAMPLE_RATE, SAMPLES_PER_LATENT

GRID_S = SAMPLES_PER_LATENT / SAMPLE_RATE


# ---- peaks (numpy only) --------------------------------------------------------------------


def _brute_force_columns(samples, start, stop, width_px):
    """Per aligned column: (centre, min, max), straight from the documented layout."""
    block = 1
    while -(-(stop - start) // block) > width_px:
        block *= 2
    columns = []
    for column in range(start // block, -(-stop // block)):
        chunk = samples[column * block: min((column + 1) * block, len(samples))]
        centre = min(column * block + (block - 1) / 2, len(samples) - 1)
        columns.append((centre, chunk.min(), chunk.max()))
    return columns


@pytest.mark.parametrize(
    ("length", "start", "stop", "width"),
    [(100_000, 0, None, 300), (100_003, 1234, 98_765, 257), (50_000, 49_000, 50_000, 100)],
)
def test_peak_envelope_holds_true_min_and_max_of_every_column(length, start, stop, width):
    rng = np.random.default_rng(length)
    samples = rng.standard_normal(length).astype(np.float32)
    x, y = peak_envelope(samples, width, start, stop)
    expected = _brute_force_columns(samples, start, length if stop is None else stop, width)
    assert len(y) == 2 * len(expected) <= 2 * (width + 1)
    np.testing.assert_array_equal(y[0::2], [lo for _, lo, _ in expected])
    np.testing.assert_array_equal(y[1::2], [hi for _, _, hi in expected])
    np.testing.assert_array_equal(x[0::2], [c for c, _, _ in expected])
    np.testing.assert_array_equal(x[0::2], x[1::2])
    visible = samples[start:stop]
    assert visible.min() in y and visible.max() in y


def test_peak_envelope_returns_raw_samples_when_zoomed_in():
    samples = np.random.default_rng(1).standard_normal(10_000).astype(np.float32)
    x, y = peak_envelope(samples, 1000, 5000, 6500)
    np.testing.assert_array_equal(x, np.arange(5000, 6500))
    np.testing.assert_array_equal(y, samples[5000:6500])
    # Just past the threshold it downsamples.
    assert len(peak_envelope(samples, 1000, 0, 2001)[1]) < 2001


@pytest.mark.parametrize("length", [1, 63, 64, 1000, 99_999, 262_144, 300_001])
def test_pyramid_envelope_equals_direct_computation(length):
    rng = np.random.default_rng(length)
    # A drift makes whole blocks positive or negative, so wrong padding would show.
    samples = (rng.standard_normal(length) + np.linspace(-9.0, 9.0, length)).astype(np.float32)
    pyramid = PeakPyramid(samples)
    cases = [(0, length, w) for w in (1, 7, 100, 1500)]
    cases += [tuple(sorted(rng.integers(0, length + 1, 2))) + (int(rng.integers(1, 800)),)
              for _ in range(25)]
    for start, stop, width in cases:
        direct = peak_envelope(samples, width, start, stop)
        fast = pyramid.envelope(start, stop, width)
        np.testing.assert_array_equal(fast[0], direct[0], err_msg=f"x {start=} {stop=} {width=}")
        np.testing.assert_array_equal(fast[1], direct[1], err_msg=f"y {start=} {stop=} {width=}")


def test_pyramid_is_small_and_output_is_bounded_by_width():
    samples = np.random.default_rng(2).standard_normal(2_000_000).astype(np.float32)
    pyramid = PeakPyramid(samples)
    assert pyramid.nbytes < samples.nbytes / 8
    x, y = pyramid.envelope(0, len(samples), 1200)
    assert 1200 <= len(y) <= 2 * 1200
    assert np.all(np.diff(x) >= 0)
    assert column_block(len(samples), 1200) == 2048


# ---- span snapping -------------------------------------------------------------------------


def _in_latents(spans):
    """Spans as (start, end) latent indices; fails unless both edges sit on the grid."""
    result = []
    for start, end in spans:
        edges = []
        for edge in (start, end):
            samples = edge * SAMPLE_RATE
            assert samples == pytest.approx(round(samples), abs=1e-6)
            edges.append(round(samples) / SAMPLES_PER_LATENT)
        result.append(tuple(edges))
    return result


def _g(*latents):
    """Seconds at the given (fractional) latent positions."""
    return tuple(k * GRID_S for k in latents)


def test_snap_spans_rounds_outward_to_latent_grid():
    assert _in_latents(snap_spans([_g(1.5, 2.2)], 10.0)) == [(1, 3)]
    assert _in_latents(snap_spans([_g(4.0001, 4.9999)], 10.0)) == [(4, 5)]
    # Already on the grid: unchanged, and snapping twice changes nothing.
    once = snap_spans([_g(2, 5), (0.6, 0.71)], 10.0)
    assert _in_latents(once) == [(2, 5), (6, 8)]
    assert snap_spans(once, 10.0) == once
    # Reversed spans count as their sorted selves.
    assert _in_latents(snap_spans([_g(2.2, 1.5)], 10.0)) == [(1, 3)]
    # Seconds come back as exact sample counts over the rate.
    assert snap_spans([_g(1.5, 2.2)], 10.0) == [(4096 / 44100, 3 * 4096 / 44100)]


def test_snap_spans_merges_overlapping_and_touching_spans():
    spans = [_g(5.5, 7.5), _g(0.2, 1.5), _g(1.2, 2.0), _g(7.9, 9.0), _g(20, 21),
             _g(30.5, 31.0), _g(31.2, 32.0)]
    # The last two only touch after snapping; they mask the same latents as one span.
    assert _in_latents(snap_spans(spans, 10.0)) == [(0, 2), (5, 9), (20, 21), (30, 32)]


def test_snap_spans_clips_to_the_clip():
    duration = 10.3 * GRID_S
    clip_end = round(duration * SAMPLE_RATE)
    (tail,) = snap_spans([_g(9.5, 50)], duration)
    assert _in_latents([(tail[0], tail[0])]) == [(9, 9)]
    assert tail[1] * SAMPLE_RATE == pytest.approx(clip_end)
    assert _in_latents(snap_spans([(-3.0, 0.5 * GRID_S)], duration)) == [(0, 1)]
    assert snap_spans([_g(20, 30), (-2.0, -1.0)], duration) == []
    assert snap_spans([(1.0, 2.0)], 0.0) == []


# ---- waveform view -------------------------------------------------------------------------


def _send_mouse(widget, kind, pos, button, buttons):
    from PySide6.QtCore import QPointF, Qt
    from PySide6.QtGui import QMouseEvent
    from PySide6.QtWidgets import QApplication

    local = QPointF(pos)
    event = QMouseEvent(kind, local, QPointF(widget.mapToGlobal(local)), button, buttons,
                        Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(widget, event)


def _drag(qtbot, widget, start, end, button):
    """Press, move in two steps and release; waits beat pyqtgraph's mouse-move rate limit."""
    from PySide6.QtCore import QEvent, QPoint, Qt

    no_button = Qt.MouseButton.NoButton
    _send_mouse(widget, QEvent.Type.MouseButtonPress, start, button, button)
    middle = QPoint((start.x() + end.x()) // 2, start.y())
    for pos in (middle, end):
        qtbot.wait(25)
        _send_mouse(widget, QEvent.Type.MouseMove, pos, no_button, button)
    qtbot.wait(25)
    _send_mouse(widget, QEvent.Type.MouseButtonRelease, end, button, no_button)


def _click(widget, pos, button):
    from PySide6.QtCore import QEvent, Qt

    _send_mouse(widget, QEvent.Type.MouseButtonPress, pos, button, button)
    _send_mouse(widget, QEvent.Type.MouseButtonRelease, pos, button, Qt.MouseButton.NoButton)


@pytest.fixture
def waveform(qtbot):
    from app.widgets.waveform import WaveformView

    view = WaveformView()
    qtbot.addWidget(view)
    view.resize(900, 320)
    view.show()
    qtbot.waitExposed(view)
    return view


def _stereo_int16(seconds=2.0, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(-32768, 32768, size=(int(seconds * SAMPLE_RATE), 2), dtype=np.int16)


def test_waveform_holds_exactly_the_samples_given(waveform):
    pcm = _stereo_int16()
    pcm[0] = (-32768, 32767)
    waveform.set_audio(pcm)
    held = waveform.samples()
    assert held.dtype == np.float32 and held.shape == pcm.shape
    np.testing.assert_array_equal(held, pcm.astype(np.float64) / 32768.0)
    assert held[0, 0] == -1.0
    assert waveform.duration == pytest.approx(2.0)
    # The right channel is drawn from the right channel.
    _, right = waveform.curve_data(1)
    assert right.max() == held[:, 1].max() and right.min() == held[:, 1].min()

    floats = np.random.default_rng(3).uniform(-1, 1, (1000, 2)).astype(np.float32)
    waveform.set_audio(floats)
    np.testing.assert_array_equal(waveform.samples(), floats)
    waveform.clear()
    assert waveform.samples().shape == (0, 2) and waveform.duration == 0.0


def test_waveform_redraw_follows_zoom(waveform):
    pcm = _stereo_int16(seconds=20.0)
    waveform.set_audio(pcm)
    x, _ = waveform.curve_data(0)
    assert len(x) <= 2 * waveform.plot_width_px() + 4
    waveform.set_visible_range(5.0, 5.01)
    x, y = waveform.curve_data(0)
    # Zoomed in to 441 samples: the raw samples (plus the one at the right edge) are drawn.
    first = int(round(x[0] * SAMPLE_RATE))
    np.testing.assert_array_equal(y, waveform.samples()[first:first + len(y), 0])
    assert x[0] <= 5.0 and x[-1] >= 5.01


def test_playhead_moves(waveform):
    waveform.set_audio(_stereo_int16())
    waveform.set_playhead(1.25)
    assert waveform.playhead() == 1.25
    assert all(line.value() == 1.25 for line in waveform._playheads)


def test_click_on_plot_requests_seek(waveform, qtbot):
    from PySide6.QtCore import Qt

    waveform.set_audio(_stereo_int16())
    pos = waveform.position_for_seconds(1.5, channel=1)
    assert waveform.seconds_at(pos) == pytest.approx(1.5, abs=2.0 / waveform.plot_width_px())
    with qtbot.waitSignal(waveform.seekRequested, timeout=1000) as blocker:
        _click(waveform.plot_viewport(), pos, Qt.MouseButton.LeftButton)
    assert blocker.args[0] == pytest.approx(1.5, abs=4.0 / waveform.plot_width_px())


def test_span_added_through_api_is_snapped_and_reported(waveform, qtbot):
    waveform.set_audio(_stereo_int16(seconds=3.0))
    with qtbot.waitSignal(waveform.spansChanged, timeout=1000) as blocker:
        waveform.add_span(1.0, 1.2)
    expected = snap_spans([(1.0, 1.2)], waveform.duration)
    assert blocker.args[0] == expected == waveform.spans()
    assert expected[0][0] <= 1.0 and expected[0][1] >= 1.2
    assert len(waveform.span_regions()) == 2  # one per channel
    assert all(not region.movable for region in waveform.span_regions())
    # A span inside an existing one changes nothing and says nothing.
    with qtbot.assertNotEmitted(waveform.spansChanged):
        waveform.add_span(1.05, 1.1)


def test_span_mode_mouse_drag_adds_a_snapped_span(waveform, qtbot):
    from PySide6.QtCore import Qt

    waveform.set_audio(_stereo_int16(seconds=3.0))
    waveform.set_span_mode(True)
    start, end = waveform.position_for_seconds(0.5), waveform.position_for_seconds(1.5)
    before = waveform.visible_range()
    with qtbot.waitSignal(waveform.spansChanged, timeout=1000) as blocker:
        _drag(qtbot, waveform.plot_viewport(), start, end, Qt.MouseButton.LeftButton)
    (span,) = blocker.args[0]
    tolerance = 4.0 / waveform.plot_width_px() * 3.0
    assert span[0] == pytest.approx(np.floor(0.5 / GRID_S) * GRID_S, abs=GRID_S + tolerance)
    assert span[0] <= 0.5 + tolerance and span[1] >= 1.5 - tolerance
    assert snap_spans([span], waveform.duration) == [span]
    assert waveform.visible_range() == before  # span mode does not pan

    waveform.set_span_mode(False)
    with qtbot.assertNotEmitted(waveform.spansChanged):
        _drag(qtbot, waveform.plot_viewport(), end, start, Qt.MouseButton.LeftButton)


def test_right_click_on_span_removes_it(waveform, qtbot):
    from PySide6.QtCore import Qt

    waveform.set_audio(_stereo_int16(seconds=3.0))
    waveform.set_spans([(0.2, 0.6), (2.0, 2.5)])
    assert len(waveform.spans()) == 2
    with qtbot.waitSignal(waveform.spansChanged, timeout=1000) as blocker:
        _click(waveform.plot_viewport(), waveform.position_for_seconds(2.2),
               Qt.MouseButton.RightButton)
    assert blocker.args[0] == snap_spans([(0.2, 0.6)], waveform.duration)
    assert len(waveform.span_regions()) == 2
    with qtbot.assertNotEmitted(waveform.spansChanged):
        assert waveform.remove_span_at(1.5) is False
    waveform.remove_span(0)
    assert waveform.spans() == [] and waveform.span_regions() == []


# Qt 6 offers no other QDragEnterEvent constructor; PySide flags this one anyway.
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_dropping_a_file_emits_its_path(waveform, qtbot, tmp_path):
    from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
    from PySide6.QtGui import QDragEnterEvent, QDropEvent
    from PySide6.QtWidgets import QApplication

    path = tmp_path / "kick.flac"
    path.write_bytes(b"fLaC")
    copy, left, none = Qt.DropAction.CopyAction, Qt.MouseButton.LeftButton, Qt.KeyboardModifier(0)

    text_only = QMimeData()
    text_only.setText("not a file")
    refused = QDragEnterEvent(QPoint(20, 20), copy, text_only, left, none)
    QApplication.sendEvent(waveform, refused)
    assert not refused.isAccepted()

    mime = QMimeData()
    mime.setUrls([QUrl("https://example.com/remote.wav"), QUrl.fromLocalFile(str(path))])
    enter = QDragEnterEvent(QPoint(20, 20), copy, mime, left, none)
    QApplication.sendEvent(waveform, enter)
    assert enter.isAccepted()
    drop = QDropEvent(QPointF(20, 20), copy, mime, left, none)
    with qtbot.waitSignal(waveform.fileDropped, timeout=1000) as blocker:
        QApplication.sendEvent(waveform, drop)
    assert blocker.args == [str(path)]


def test_drag_handle_requests_drag_out(waveform, qtbot):
    from PySide6.QtCore import QEvent, QPoint, Qt
    from PySide6.QtWidgets import QWidget

    handle = waveform.findChild(QWidget, "waveformDragHandle")
    assert handle is not None and handle.isVisible()
    assert handle.toolTip() == "Drag this take into a folder or DAW"
    left, no_button = Qt.MouseButton.LeftButton, Qt.MouseButton.NoButton
    centre = handle.rect().center()
    with qtbot.assertNotEmitted(waveform.dragOutRequested):
        _click(handle, centre, left)
    with qtbot.waitSignal(waveform.dragOutRequested, timeout=1000):
        _send_mouse(handle, QEvent.Type.MouseButtonPress, centre, left, left)
        _send_mouse(handle, QEvent.Type.MouseMove, centre + QPoint(40, 0), no_button, left)
    _send_mouse(handle, QEvent.Type.MouseButtonRelease, centre + QPoint(40, 0), left, no_button)


# ---- spectrogram and latents ---------------------------------------------------------------


def test_spectrogram_of_a_1khz_sine_peaks_at_1khz(qtbot):
    from app.widgets.spectrogram import MAX_FRAMES, N_FFT, SpectrogramView, frame_hop

    view = SpectrogramView()
    qtbot.addWidget(view)
    assert view.objectName() == "spectrogramView"
    t = np.arange(SAMPLE_RATE) / SAMPLE_RATE
    tone = (0.5 * np.sin(2 * np.pi * 1000.0 * t) * 32767).astype(np.int16)
    view.set_audio(np.column_stack([tone, tone]))
    image = view.image()
    assert image.shape[1] == N_FFT // 2 + 1
    assert image.max() - image.min() <= 90.0 + 1e-3
    peak_hz = np.argmax(image.mean(axis=0)) * SAMPLE_RATE / N_FFT
    assert abs(peak_hz - 1000.0) <= SAMPLE_RATE / N_FFT
    assert image.max() == pytest.approx(20 * np.log10(0.5), abs=1.5)  # about -6 dBFS
    # A 6 min 20 s take is capped at MAX_FRAMES columns.
    length = 380 * SAMPLE_RATE
    assert (length - N_FFT) // frame_hop(length) + 1 <= MAX_FRAMES
    view.clear()
    assert view.image().size == 0


def test_latent_slider_switches_the_displayed_step(qtbot):
    from PySide6.QtWidgets import QSlider

    from app.widgets.latent_view import LatentView

    view = LatentView()
    qtbot.addWidget(view)
    view.show()  # the heatmap is built when the view is first shown (its tab opened)
    steps = np.random.default_rng(4).standard_normal((5, 256, 40)).astype(np.float32)
    steps *= np.linspace(3.0, 1.0, 5)[:, None, None]
    view.set_latents(steps)
    slider = view.findChild(QSlider, "latentStepSlider")
    assert view.current_step == 4 and slider.value() == 4
    np.testing.assert_array_equal(view.image(), steps[4])
    assert view.step_text() == "Step 5 of 5"
    low, high = view._item.getLevels()
    assert high > 0 and low == -high

    slider.setValue(1)
    assert view.current_step == 1 and view.step_text() == "Step 2 of 5"
    np.testing.assert_array_equal(view.image(), steps[1])
    np.testing.assert_array_equal(view._item.image, steps[1].T)
    assert tuple(view._item.getLevels()) == (low, high)  # one colour range for all steps

    view.clear()
    assert view.current_step == -1 and view.image().shape == (256, 0)
