"""Live audition in the real window (issue 23), on the demo set: the Live switch, typing and knob
changes each play a render with the newest settings; stale renders are never played; Keep adds
exactly one take; live renders stay out of the session and the library unless kept.

The player gets a null output stream whose thread pulls blocks at the real rate, as a sound
card would, so "played" means the audio callback really copied the render's samples.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from app.common.gpu_service import make_generator
from app.common.playback import Player
from app.shell.main_window import MainWindow
from app.shell.shortcuts_sheet import show_shortcuts_sheet
from app.shell.studio import Studio
from tests.gui_support import child

WAIT_MS = 60_000


class RealRateStream:
    """sounddevice.OutputStream's shape: a thread calls the callback a block at a time, at the
    stream's rate, and keeps the last block it was given."""

    def __init__(self, *, samplerate, blocksize, channels, dtype, callback, **_ignored) -> None:
        self._callback = callback
        self._period = blocksize / samplerate
        self.block = np.zeros((blocksize, channels), dtype=dtype)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        due = time.perf_counter()
        while not self._stop.is_set():
            self._callback(self.block, len(self.block), None, None)
            due += self._period
            self._stop.wait(max(due - time.perf_counter(), 0.0))

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    close = stop


class SpyPlayer(Player):
    """A player that remembers every array it was asked to play."""

    def __init__(self) -> None:
        super().__init__(stream_factory=RealRateStream)
        self.given: list[np.ndarray] = []

    def load(self, audio, keep_position: bool = True) -> None:
        self.given.append(audio)
        super().load(audio, keep_position)

    def crossfade_to(self, audio, fade_ms: float = 20.0) -> int:
        self.given.append(audio)
        return super().crossfade_to(audio, fade_ms)


class GatedGenerator:
    """The real Generator, except that a render whose prompt is in `hold` finishes and then
    waits for `release` before it returns: a render that goes stale while it runs."""

    def __init__(self, hold: set[str], release: threading.Event) -> None:
        self._real = make_generator()
        self.hold = hold
        self.release = release
        self.results: dict[str, object] = {}

    def generate(self, request, progress=None, cancel=None):
        if request.prompt in self.hold:
            result = self._real.generate(request, progress, None)  # runs to its end
            self.results[request.prompt] = result
            assert self.release.wait(30)
            return result
        return self._real.generate(request, progress, cancel)

    def __getattr__(self, name):
        return getattr(self._real, name)


def open_window(qtbot, make=make_generator) -> MainWindow:
    win = MainWindow()
    win.studio = Studio(win, player=SpyPlayer(), make_generator=make)
    qtbot.addWidget(win)
    return win


@pytest.fixture
def live_window(qtbot, home):
    win = open_window(qtbot)
    panel = win.generation_panel
    panel.prompt_edit.setPlainText("rain on a tin roof")
    panel.seconds_spin.setValue(1.0)
    yield win
    win.studio.shutdown()


def heard_count(win) -> int:
    return len(win.studio.live_controller.history)


def wait_heard(qtbot, win, count: int) -> None:
    qtbot.waitUntil(lambda: heard_count(win) >= count, timeout=WAIT_MS)


def wait_played(qtbot, win, check) -> object:
    """Wait until the live slot holds a render whose request satisfies check(request) and
    its first sample was heard; return that render."""
    live = win.studio.live_controller

    def heard_and_matches() -> bool:
        return live.current is not None and bool(live.history) and \
            live.history[-1].serial == live.current_serial and \
            check(live.current.result.request)

    qtbot.waitUntil(heard_and_matches, timeout=WAIT_MS)
    return live.current


def _pending(live) -> int:
    stats = live.scheduler.stats()
    return int(stats.pending) + int(stats.in_flight)


def assert_playing(win, render) -> None:
    """The player plays exactly that render's samples (int16 / 32768), looping."""
    player = win.studio.player
    np.testing.assert_array_equal(player._audio, render.result.pcm / np.float32(32768))
    assert player.playing and player.loop


def library_count(win) -> int:
    return win.studio.library.count()


def test_live_locks_the_seed_says_so_and_plays_a_render(qtbot, live_window):
    win = live_window
    panel = win.generation_panel
    panel.seed_edit.setText("")
    assert not panel.seed_lock.isChecked()
    child(win, "liveToggle").click()
    seed = int(panel.seed_edit.text())
    assert panel.seed_lock.isChecked()
    assert f"seed is locked at {seed}" in win.statusBar().currentMessage()
    wait_heard(qtbot, win, 1)
    live = win.studio.live_controller
    assert live.current.result.seed == seed
    assert live.current.result.request.prompt == "rain on a tin roof"
    assert_playing(win, live.current)
    heard = live.history[-1]
    assert heard.heard_at is not None and heard.heard_at >= heard.finished_at
    assert "ms after your change" in child(win, "liveLatencyLabel").text()
    assert child(win, "keepLiveButton").isEnabled()
    child(win, "liveToggle").click()  # off: the seed lock is as the user had it
    assert not panel.seed_lock.isChecked() and not child(win, "keepLiveButton").isEnabled()


