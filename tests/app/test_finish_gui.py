"""The Finish panel end to end (pytest-qt, offscreen, demo model set): presets, the loudness
readout against engines.finish.loudness run here, loops by the model and by crossfade, the
finished file a drag hands out (read back by soundfile and wavinfo), A/B, handles, and that
finishing runs off the GUI thread. Quality badges and rerolls: tests/test_quality_gui.py."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import wavinfo

from engines.audio_io import float_from_pcm16
from engines.finish.chain import finish
from engines.finish.loudness import measure, to_db
from engines.finish.settings import FinishSettings
from tests.app.test_gui import WAIT_MS, child, generate

NUMBER = r"(-?\d+\.\d|-inf)"
READOUT = re.compile(rf"^{NUMBER} LUFS, {NUMBER} dBTP -> {NUMBER} LUFS, {NUMBER} dBTP$")


def finish_ctl(win):
    return win.studio.finish_controller


def wait_finished(qtbot, win, take=None, timeout=WAIT_MS):
    """Until the take's finished audio matches its chain (and no loop is being made)."""
    ctl = finish_ctl(win)

    def ready():
        t = take or win.studio.session.current_take()
        return (t is not None and t.finishing is not None and t.finished is not None
                and t.finished.matches(t.finishing, t.loop) and not ctl.loops.is_making(t)
                and t.take_id not in ctl._pending)

    qtbot.waitUntil(ready, timeout=timeout)
    return take or win.studio.session.current_take()


def choose_preset(win, name: str) -> None:
    combo = child(win, "presetCombo")
    index = combo.findText(name)
    assert index >= 0, name
    combo.setCurrentIndex(index)
    combo.activated.emit(index)


def shown_figures(text: str) -> list[float | None]:
    match = READOUT.match(text)
    assert match, text
    return [None if g == "-inf" else float(g) for g in match.groups()]


def test_finish_object_names_exist(window):
    for name in ("finishPanel", "presetCombo", "savePresetButton", "deletePresetButton",
                 "nameTemplateEdit", "trimCheck", "trimDbSpin", "fadeInSpin", "fadeOutSpin",
                 "fadeCurveCombo", "loudnessCheck", "loudnessSpin", "truePeakCheck",
                 "truePeakSpin", "rateCombo", "monoCheck", "formatCombo", "loopButton",
                 "remakeLoopButton", "loopSeamSpin", "loopMethodCombo", "hearWrapButton",
                 "abButton", "loudnessLabel", "rerollFlaggedCheck"):
        child(window, name)
    panel = child(window, "finishPanel")
    waveform = child(window, "waveformView")
    assert panel.parent() is waveform.parent()  # under the waveform, in the centre column
    layout = waveform.parent().layout()
    assert layout.indexOf(panel) == layout.indexOf(waveform) + 1


def test_choosing_a_preset_fills_the_panel(qtbot, window):
    generate(qtbot, window, "coin pickup", seconds=1.0, seed=7)
    choose_preset(window, "Game SFX one-shot")
    assert child(window, "trimCheck").isChecked()
    assert child(window, "fadeInSpin").value() == 2.0
    assert child(window, "fadeOutSpin").value() == 30.0
    assert child(window, "fadeCurveCombo").currentData() == "equal-power"
    assert child(window, "loudnessCheck").isChecked()
    assert child(window, "loudnessSpin").value() == -18.0
    assert child(window, "truePeakSpin").value() == -1.0
    assert child(window, "rateCombo").currentData() == 48000
    assert child(window, "formatCombo").currentData() == "wav24"
    take = wait_finished(qtbot, window)
    assert take.finishing.preset == "Game SFX one-shot" and take.finished.rate == 48000
    choose_preset(window, "Raw")  # back to the raw take: no chain kept
    qtbot.waitUntil(lambda: take.finishing is None, timeout=WAIT_MS)
    assert "(raw)" in child(window, "loudnessLabel").text() or \
        child(window, "loudnessLabel").text() == "Measuring..."


