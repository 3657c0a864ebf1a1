"""Live audition and the audio output show their state at a glance (issue 34): the Live switch
looks lit while on (the theme's :checked style) and the status bar carries a LIVE word; without
an audio output the transport says so in a visible line and the status bar says it once,
instead of "Ready". (No output device is listed to the window, whatever this machine has: CI
plays into a PulseAudio null sink.)"""

from __future__ import annotations

import pytest
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication

from app.common.theme import COLORS
from tests.app.test_playback import _output_device
from tests.browser_support import show_at
from tests.gui_support import child

WAIT_MS = 60_000


def share_of(widget, colour: str, tolerance: int = 40) -> float:
    """The share of `widget`'s painted pixels within `tolerance` of `colour`."""
    image = widget.grab().toImage()
    target = QColor(colour)
    near = total = 0
    for y in range(0, image.height(), 2):
        for x in range(0, image.width(), 2):
            pixel = image.pixelColor(x, y)
            total += 1
            near += (abs(pixel.red() - target.red()) + abs(pixel.green() - target.green())
                     + abs(pixel.blue() - target.blue())) <= tolerance
    return near / max(total, 1)


def test_the_live_switch_and_the_status_bar_show_live_at_a_glance(qtbot, window):
    show_at(qtbot, window, (1366, 768))
    toggle, word = child(window, "liveToggle"), child(window, "liveStateLabel")
    child(window, "promptEdit").setPlainText("rain on a tin roof")
    off_share = share_of(toggle, COLORS["live"])
    assert not word.isVisible()
    toggle.click()
    QApplication.processEvents()
    assert window.studio.live_controller.live and toggle.isChecked()
    assert word.isVisible() and word.text() == "LIVE"
    on_share = share_of(toggle, COLORS["live"])
    assert off_share < 0.05 < 0.5 < on_share  # lit: mostly the live colour, unlike off
    assert share_of(word, COLORS["live"]) > 0.5
    toggle.click()
    QApplication.processEvents()
    assert not window.studio.live_controller.live and not word.isVisible()
    assert share_of(toggle, COLORS["live"]) < 0.05


def test_the_live_word_follows_a_start_that_failed(qtbot, window):
    show_at(qtbot, window, (1280, 720))
    child(window, "seedEdit").setText("not a seed")
    child(window, "seedLockCheck").setChecked(True)
    child(window, "liveToggle").click()  # refused in one sentence: a seed must be a number
    QApplication.processEvents()
    assert not child(window, "liveToggle").isChecked()
    assert not child(window, "liveStateLabel").isVisible()


@pytest.fixture
def no_output_device(monkeypatch):
    """PortAudio lists one device, with no outputs (asked for before the window is built)."""
    import sounddevice as sd

    def input_only(device=None, kind=None):
        if device is None and kind is None:
            return sd.DeviceList([_output_device(0, outputs=0)])
        raise sd.PortAudioError("Error querying device -1")

    monkeypatch.setattr(sd, "query_devices", input_only)


def test_no_audio_device_is_said_in_the_transport_and_once_in_the_status_bar(
        qtbot, no_output_device, window):
    show_at(qtbot, window, (1366, 768))
    line = child(window, "noAudioLabel")
    qtbot.waitUntil(line.isVisible, timeout=WAIT_MS)
    assert line.text() == "No audio output: playback is off"
    assert line.toolTip().startswith("No audio output device was found")
    status = window.statusBar().currentMessage()
    assert status.startswith("No audio output device was found") and "Ready" not in status
    assert not child(window, "playButton").isEnabled()
    for _ in range(3):  # Space, or the menu's Play, asks again: said once all the same
        window.studio.takes_controller.toggle_play()
    said = [text for text in window.studio.notifier.history
            if text.startswith("No audio output device")]
    assert len(said) == 1


def test_a_notice_never_hides_the_sentence_just_shown(qtbot, window):
    notifier = window.studio.notifier
    notifier.error("Could not save the take: the disk is full; free some space.")
    notifier.notice("No audio output device was found; playback is off.")
    assert window.statusBar().currentMessage().startswith("Could not save the take")
    notifier.greet("Ready.")
    notifier.notice("No audio output device was found; playback is off.")
    assert window.statusBar().currentMessage().startswith("No audio output device")
