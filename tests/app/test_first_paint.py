"""The window paints first and loads the rest after (issue 32): what a fresh process has not
loaded when the window's first frame is painted, what it has once it settled, the audio output
looked up off the GUI thread, and the first take in a new data folder while the demo set is
being built in the background (one build, never on the GUI thread)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.browser_support import open_window
from tests.conftest import repo_pythonpath
from tests.gui_support import child

REPO = Path(__file__).resolve().parents[2]
WAIT_MS = 60_000

# Modules of what is not on screen when the window opens: the Library page (local and team
# sources), the Models dialog, the audio output (sounddevice starts PortAudio), the scipy
# filters finishing no longer needs for a take, the library's export part (an export needs it).
NOT_BEFORE_FIRST_PAINT = ("app.library.panel", "app.library.controller", "app.team.controller",
                          "app.team.panel", "engines.team.service", "app.models.dialog",
                          "sounddevice", "scipy.signal", "pyloudnorm", "onnx",
                          "engines.store.export_plan")
LOADED_ONCE_SETTLED = ("app.library.panel", "app.library.controller", "app.team.controller",
                       "sounddevice")

FIRST_PAINT = """
import json, sys
from PySide6.QtWidgets import QApplication
from app import build_main_window

app = QApplication([])
window = build_main_window()
window.show()
app.processEvents()  # the first frame is painted here
painted = window.was_shown and not window.library_page_built()
before = [name for name in json.loads(sys.argv[1]) if name in sys.modules]
while not window.studio.after_paint.settled:
    app.processEvents()
after = [name for name in json.loads(sys.argv[2]) if name in sys.modules]
found = window.findChild(object, "libraryPanel") is not None
window.studio.shutdown()
print(json.dumps({"painted": painted, "before": before, "after": after, "found": found}))
"""


@pytest.mark.slow  # a fresh process: what the window imports is only seen from the start
def test_first_paint_loads_nothing_that_is_not_on_screen(home: Path, models: Path) -> None:
    shutil.copytree(models, home / "models", dirs_exist_ok=True)  # no demo build meanwhile
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "SA3_STUDIO_HOME": str(home),
           "PYTHONPATH": repo_pythonpath()}
    done = subprocess.run([sys.executable, "-c", FIRST_PAINT, json.dumps(NOT_BEFORE_FIRST_PAINT),
                           json.dumps(LOADED_ONCE_SETTLED)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["painted"]  # the Library page was not built before the first frame
    assert seen["before"] == [], f"loaded before the window's first paint: {seen['before']}"
    # ... and it is there once the window has settled, found by its object name
    assert seen["after"] == list(LOADED_ONCE_SETTLED)
    assert seen["found"]


def test_the_library_page_is_built_when_something_asks_for_it(qtbot, home: Path,
                                                             models: Path) -> None:
    from app import build_main_window

    shutil.copytree(models, home / "models", dirs_exist_ok=True)
    win = build_main_window()
    qtbot.addWidget(win)
    try:
        assert not win.library_page_built()  # the event loop has not turned yet
        assert win.findChild(object, "libraryView") is None
        win.show_library()  # Ctrl+B, Find similar: at once, not after the event loop turns
        assert win.library_page_built()
        tabs = child(win, "centreTabs")
        assert tabs.currentWidget() is win.library_sources
        assert tabs.tabText(tabs.currentIndex()) == "Library"
        assert child(win, "librarySources") is win.library_sources
        models_filter = child(win, "libraryModelFilter")  # its controller filled it
        assert models_filter.findData("demo") >= 0
        assert win.findChild(object, "libraryPlaceholder") is None or \
            tabs.indexOf(win.findChild(object, "libraryPlaceholder")) < 0
    finally:
        win.studio.shutdown()


def test_the_audio_output_is_looked_up_off_the_gui_thread(monkeypatch) -> None:
    from app.common import playback

    calls = []

    def slow_lookup(device=None):
        calls.append(threading.current_thread())
        time.sleep(0.2)  # PortAudio probing every device
        return None, "No audio output device was found (test); playback is off."

    monkeypatch.setattr(playback, "find_output_device", slow_lookup)
    player = playback.Player()
    player.look_up_in_background()
    assert not player.known  # still looking: nothing waited for it here
    assert player.available is False  # reading it waits for that one look-up ...
    assert player.known
    assert calls == [calls[0]] and calls[0] is not threading.main_thread()  # ... not a second


def test_first_take_in_a_new_data_folder_waits_for_the_background_build(qtbot, home, monkeypatch):
    from engines import demo

    real_ensure, real_build = demo.ensure_demo_models, demo._build_in_own_process
    asked: list[str] = []  # threads that asked for the demo set
    builds: list[str] = []  # threads that built it
    started, release = threading.Event(), threading.Event()

    def ensure(root):
        asked.append(threading.current_thread().name)
        return real_ensure(root)

    def build(root):
        builds.append(threading.current_thread().name)
        started.set()
        release.wait(30)  # held until the take has asked for the set too
        real_build(root)

    monkeypatch.setattr(demo, "ensure_demo_models", ensure)
    monkeypatch.setattr(demo, "_build_in_own_process", build)
    win = open_window(qtbot)
    try:
        win.show()
        state = child(win, "demoSetState")
        qtbot.waitUntil(started.is_set, timeout=WAIT_MS)  # after the first paint, unasked
        assert state.isVisible() and state.text().startswith("Preparing the demo model set")
        child(win, "promptEdit").setPlainText("coin")
        child(win, "secondsSpin").setValue(0.5)
        child(win, "generateButton").click()
        qtbot.waitUntil(lambda: len(asked) == 2, timeout=WAIT_MS)  # the take's worker asks
        qtbot.wait(200)
        assert child(win, "takesList").count() == 0  # it waits for the build under way
        release.set()
        qtbot.waitUntil(lambda: child(win, "takesList").count() == 1
                        and not win.studio.gpu.running, timeout=WAIT_MS)
        qtbot.waitUntil(lambda: state.text() == "The demo model set is ready.", timeout=WAIT_MS)
        assert len(builds) == 1, builds  # one build, the background one
        assert threading.main_thread().name not in asked + builds
        assert demo.is_current(home / "models")
    finally:
        release.set()
        win.studio.shutdown()