def test_loudness_readout_matches_an_independent_measurement(qtbot, window):
    generate(qtbot, window, "rain on a tin roof", seconds=2.0, seed=21)
    take = window.studio.session.current_take()
    child(window, "truePeakCheck").setChecked(True)
    child(window, "truePeakSpin").setValue(-1.0)
    child(window, "loudnessCheck").setChecked(True)
    child(window, "loudnessSpin").setValue(-20.0)
    finish_ctl(window).apply_now()
    wait_finished(qtbot, window, take)
    shown = shown_figures(child(window, "loudnessLabel").text())
    raw = float_from_pcm16(take.pcm)
    lufs_raw, peak_raw = measure(raw, 44100)
    settings = FinishSettings(loudness_lufs=-20.0, true_peak_dbtp=-1.0)
    ours = finish(raw, settings)  # the chain run here, apart from the window's thread pool
    np.testing.assert_allclose(take.finished.audio, ours.audio, atol=1e-6)
    lufs_after, peak_after = measure(ours.audio, ours.rate)
    expected = [lufs_raw, to_db(peak_raw), lufs_after, to_db(peak_after)]
    for got, want in zip(shown, expected, strict=True):
        assert got == pytest.approx(round(want, 1), abs=0.051)
    assert to_db(peak_after) <= -1.0 + 0.05


def test_model_loop_has_the_takes_length_and_loop_points(qtbot, window, tmp_path):
    generate(qtbot, window, "steady wind ambience", seconds=4.0, seed=5)
    take = window.studio.session.current_take()
    child(window, "rateCombo").setCurrentIndex(child(window, "rateCombo").findData(48000))
    assert child(window, "loopMethodCombo").currentData() == "model"
    child(window, "loopButton").click()
    wait_finished(qtbot, window, take)
    assert take.loop.method == "model" and take.loop.seed is not None
    frames = take.pcm.shape[0]
    delivered = round(frames * 48000 / 44100)
    assert take.finished.rate == 48000 and len(take.finished.audio) == delivered
    assert take.finished.loop_points == (0, delivered - 1)
    assert child(window, "loopButton").isChecked() and child(window, "abButton").isChecked()
    assert child(window, "hearWrapButton").isEnabled()
    # what leaves the app: the loop with its smpl chunk, read back by an independent reader
    path = Path(child(window, "takesList").mimeData(
        [child(window, "takesList").currentItem()]).urls()[0].toLocalFile())
    loops = wavinfo.WavInfoReader(str(path)).smpl.sample_loops
    assert [(lp.start, lp.end) for lp in loops] == [(0, delivered - 1)]
    assert sf.info(path).samplerate == 48000


def test_crossfade_loop_for_an_imported_take_when_chosen(qtbot, window, tmp_path):
    t = np.arange(3 * 44100) / 44100
    tone = np.stack([0.3 * np.sin(2 * np.pi * 220 * t)] * 2, 1)
    wav = tmp_path / "hum.wav"
    sf.write(wav, tone, 44100, subtype="PCM_16")
    child(window, "waveformView").fileDropped.emit(str(wav))
    take = window.studio.session.current_take()
    assert take.model == "imported"
    child(window, "loopButton").click()  # the model needs a prompt: one sentence, no loop
    message = child(window, "statusBar").currentMessage()
    assert "Crossfade" in message and "\n" not in message
    assert not child(window, "loopButton").isChecked()
    method = child(window, "loopMethodCombo")
    method.setCurrentIndex(method.findData("crossfade"))
    child(window, "loopButton").click()
    wait_finished(qtbot, window, take)
    seam = take.loop.report["seam_s"]
    assert take.loop.method == "crossfade"
    assert len(take.finished.audio) == take.pcm.shape[0] - round(seam * 44100)
    assert take.finished.loop_points == (0, len(take.finished.audio) - 1)


def test_a_busy_gpu_gives_a_crossfade_loop_and_says_so(qtbot, window):
    generate(qtbot, window, "engine hum", seconds=3.0, seed=9)
    take = window.studio.session.current_take()
    window.studio.gpu.running = True  # as while a batch is generating
    try:
        child(window, "loopButton").click()
        assert "GPU is busy" in child(window, "statusBar").currentMessage()
        wait_finished(qtbot, window, take)
    finally:
        window.studio.gpu.running = False
    assert take.loop.method == "crossfade" and take.finished.loop_points is not None


