"""Closing the window ends every thread and pool it started (issue 24): the GPU worker, the
Models dialog's download thread, the finishing and thumbnail pools, the spectrogram's
background analysis.

Qt aborts the whole process with "QThread: Destroyed while thread ... is still running" when a
QThread dies before its thread, so the window is opened and closed in a subprocess, as a user
runs it (app.run_gui), and its stderr and exit status are read; a second test looks at the
threads themselves after a close in this process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import QThread, QThreadPool

import engines.models.download as download
from app.common.background_jobs import BackgroundJobs
from engines.errors import StudioError
from tests.app.test_gui import generate
from tests.gui_support import child

REPO_ROOT = Path(__file__).resolve().parents[2]
RUN_LIMIT_S = 120  # a clean close takes seconds; a hang (a dialog opened after close) forever

# Opens the window with app.run_gui and ends it the way the scenario (argv[1]) says.
_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    import engines.models.download as download
    from app import run_gui
    from engines.errors import StudioError

    scenario = sys.argv[1]
    qt = QApplication([sys.argv[0]])

    def window():
        return next((w for w in qt.topLevelWidgets() if w.objectName() == "mainWindow"), None)

    def when(ready, then, tries=600):
        # poll every 20 ms until ready() holds, then call then()
        if ready():
            then()
        elif tries:
            QTimer.singleShot(20, lambda: when(ready, then, tries - 1))
        else:
            print("the scenario never got ready", file=sys.stderr)
            qt.exit(3)

    def slow_plan(*_args, **_kwargs):
        time.sleep(6)  # a hub that answers slowly: longer than any fixed wait of the close
        raise StudioError("The hub did not answer.")

    def dialog():
        studio = getattr(window(), "studio", None)
        return studio.models_controller.models_dialog if studio is not None else None

    if scenario == "at-once":  # before the first-run page has opened
        QTimer.singleShot(0, lambda: window().close())
    elif scenario == "downloading":
        download.plan_download = slow_plan

        def ask_and_close():
            dialog().request_plan({"sets": ["small"], "arch": "", "precisions": ["fp16"],
                                   "fmt": "onnx", "models_dir": "."})
            QTimer.singleShot(300, lambda: window().close())

        when(lambda: dialog() is not None and dialog().isVisible(), ask_and_close)
    elif scenario == "generating":
        def generate_and_close():
            window().findChild(object, "promptEdit").setPlainText("door creak")
            window().findChild(object, "generateButton").click()
            window().close()

        when(lambda: dialog() is not None, generate_and_close)
    elif scenario == "loop-quit":  # Ctrl+C in the terminal quits the loop; no close event
        when(lambda: dialog() is not None, qt.quit)
    status = run_gui([])
    print(f"exit status {status}")
    """
)


def _run(scenario: str, home: Path) -> subprocess.CompletedProcess:
    env = {"SA3_STUDIO_HOME": str(home), "QT_QPA_PLATFORM": "offscreen",
           "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO_ROOT),
                                                       os.environ.get("PYTHONPATH")))),
           "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-c", _SCRIPT, scenario], cwd=REPO_ROOT,
                          env={**_base_env(), **env}, capture_output=True, text=True,
                          timeout=RUN_LIMIT_S)


def _base_env() -> dict[str, str]:
    """This environment without SA3 Studio's own settings: the system's (library and font
    paths included - the GPU machine finds Qt's libraries through LD_LIBRARY_PATH)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("SA3_STUDIO")}


@pytest.mark.slow  # the window opened and closed in a real process
@pytest.mark.parametrize("scenario", ["at-once", "downloading", "generating", "loop-quit"])
def test_closing_the_window_leaves_no_thread_running(scenario: str, tmp_path: Path) -> None:
    result = _run(scenario, tmp_path / "home")
    said = result.stdout + result.stderr
    assert "QThread: Destroyed" not in said, said
    assert "Traceback" not in said, said
    assert result.returncode == 0, said
    assert "exit status 0" in result.stdout, said


def test_after_close_every_thread_and_pool_has_ended(qtbot, window, monkeypatch) -> None:
    def no_hub(*_args, **_kwargs):
        raise StudioError("The hub did not answer.")

    monkeypatch.setattr(download, "plan_download", no_hub)
    generate(qtbot, window, "glass", seconds=3.0, seed=1)  # long enough for the pools to work
    dialog = window.studio.models_controller.open_models_dialog()
    dialog.request_plan({"sets": ["small"], "arch": "", "precisions": ["fp16"], "fmt": "onnx",
                         "models_dir": "."})  # starts the download thread
    qtbot.waitUntil(lambda: "did not answer" in dialog.message.text())
    pools = [jobs.pool for jobs in window.findChildren(BackgroundJobs)]
    pools += [jobs.pool for jobs in window.studio.findChildren(BackgroundJobs)]
    threads = window.findChildren(QThread) + [window.studio.gpu.host.thread]
    assert pools and len(threads) >= 2  # the download thread and the GPU worker's
    assert all(thread.isRunning() for thread in threads)
    spectrogram = child(window, "spectrogramView")
    spectrogram.set_audio(window.studio.session.current_take().pcm.repeat(4, axis=0))
    window.close()
    assert not any(thread.isRunning() for thread in threads)
    assert all(pool.activeThreadCount() == 0 for pool in pools)
    assert QThreadPool.globalInstance().activeThreadCount() == 0
    assert not [t for t in threading.enumerate() if t.name == "spectrogram"]
    qtbot.wait(600)  # nothing starts afterwards (the finishing prewarm, delayed thumbnails)
    assert all(pool.activeThreadCount() == 0 for pool in pools)
