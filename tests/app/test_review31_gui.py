"""Issue 31 tried in the window as a new game sound designer would (offscreen, the real window):
what the review found and what it holds.

- The Library inspector's four UCS label edits say what they are beside them: a placeholder
  goes away once an edit holds text, and four unnamed boxes of "FOOTGrvl", "Gravel Step",
  "JD", "SA3" do not say which is the creator and which the source.
- The window's variations, dragged out under a template without {n}, are numbered (01, 02,
  03) as the command line numbers them, not `name`, `name_2`.
- A library the previous release wrote (tests/fixtures/library_v3) opens in the window while
  the command line reads and relabels it at the same moment: both work, nothing is lost, and
  the window shows the label the command line gave.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtWidgets import QLabel

from tests.app.test_gui import WAIT_MS, child, generate
from tests.app.test_library_labels_gui import select_seed
from tests.cli_runner import MAIN

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "library_v3"
CAPTIONS = {"labelCategoryEdit": "CatID", "labelFxNameEdit": "FX name",
            "labelCreatorEdit": "Creator", "labelSourceEdit": "Source"}


def open_library_page(qtbot, win) -> None:
    child(win, "centreTabs").setCurrentIndex(1)
    qtbot.waitUntil(lambda: win.findChild(object, "libraryView") is not None, timeout=WAIT_MS)


def test_each_label_edit_is_captioned_beside_it(qtbot, window):
    generate(qtbot, window, "footstep on gravel", seconds=0.5, seed=5)
    open_library_page(qtbot, window)
    select_seed(window, 5)
    for name, text in (("labelCategoryEdit", "FOOTGrvl"), ("labelFxNameEdit", "Gravel Step"),
                       ("labelCreatorEdit", "JD"), ("labelSourceEdit", "SA3")):
        child(window, name).setText(text)
    captions = {label.buddy().objectName(): label.text()
                for label in window.findChildren(QLabel) if label.buddy() is not None}
    assert {name: captions.get(name) for name in CAPTIONS} == CAPTIONS


def test_window_variations_under_a_template_without_n_are_numbered(qtbot, window):
    generate(qtbot, window, "ui click, soft", seconds=0.3, seed=11, variations=3)
    template = child(window, "nameTemplateEdit")
    template.setText("{name}")
    template.editingFinished.emit()
    studio = window.studio
    takes = sorted((studio.session.take_for(child(window, "takesList").item(row))
                    for row in range(3)), key=lambda take: take.seed)
    names = [studio.export_controller.file_for(take).name for take in takes]
    assert names == [f"ui-click-soft_{n:02}.wav" for n in (1, 2, 3)]


@pytest.fixture
def old_library(home: Path):
    """The previous release's library as this data folder's, with two command-line processes
    started on it (a relabel and a listing) just before the window opens on it too."""
    shutil.copytree(FIXTURE, home / "library")
    env = {**os.environ, "SA3_STUDIO_HOME": str(home)}
    commands = (["library", "label", "2", "--fx-name", "Gravel Step"], ["library", "list"])
    running = [subprocess.Popen([sys.executable, str(MAIN), *args], env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
               for args in commands]
    yield running
    for process in running:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_an_old_library_opens_in_the_window_while_the_cli_relabels_it(qtbot, old_library,
                                                                       window):
    open_library_page(qtbot, window)
    said = []
    for process in old_library:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        assert "Traceback" not in err
        said.append(out)
    assert "take #2 labels: FX name 'Gravel Step'" in said[0]
    assert "4 of 4 takes shown" in said[1]
    library = window.studio.library
    assert library.get(2).labels["fx_name"] == "Gravel Step"
    assert library.get(1).rating == 4 and library.get(1).favourite  # nothing was lost
    window.studio.library_controller.refresh_library()
    qtbot.waitUntil(lambda: len(child(window, "libraryView").model().records) == 4,
                    timeout=WAIT_MS)
    select_seed(window, 101)
    qtbot.waitUntil(lambda: child(window, "labelFxNameEdit").text() == "Gravel Step",
                    timeout=WAIT_MS)