def test_drag_out_writes_the_finished_file_named_by_the_template(qtbot, window):
    generate(qtbot, window, "door slam", seconds=1.0, seed=3)
    choose_preset(window, "Game SFX one-shot")
    take = wait_finished(qtbot, window)
    lst = child(window, "takesList")
    path = Path(lst.mimeData([lst.currentItem()]).urls()[0].toLocalFile())
    info = sf.info(path)
    assert info.samplerate == 48000 and info.subtype == "PCM_24" and info.channels == 2
    assert path.name == "door-slam_01.wav"
    audio, _ = sf.read(path, dtype="float32")
    np.testing.assert_allclose(audio, take.finished.audio, atol=2 / 2**23)
    sidecar = path.with_suffix(".json")
    assert sidecar.is_file() and '"finishing"' in sidecar.read_text()
    assert lst.mimeData([lst.currentItem()]).urls()[0].toLocalFile() == str(path)  # reused
    # another chain: another file, never the first one overwritten
    child(window, "formatCombo").setCurrentIndex(child(window, "formatCombo").findData("flac"))
    finish_ctl(window).apply_now()
    wait_finished(qtbot, window, take)
    second = Path(lst.mimeData([lst.currentItem()]).urls()[0].toLocalFile())
    assert second.suffix == ".flac" and second != path and path.is_file()
    child(window, "formatCombo").setCurrentIndex(child(window, "formatCombo").findData("wav24"))
    child(window, "fadeOutSpin").setValue(40.0)
    finish_ctl(window).apply_now()
    wait_finished(qtbot, window, take)
    third = Path(lst.mimeData([lst.currentItem()]).urls()[0].toLocalFile())
    # door-slam_01_2.json is the FLAC's sidecar: a name whose sidecar is taken is taken too
    assert second.name == "door-slam_01_2.flac"
    assert third.name == "door-slam_01_3.wav" and sf.info(path).subtype == "PCM_24"
    choose_preset(window, "Raw")  # no chain: the raw take's own file, as before finishing
    raw = Path(lst.mimeData([lst.currentItem()]).urls()[0].toLocalFile())
    assert sf.info(raw).samplerate == 44100 and raw.name == "door-slam_01.wav"  # takes/ folder


def test_save_as_writes_the_finished_take(qtbot, window, tmp_path):
    generate(qtbot, window, "ui click", seconds=0.5, seed=8)
    choose_preset(window, "UI click")
    wait_finished(qtbot, window)
    written = window.studio.export_controller.save_take(window.studio.session.current_take(),
                                                        tmp_path / "click.wav")
    info = sf.info(written)
    assert info.channels == 1 and info.samplerate == 48000 and info.subtype == "PCM_16"


@pytest.fixture
def played(qtbot):
    """A window whose player plays into a stand-in stream (this machine may have no device)."""
    from app.common.playback import Player
    from app.shell.main_window import MainWindow
    from app.shell.studio import Studio
    from tests.app.test_playback import FakeStream

    win = MainWindow()
    qtbot.addWidget(win)
    win.studio = Studio(win, player=Player(stream_factory=FakeStream))
    child(win, "autoplayCheck").setChecked(False)
    yield win
    win.studio.shutdown()


def test_ab_toggle_switches_what_the_player_plays(qtbot, played):
    win, player = played, played.studio.player
    generate(qtbot, win, "whoosh", seconds=2.0, seed=4)
    take = win.studio.session.current_take()
    child(win, "fadeInSpin").setValue(200.0)
    win.studio.finish_controller.panel.set_hidden(trim_out_s=1.5)
    win.studio.finish_controller.apply_now()
    wait_finished(qtbot, win, take)
    assert player.duration_seconds == pytest.approx(2.0, abs=0.01)  # still raw (A)
    player.seek(0.75)
    child(win, "abButton").click()
    assert child(win, "abButton").isChecked()
    assert player.duration_seconds == pytest.approx(1.5, abs=0.01)  # finished (B)
    np.testing.assert_allclose(player._audio, take.finished.preview, atol=1e-6)
    assert player.position_seconds == pytest.approx(0.75, abs=0.01)  # playhead kept
    assert child(win, "waveformView").duration == pytest.approx(1.5, abs=0.01)
    child(win, "abButton").click()
    assert player.duration_seconds == pytest.approx(2.0, abs=0.01)
    assert player.position_seconds == pytest.approx(0.75, abs=0.01)


def test_hear_wrap_plays_the_end_into_the_start(qtbot, played, monkeypatch):
    import app.finish.audition as audition

    monkeypatch.setattr(audition, "WRAP_AUDITION_S", 0.25)
    win, player = played, played.studio.player
    generate(qtbot, win, "forest ambience", seconds=3.0, seed=8)
    take = win.studio.session.current_take()
    child(win, "loopButton").click()
    wait_finished(qtbot, win, take)
    assert child(win, "loopButton").text() == "Looped"
    child(win, "hearWrapButton").click()
    assert player.playing and player.loop and child(win, "loopCheck").isChecked()
    assert player.duration_seconds == pytest.approx(len(take.finished.preview) / 44100)
    assert player.position_seconds == pytest.approx(player.duration_seconds - 0.25, abs=0.01)
    qtbot.waitUntil(lambda: not player.playing, timeout=5000)  # paused after the wrap
    assert not child(win, "loopCheck").isChecked()  # looping back as it was
    player.seek(0.5)
    child(win, "loopCheck").setChecked(True)  # L on a finished loop: the wrap comes next
    assert player.position_seconds == pytest.approx(player.duration_seconds - 0.25, abs=0.01)