def test_typing_plays_the_newest_prompt_once_typing_pauses(qtbot, live_window):
    win = live_window
    child(win, "liveToggle").click()
    wait_heard(qtbot, win, 1)
    prompt = child(win, "promptEdit")
    prompt.moveCursor(prompt.textCursor().MoveOperation.End)
    QTest.keyClicks(prompt, ", thunder", delay=30)  # faster than the debounce: one change
    render = wait_played(qtbot, win, lambda r: r.prompt == "rain on a tin roof, thunder")
    assert_playing(win, render)
    stats = win.studio.live_controller.scheduler.stats()
    assert stats.submitted < 1 + len(", thunder")  # the debounce merged keystrokes


def test_each_knob_change_plays_a_render_with_its_value(qtbot, live_window):
    win = live_window
    child(win, "liveToggle").click()
    wait_heard(qtbot, win, 1)
    seed = win.studio.live_controller.current.result.seed
    child(win, "cfgSpin").setValue(3.5)
    render = wait_played(qtbot, win, lambda r: r.cfg == 3.5)
    assert_playing(win, render)
    child(win, "negativePromptEdit").setText("hiss")
    render = wait_played(qtbot, win, lambda r: r.negative_prompt == "hiss")
    child(win, "stepsSpin").setValue(5)
    render = wait_played(qtbot, win, lambda r: r.steps == 5)
    child(win, "secondsSpin").setValue(0.5)
    render = wait_played(qtbot, win, lambda r: r.seconds == 0.5)
    request = render.result.request
    assert (request.cfg, request.negative_prompt, request.steps, render.result.seed) == \
        (3.5, "hiss", 5, seed)  # every change kept, the seed never moved
    assert_playing(win, render)
    assert win.studio.player.duration_seconds == pytest.approx(render.result.seconds)


def test_a_render_that_went_stale_is_never_played(qtbot, home):
    release = threading.Event()
    made: list[GatedGenerator] = []

    def make():
        made.append(GatedGenerator({"slow first"}, release))
        return made[-1]

    win = open_window(qtbot, make)
    try:
        panel = win.generation_panel
        panel.seconds_spin.setValue(1.0)
        panel.prompt_edit.setPlainText("slow first")
        child(win, "liveToggle").click()
        qtbot.waitUntil(lambda: bool(made) and "slow first" in made[0].results, timeout=WAIT_MS)
        panel.prompt_edit.setPlainText("second thought")  # while the first one waits
        live = win.studio.live_controller
        qtbot.waitUntil(lambda: live.scheduler.stats().pending, timeout=WAIT_MS)
        release.set()
        render = wait_played(qtbot, win, lambda r: r.prompt == "second thought")
        stale = made[0].results["slow first"]
        assert all(given is not stale.pcm for given in win.studio.player.given)
        assert live.scheduler.stats().dropped == 1 and len(live.history) == 1
        assert_playing(win, render)
    finally:
        release.set()
        win.studio.shutdown()


def test_keep_adds_exactly_one_take_with_the_live_settings_and_seed(qtbot, live_window):
    win = live_window
    child(win, "cfgSpin").setValue(2.5)
    child(win, "liveToggle").click()
    render = wait_played(qtbot, win, lambda r: r.cfg == 2.5)
    prompt = child(win, "promptEdit")
    QTest.keyClick(prompt, Qt.Key.Key_Return)  # Enter keeps, and types no newline
    assert prompt.toPlainText() == "rain on a tin roof"
    takes = child(win, "takesList")
    qtbot.waitUntil(lambda: takes.count() == 1, timeout=WAIT_MS)
    child(win, "keepLiveButton").click()  # the same live take again: refused
    QTest.keyClick(prompt, Qt.Key.Key_Enter)
    qtbot.wait(300)
    assert takes.count() == 1 and library_count(win) == 1
    take = win.studio.session.current_take()
    assert take.result is render.result and take.seed == render.result.seed
    record = win.studio.library.get(take.library_id)
    assert (record.prompt, record.seed) == ("rain on a tin roof", render.result.seed)
    assert (record.cfg, record.seconds, record.steps) == (2.5, 1.0, render.result.request.steps)
    assert record.audio_path.is_file()
    assert "already" in win.statusBar().currentMessage()


