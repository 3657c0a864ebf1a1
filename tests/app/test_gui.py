"""The desktop app end to end (pytest-qt, offscreen), on the demo model set."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from app.common.gpu_jobs import GeneratedTake
from app.common.session_take import Take
from engines.constants import SAMPLES_PER_LATENT
from tests.gui_support import child

WAIT_MS = 60_000


def generate(qtbot, win, prompt: str, *, seconds: float = 1.0, seed: int | None = 7,
             variations: int = 1, expect: int | None = None) -> None:
    ctl = win.studio
    before = child(win, "takesList").count()
    child(win, "promptEdit").setPlainText(prompt)
    child(win, "secondsSpin").setValue(seconds)
    child(win, "variationsSpin").setValue(variations)
    if seed is not None:
        child(win, "seedEdit").setText(str(seed))
        child(win, "seedLockCheck").setChecked(True)
    child(win, "generateButton").click()
    target = before + (variations if expect is None else expect)
    qtbot.waitUntil(lambda: child(win, "takesList").count() >= target and not ctl.gpu.running,
                    timeout=WAIT_MS)


def test_object_names_are_stable(window):
    for name in ("promptEdit", "negativePromptEdit", "modelCombo", "decoderCombo",
                 "precisionCombo", "secondsSpin", "stepsSpin", "cfgSpin", "seedEdit",
                 "seedLockCheck", "generateButton", "rerollButton", "variationsSpin",
                 "cancelButton", "takesList", "waveformView", "spectrogramView", "latentView",
                 "playButton", "loopCheck", "initNoiseSlider", "exportButton", "statusBar"):
        child(window, name)
    assert not window.isVisible()


def test_demo_is_labelled_and_negative_prompt_explained(window):
    combo = child(window, "modelCombo")
    labels = [combo.itemText(i) for i in range(combo.count())]
    assert "Demo (procedural, not Stable Audio 3)" in labels
    assert combo.currentData() == "demo"  # the only runnable set on a CPU machine
    sm_sfx = combo.findData("sm-sfx")
    assert not combo.model().item(sm_sfx).isEnabled()
    assert combo.itemData(sm_sfx, 3)  # ToolTipRole: the reason it cannot run
    negative = child(window, "negativePromptEdit")
    assert not negative.isEnabled()
    child(window, "cfgSpin").setValue(3.0)
    assert negative.isEnabled()


def test_generate_shows_take_waveform_and_seed(qtbot, window):
    generate(qtbot, window, "coin pickup, bright, short", seconds=1.0, seed=7)
    take = window.studio.session.current_take()
    assert take.seed == 7 and take.pcm.shape == (44100, 2)
    held = child(window, "waveformView").samples()
    assert held.shape == (44100, 2)
    assert np.allclose(held, take.pcm / 32768.0, atol=1e-4) or \
        np.allclose(held, take.pcm / 32767.0, atol=1e-4)
    assert "7" in child(window, "seedUsedLabel").text()
    assert child(window, "seedEdit").text() == "7"
    assert child(window, "latentView").image() is not None


def test_variations_have_consecutive_seeds(qtbot, window):
    generate(qtbot, window, "laser", seconds=0.5, seed=100, variations=4)
    seeds = [t.seed for t in window.studio.session.takes.values()]
    assert seeds == [100, 101, 102, 103]
    pcms = [t.pcm for t in window.studio.session.takes.values()]
    assert not np.array_equal(pcms[0], pcms[1])


def test_dragged_take_is_one_existing_wav_equal_to_the_take(qtbot, window):
    generate(qtbot, window, "bell", seconds=0.7, seed=3)
    lst = child(window, "takesList")
    item = lst.currentItem()
    data = lst.mimeData([item])
    urls = data.urls()
    assert len(urls) == 1 and urls[0].isLocalFile()
    path = Path(urls[0].toLocalFile())
    assert path.is_file() and path.name == "bell_01.wav"  # by the export name template
    audio, rate = sf.read(path, dtype="int16")
    assert rate == 44100
    np.testing.assert_array_equal(audio, window.studio.session.current_take().pcm)
    assert path.with_suffix(".json").is_file()
    again = lst.mimeData([item]).urls()[0].toLocalFile()
    assert again == str(path) and path.is_file()  # reused, never deleted


def test_save_as_formats(qtbot, window, tmp_path):
    generate(qtbot, window, "whoosh", seconds=0.5, seed=4)
    take = window.studio.session.current_take()
    save_take = window.studio.export_controller.save_take
    for name, subtype in (("a.wav", "PCM_16"), ("b.flac", "PCM_24"), ("c.ogg", "VORBIS")):
        written = save_take(take, tmp_path / name)
        assert written is not None and sf.info(written).subtype == subtype
        assert written.with_suffix(".json").is_file()
    w24 = save_take(take, tmp_path / "d.wav", "wav24")
    assert sf.info(w24).subtype == "PCM_24"
    bad = save_take(take, tmp_path / "a.wav" / "e.wav")  # a file, not a folder
    message = child(window, "statusBar").currentMessage()
    assert bad is None and "choose an existing folder" in message and "\n" not in message


def test_drop_flac_as_init_then_inpaint_one_span(qtbot, window, tmp_path):
    t = np.arange(int(3.0 * 48000)) / 48000
    stereo = np.stack([0.4 * np.sin(2 * np.pi * 330 * t), 0.3 * np.sin(2 * np.pi * 550 * t)], 1)
    flac = tmp_path / "init.flac"
    sf.write(flac, stereo, 48000, subtype="PCM_24")
    child(window, "waveformView").fileDropped.emit(str(flac))
    ctl = window.studio
    assert ctl.session.init_take is not None and ctl.session.init_take.model == "imported"
    init = ctl.session.init_take.pcm.astype(np.float32) / 32767
    child(window, "spanModeCheck").setChecked(True)
    child(window, "waveformView").set_spans([(1.0, 1.6)])
    assert ctl.session.spans, "the painted span reached the controller"
    start, end = ctl.session.spans[0]
    assert round(start * 44100) % SAMPLES_PER_LATENT == 0  # snapped to the latent grid
    generate(qtbot, window, "explosion", seconds=3.0, seed=5)
    take = ctl.session.current_take()
    assert take.result.request.mode == "inpaint"
    out = take.pcm.astype(np.float32) / 32767
    inside = np.zeros(len(out), bool)
    inside[int(start * 44100): int(end * 44100)] = True
    for ch in range(2):
        assert np.corrcoef(out[~inside, ch], init[~inside, ch])[0, 1] > 0.99
    assert not np.allclose(out[inside], init[inside], atol=0.05)


def test_use_take_as_init_runs_audio_to_audio(qtbot, window):
    generate(qtbot, window, "rain", seconds=1.0, seed=2)
    child(window, "useAsInitButton").click()
    child(window, "initNoiseSlider").setValue(30)
    generate(qtbot, window, "bell", seconds=1.0, seed=2)
    take = window.studio.session.current_take()
    assert take.result.request.mode == "a2a"
    assert take.result.request.init_noise_level == pytest.approx(0.3)


def test_bad_input_is_one_sentence_and_keeps_takes(qtbot, window):
    generate(qtbot, window, "beep", seconds=0.5, seed=1)
    child(window, "seedEdit").setText("not-a-seed")
    child(window, "generateButton").click()
    message = child(window, "statusBar").currentMessage()
    assert "not a whole number" in message and "\n" not in message
    assert child(window, "takesList").count() == 1


def test_cancel_keeps_finished_takes(qtbot, window):
    ctl = window.studio
    seen = []
    ctl.gpu.progress.connect(lambda p: isinstance(p.value, GeneratedTake)
                             and (seen.append(p.value), ctl.generation_controller.cancel()))
    child(window, "stepsSpin").setValue(50)
    child(window, "promptEdit").setPlainText("drone")
    child(window, "secondsSpin").setValue(60.0)
    child(window, "variationsSpin").setValue(4)
    child(window, "generateButton").click()
    assert child(window, "cancelButton").isEnabled()
    qtbot.waitUntil(lambda: not ctl.gpu.running, timeout=WAIT_MS)
    count = child(window, "takesList").count()
    assert 1 <= count < 4
    assert "Cancel" in child(window, "statusBar").currentMessage() or count == len(seen)
    assert child(window, "generateButton").isEnabled()


def test_no_audio_device_disables_playback_only(qtbot, monkeypatch):
    import sounddevice

    from app import build_main_window

    def no_devices(*args, **kwargs):
        raise sounddevice.PortAudioError("no devices")

    monkeypatch.setattr(sounddevice, "query_devices", no_devices)
    win = build_main_window()
    qtbot.addWidget(win)
    try:
        # the output is looked up once the window has started, off the GUI thread
        qtbot.waitUntil(lambda: not child(win, "playButton").isEnabled(), timeout=WAIT_MS)
        assert "audio" in child(win, "playButton").toolTip().lower()
        generate(qtbot, win, "coin", seconds=0.5, seed=9)
        assert child(win, "takesList").count() == 1
    finally:
        win.studio.shutdown()


def test_up_down_switches_takes_and_keeps_position(qtbot, window):
    generate(qtbot, window, "engine", seconds=2.0, seed=11, variations=2)
    ctl = window.studio
    lst = child(window, "takesList")
    lst.setCurrentRow(0)
    if ctl.player.available:
        ctl.player.seek(1.25)
    lst.setCurrentRow(1)
    assert ctl.session.current_take().seed == 12
    if ctl.player.available:
        assert ctl.player.position_seconds == pytest.approx(1.25, abs=0.05)


def test_real_playback_through_the_default_device(qtbot, window):
    ctl = window.studio
    if not ctl.player.available:
        pytest.skip(f"no audio output device here: {ctl.player.unavailable_reason}")
    child(window, "autoplayCheck").setChecked(False)
    generate(qtbot, window, "drone", seconds=2.0, seed=1)
    child(window, "playButton").click()
    start = time.monotonic()
    qtbot.waitUntil(lambda: ctl.player.position_seconds > 0.3, timeout=5000)
    assert time.monotonic() - start < 4.0
    assert child(window, "playButton").text() == "Pause"
    child(window, "playButton").click()
    assert not ctl.player.playing


def test_take_export_name_helpers():
    from engines.delivery.names import slug

    assert slug("Coin pickup, BRIGHT & short!") == "coin-pickup-bright-short"
    assert slug("雷") == "雷"  # a script with no ASCII form keeps its letters
    assert slug("🔔🔔") == "take"
    pcm = np.zeros((441, 2), np.int16)
    assert Take(prompt="x", pcm=pcm, seed=1, model="demo").seconds == pytest.approx(0.01)