def test_trim_and_fade_handles_drive_the_chain(qtbot, window):
    generate(qtbot, window, "laser", seconds=2.0, seed=12)
    take = window.studio.session.current_take()
    handles = finish_ctl(window).handles
    assert handles.is_shown()
    out = handles.lines("trim_out")[0]
    out.setValue(1.25)
    assert handles.lines("trim_out")[1].value() == pytest.approx(1.25)  # both channels
    out.sigPositionChangeFinished.emit(out)
    wait_finished(qtbot, window, take)
    assert take.finishing.trim_out_s == pytest.approx(1.25)
    assert len(take.finished.audio) == round(1.25 * 44100)
    fade = handles.lines("fade_in")[1]
    fade.setValue(0.3)
    fade.sigPositionChangeFinished.emit(fade)
    wait_finished(qtbot, window, take)
    assert child(window, "fadeInSpin").value() == pytest.approx(300.0, abs=1.0)
    assert take.finishing.fade_in_ms == pytest.approx(300.0, abs=1.0)
    assert abs(take.finished.audio[0]).max() == 0.0  # a fade starts from silence
    child(window, "abButton").click()  # the finished view has no raw-time handles
    assert not handles.is_shown()


def mouse_drag(waveform, seconds_from: float, seconds_to: float, level: float) -> None:
    """A left-button drag on the top plot at `level` (-1 bottom .. 1 top), as a hand does it."""
    from PySide6.QtCore import QEvent, QPointF, Qt
    from PySide6.QtGui import QMouseEvent
    from PySide6.QtWidgets import QApplication

    viewport = waveform.plot_viewport()
    box = waveform.plot_items()[0].getViewBox()

    def at(seconds):  # the plots' view maps scene points to viewport pixels
        scene = box.mapViewToScene(QPointF(seconds, level))
        return QPointF(waveform.plot_viewport().parentWidget().mapFromScene(scene))

    def send(kind, pos, buttons):
        event = QMouseEvent(kind, pos, viewport.mapToGlobal(pos), Qt.MouseButton.LeftButton,
                            buttons, Qt.KeyboardModifier.NoModifier)
        QApplication.sendEvent(viewport, event)

    start, end = at(seconds_from), at(seconds_to)
    send(QEvent.Type.MouseButtonPress, start, Qt.MouseButton.LeftButton)
    for step in range(1, 11):
        send(QEvent.Type.MouseMove, start + (end - start) * (step / 10),
             Qt.MouseButton.LeftButton)
    send(QEvent.Type.MouseButtonRelease, end, Qt.MouseButton.NoButton)


def test_handles_follow_the_mouse(qtbot, window):
    window.resize(1280, 720)
    window.show()
    generate(qtbot, window, "impact", seconds=2.0, seed=13)
    take = window.studio.session.current_take()
    waveform = child(window, "waveformView")
    qtbot.wait(50)
    mouse_drag(waveform, 1.999, 1.5, -0.8)  # low on the plot: the trim line
    wait_finished(qtbot, window, take)
    assert take.finishing.trim_out_s == pytest.approx(1.5, abs=0.02)
    mouse_drag(waveform, take.finishing.trim_out_s - 0.001, 1.2, 0.9)  # high: the fade handle
    wait_finished(qtbot, window, take)
    assert take.finishing.trim_out_s == pytest.approx(1.5, abs=0.02)
    assert take.finishing.fade_out_ms == pytest.approx(300, abs=20)


def test_finishing_runs_off_the_gui_thread(qtbot, window, monkeypatch):
    import app.finish.controller as fc

    generate(qtbot, window, "drone", seconds=3.0, seed=2)
    take = window.studio.session.current_take()
    threads = []
    real = fc.render

    def spy(*args, **kwargs):
        threads.append(threading.get_ident())
        return real(*args, **kwargs)

    monkeypatch.setattr(fc, "render", spy)
    child(window, "loudnessCheck").setChecked(True)
    with qtbot.waitSignal(finish_ctl(window).finishedReady, timeout=WAIT_MS) as blocker:
        finish_ctl(window).apply_now()
        assert take.finished is None  # the answer can only come back through the event loop
    assert blocker.args == [take]
    assert threads and threads[0] != threading.get_ident()