def test_live_renders_never_enter_the_session_or_the_library(qtbot, live_window):
    win = live_window
    child(win, "liveToggle").click()
    wait_heard(qtbot, win, 1)
    for steps in (4, 6):
        child(win, "stepsSpin").setValue(steps)
        wait_played(qtbot, win, lambda r, steps=steps: r.steps == steps)
    child(win, "liveToggle").click()
    qtbot.wait(200)
    assert heard_count(win) >= 3
    assert child(win, "takesList").count() == 0 and library_count(win) == 0


def test_nothing_plays_after_live_is_switched_off(qtbot, live_window):
    win = live_window
    child(win, "liveToggle").click()
    wait_heard(qtbot, win, 1)
    child(win, "stepsSpin").setValue(3)
    qtbot.wait(50)  # the change is on its way to the worker
    child(win, "liveToggle").click()
    given = len(win.studio.player.given)
    live = win.studio.live_controller
    qtbot.waitUntil(lambda: not _pending(live), timeout=WAIT_MS)
    qtbot.wait(100)
    assert len(win.studio.player.given) == given and live.current is None


def test_the_shortcut_sheet_lists_live_and_keep(qtbot, live_window):
    win = live_window
    rows = show_shortcuts_sheet(win, win.menus.menus).rows()
    does = {keys: what for keys, what, _menu in rows}
    assert does["Ctrl+L"].startswith("Live audition")
    assert does["Enter"] == "Keep the live take"
    win.menus.live_action.trigger()
    assert child(win, "liveToggle").isChecked()


class SlowGenerator:
    """The real Generator, taking at least `seconds` a render: a slow backend or a long take."""

    def __init__(self, seconds: float) -> None:
        self._real = make_generator()
        self.seconds = seconds
        self.prompts: list[str] = []

    def generate(self, request, progress=None, cancel=None):
        began = time.perf_counter()
        result = self._real.generate(request, progress, cancel)
        time.sleep(max(0.0, self.seconds - (time.perf_counter() - began)))
        self.prompts.append(request.prompt)
        return result

    def __getattr__(self, name):
        return getattr(self._real, name)


def test_live_slower_than_typing_says_so_and_renders_on_pauses_only(qtbot, home):
    made: list[SlowGenerator] = []
    win = open_window(qtbot, lambda: made.append(SlowGenerator(0.5)) or made[-1])
    try:
        panel = win.generation_panel
        panel.seconds_spin.setValue(1.0)
        panel.prompt_edit.setPlainText("hum")
        child(win, "liveToggle").click()
        for steps in (7, 6, 5):  # three renders of 0.5 s: over two debounces of 200 ms
            child(win, "stepsSpin").setValue(steps)
            wait_played(qtbot, win, lambda r, steps=steps: r.steps == steps)
        live = win.studio.live_controller
        assert live.slow
        label = child(win, "liveLatencyLabel").text()
        assert "slower than typing" in label and "ms after your change" in label
        rendered = len(made[0].prompts)
        prompt = child(win, "promptEdit")
        prompt.moveCursor(prompt.textCursor().MoveOperation.End)
        for char in " low":  # gaps of 250 ms: pauses for a fast backend, not for this one
            QTest.keyClicks(prompt, char)
            qtbot.wait(250)
        render = wait_played(qtbot, win, lambda r: r.prompt == "hum low")
        assert made[0].prompts[rendered:] == ["hum low"]  # one render, after the pause
        assert_playing(win, render)
    finally:
        win.studio.shutdown()


class SilentPlayer(Player):
    """A machine without an audio output."""

    @property
    def available(self) -> bool:
        return False

    @property
    def unavailable_reason(self) -> str:
        return "No audio output device was found (test); playback is off, everything else works."


def test_live_without_an_audio_output_still_renders_and_shows(qtbot, home):
    win = MainWindow()
    win.studio = Studio(win, player=SilentPlayer())
    qtbot.addWidget(win)
    try:
        win.generation_panel.prompt_edit.setPlainText("wind")
        child(win, "liveToggle").click()
        wait_heard(qtbot, win, 1)
        live = win.studio.live_controller
        assert live.history[-1].heard_at is None
        assert "no audio output" in child(win, "liveLatencyLabel").text()
        qtbot.waitUntil(lambda: live.views.shown is live.current, timeout=WAIT_MS)
        assert child(win, "keepLiveButton").isEnabled()
    finally:
        win.studio.shutdown()