def test_stale_results_are_dropped(qtbot, window):
    generate(qtbot, window, "thunder", seconds=2.0, seed=6)
    take = window.studio.session.current_take()
    ctl = finish_ctl(window)
    child(window, "loudnessCheck").setChecked(True)
    child(window, "loudnessSpin").setValue(-30.0)
    ctl.apply_now()
    child(window, "loudnessSpin").setValue(-12.0)
    ctl.apply_now()  # asked before the first answer could arrive
    seen = []
    ctl.finishedReady.connect(lambda t: seen.append(t.finished.settings.loudness_lufs))
    wait_finished(qtbot, window, take)
    qtbot.wait(200)
    assert take.finished.settings.loudness_lufs == -12.0 and seen == [-12.0]


def test_user_presets_save_and_delete(qtbot, window):
    generate(qtbot, window, "pop", seconds=0.5, seed=1)
    ctl = finish_ctl(window)
    child(window, "fadeOutSpin").setValue(55.0)
    assert ctl.save_preset_as("My pops") == "My pops"
    combo = child(window, "presetCombo")
    assert combo.currentText() == "My pops"
    choose_preset(window, "Raw")
    choose_preset(window, "My pops")
    assert child(window, "fadeOutSpin").value() == 55.0
    ctl.delete_current_preset()
    assert combo.findText("My pops") < 0
    choose_preset(window, "UI click")
    ctl.delete_current_preset()  # a built-in: one sentence, nothing deleted
    message = child(window, "statusBar").currentMessage()
    assert "built-in" in message and "\n" not in message and combo.findText("UI click") >= 0


def test_failures_are_one_sentence(qtbot, window):
    generate(qtbot, window, "click", seconds=0.5, seed=1)
    status = child(window, "statusBar")
    edit = child(window, "nameTemplateEdit")
    edit.setText("{nope}")
    edit.editingFinished.emit()
    assert "{nope}" in status.currentMessage() and "\n" not in status.currentMessage()
    assert edit.text() != "{nope}"
    finish_ctl(window).hear_wrap()
    assert "Make a loop first" in status.currentMessage()
    child(window, "fadeInSpin").setValue(20.0)
    finish_ctl(window).apply_now()
    lst = child(window, "takesList")
    assert lst.mimeData([lst.currentItem()]).urls() == []  # still finishing: nothing half-made
    assert "still being prepared" in status.currentMessage()
    wait_finished(qtbot, window)


def test_the_chain_is_kept_with_the_library_take(qtbot, window):
    library = window.studio.library
    if not hasattr(library, "set_finishing"):
        pytest.skip("this library has no finishing records yet")
    generate(qtbot, window, "coin", seconds=1.0, seed=31)
    choose_preset(window, "Game SFX one-shot")
    take = wait_finished(qtbot, window)
    record = library.get(take.library_id)
    assert record.finishing["chain"] == take.finishing.to_dict()
    choose_preset(window, "Raw")
    qtbot.waitUntil(lambda: take.finishing is None, timeout=WAIT_MS)
    assert library.get(take.library_id).finishing is None


def test_a_loop_is_kept_aside_while_the_chain_is_a_one_shot(qtbot, window):
    generate(qtbot, window, "rain", seconds=3.0, seed=44)
    take = window.studio.session.current_take()
    method = child(window, "loopMethodCombo")
    method.setCurrentIndex(method.findData("crossfade"))
    child(window, "loopButton").click()
    wait_finished(qtbot, window, take)
    loop = take.loop
    child(window, "loopButton").click()  # back to the one-shot (a raw take here)
    assert take.finishing is None and take.loop is loop
    child(window, "loopButton").click()  # and again: the same loop, no new one made
    wait_finished(qtbot, window, take)
    assert take.loop is loop and take.finishing.loop


def test_a_library_take_comes_back_with_its_chain_and_the_same_model_loop(qtbot, window):
    if not hasattr(window.studio.library, "set_finishing"):
        pytest.skip("this library has no finishing records yet")
    generate(qtbot, window, "fire crackle", seconds=4.0, seed=17)
    take = window.studio.session.current_take()
    choose_preset(window, "Ambience loop")
    wait_finished(qtbot, window, take)
    assert take.loop.method == "model"
    first = take.finished.audio.copy()
    session = window.studio.session
    session.remove_row(child(window, "takesList").currentRow())
    again = window.studio.library_controller.load_from_library(take.library_id)
    assert again is not take and again.finishing == take.finishing
    assert again.loop_recipe == {"method": "model", "seed": take.loop.seed}
    wait_finished(qtbot, window, again)
    assert again.loop.seed == take.loop.seed
    np.testing.assert_allclose(again.finished.audio, first, atol=1e-5)
    assert child(window, "presetCombo").currentText() == "Ambience loop"
