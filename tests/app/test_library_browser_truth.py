"""The library panel tells the truth (issue 22), in the real window on the demo model set: a
rename is stored and every derived name follows it (Save As, drag-out, `library list` run as a
real command), the count under a filter, empty details after a refresh, Regenerate that never
silently replaces the init audio, a loop that disables the trim and fade it skips (saying why),
the remembered finishing preset applied to new takes, and the Models window refreshed once the
demo is built."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QFileDialog, QLineEdit, QMessageBox

from app.library.table import PROMPT
from engines.catalog import MODEL_SETS
from tests.app.test_gui import WAIT_MS, generate
from tests.cli_runner import run_cli
from tests.gui_support import child

ROOT = Path(__file__).resolve().parents[2]


def suggested_save_name(win, monkeypatch) -> str:
    asked = []

    def fake_dialog(_parent, _title, suggested, *_args):
        asked.append(suggested)
        return "", ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", fake_dialog)
    win.studio.export_controller.save_as()
    assert asked
    return Path(asked[0]).name


def named(file_name: str, name: str) -> bool:
    """Whether a file name starts with `name` (the name rule may write spaces as hyphens)."""
    return file_name.lower().replace("-", " ").startswith(name.lower())


def dragged(win) -> Path:
    takes = child(win, "takesList")
    return Path(takes.mimeData([takes.currentItem()]).urls()[0].toLocalFile())


def listed_names(home: Path) -> dict[int, str]:
    """`library list --json`, run as a user runs it."""
    done = run_cli(["library", "list", "--json"],
                   env={**os.environ, "SA3_STUDIO_HOME": str(home)}, timeout=120)
    assert done.returncode == 0, done.stderr
    return {entry["id"]: entry["name"] for entry in json.loads(done.stdout)}


def test_a_rename_reaches_every_name_derived_from_it(qtbot, window, home, monkeypatch):
    generate(qtbot, window, "door slam", seconds=0.5, seed=3)
    take = window.studio.session.current_take()
    first = dragged(window)
    assert named(first.name, "door slam")
    child(window, "takesList").currentItem().setText("Vault door")  # F2 in the takes list
    assert window.studio.library.get(take.library_id).name == "Vault door"
    assert named(suggested_save_name(window, monkeypatch), "Vault door")
    second = dragged(window)
    assert named(second.name, "Vault door") and first.is_file()
    assert listed_names(home)[take.library_id] == "Vault door"
    # and from the library page: F2 (the Take menu's Rename) edits the name in place there
    window.show_library()
    view = child(window, "libraryView")
    view.selectRow(0)
    window.studio.window.menus.rename_action.trigger()
    editor = view.viewport().findChild(QLineEdit)  # the in-place editor
    assert view.state() == view.State.EditingState and editor.text() == "Vault door"
    view.model().setData(view.model().index(0, PROMPT), "Iron gate")  # what Enter commits
    assert window.studio.library.get(take.library_id).name == "Iron gate"
    assert take.name == "Iron gate" and child(window, "takesList").item(0).text() == "Iron gate"
    assert named(suggested_save_name(window, monkeypatch), "Iron gate")
    assert named(dragged(window).name, "Iron gate")
    assert listed_names(home)[take.library_id] == "Iron gate"


def test_the_count_says_how_many_of_the_library_a_filter_shows(qtbot, window):
    generate(qtbot, window, "laser zap", seconds=0.5, seed=1, variations=5)
    generate(qtbot, window, "rain on leaves", seconds=0.5, seed=9)
    label = child(window, "libraryCountLabel")
    assert label.text() == "6 takes"
    child(window, "librarySearchEdit").setText("rain")
    assert label.text() == "1 of 6 takes"
    child(window, "libraryRatingFilter").setValue(5)
    assert label.text() == "0 of 6 takes"


def test_details_are_empty_after_a_refresh_leaves_no_take_selected(qtbot, window):
    generate(qtbot, window, "coin", seconds=0.5, seed=1)
    generate(qtbot, window, "bell", seconds=0.5, seed=2)
    panel = window.library_panel
    child(window, "libraryView").selectRow(0)
    panel.tags_edit.setText("ui, shop")
    panel.notes_edit.setPlainText("for the shop screen")
    panel.save_meta_button.click()
    assert panel.tags_edit.text() == "ui, shop"  # still selected after saving
    child(window, "librarySearchEdit").setText("coin")  # the refreshed list: nothing selected
    assert not panel.selected_records()
    assert panel.tags_edit.text() == "" and panel.notes_edit.toPlainText() == ""
    assert panel.rating_spin.value() == 0 and not panel.favourite_check.isChecked()
    assert not panel.tags_edit.isEnabled()  # nothing to edit until a take is selected


def answer_question(qtbot, button_text: str, seen: list) -> None:
    """Click `button_text` in the question that is about to open (its text kept in `seen`)."""
    def click():
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(20, click)
            return
        seen.append(box.text())
        next(b for b in box.buttons() if b.text() == button_text).click()

    QTimer.singleShot(0, click)


def test_regenerate_never_silently_replaces_the_init_audio(qtbot, window):
    generate(qtbot, window, "thunder", seconds=1.0, seed=77)  # the library take to regenerate
    generate(qtbot, window, "rain", seconds=1.0, seed=2)
    rain = window.studio.session.current_take()
    child(window, "useAsInitButton").click()
    child(window, "waveformView").set_spans([(0.25, 0.5)])
    session = window.studio.session
    assert session.init_take is rain and session.spans
    view = child(window, "libraryView")
    thunder_row = next(r for r in range(view.model().rowCount())
                       if view.model().record(r).prompt == "thunder")
    view.selectRow(thunder_row)
    seen: list[str] = []
    answer_question(qtbot, "Keep my setup", seen)
    child(window, "regenerateButton").click()
    assert seen and "init audio" in seen[0] and "rain" in seen[0] and "span" in seen[0]
    assert session.init_take is rain and session.spans  # kept, and nothing generated
    assert not window.studio.gpu.running and len(session.takes) == 2
    answer_question(qtbot, "Replace and regenerate", seen)
    child(window, "regenerateButton").click()
    qtbot.waitUntil(lambda: not window.studio.gpu.running and len(session.takes) == 3,
                    timeout=WAIT_MS)
    assert session.init_take is None and session.current_take().prompt == "thunder"


def test_regenerate_without_a_setup_to_lose_asks_nothing(qtbot, window, monkeypatch):
    generate(qtbot, window, "thunder", seconds=1.0, seed=77)
    child(window, "seedLockCheck").setChecked(False)
    monkeypatch.setattr(QMessageBox, "exec", lambda _box: pytest.fail("asked for nothing"))
    child(window, "libraryView").selectRow(0)
    child(window, "regenerateButton").click()
    qtbot.waitUntil(lambda: len(window.studio.session.takes) == 2, timeout=WAIT_MS)


def test_a_loop_disables_the_trim_and_fades_it_skips_and_says_why(qtbot, window):
    generate(qtbot, window, "rain", seconds=3.0, seed=44)
    take = window.studio.session.current_take()
    skipped = [child(window, name) for name in ("trimCheck", "trimDbSpin", "resetTrimButton",
                                                 "fadeInSpin", "fadeOutSpin", "fadeCurveCombo")]
    tips = [widget.toolTip() for widget in skipped]
    assert all(widget.isEnabled() for widget in skipped)
    method = child(window, "loopMethodCombo")
    method.setCurrentIndex(method.findData("crossfade"))
    child(window, "loopButton").click()
    qtbot.waitUntil(lambda: take.loop is not None and take.finished is not None,
                    timeout=WAIT_MS)
    for widget in skipped:
        assert not widget.isEnabled() and "loop" in widget.toolTip().lower()
    assert child(window, "loudnessCheck").isEnabled()  # what a loop does use stays
    child(window, "loopButton").click()  # back to the one-shot
    assert all(widget.isEnabled() for widget in skipped)
    assert [widget.toolTip() for widget in skipped] == tips


def test_the_remembered_preset_finishes_new_takes(qtbot, window):
    generate(qtbot, window, "door slam", seconds=0.5, seed=3)
    finish = window.studio.finish_controller
    finish.choose_preset("Game SFX one-shot")
    generate(qtbot, window, "door slam", seconds=0.5, seed=4)
    take = window.studio.session.current_take()
    qtbot.waitUntil(lambda: take.finished is not None, timeout=WAIT_MS)
    assert take.finishing.preset == "Game SFX one-shot"
    assert child(window, "presetCombo").currentText() == "Game SFX one-shot"
    assert take.finished.rate == 48000  # what that preset delivers, not the raw 44.1 kHz
    finish.choose_preset("Raw")
    generate(qtbot, window, "door slam", seconds=0.5, seed=5)
    assert window.studio.session.current_take().finishing is None
    assert child(window, "presetCombo").currentText() == "Raw"


@pytest.mark.no_demo_set
def test_the_models_window_refreshes_when_the_demo_is_built(qtbot, window, no_gpu):
    dialog = window.studio.models_controller.open_models_dialog()
    demo = MODEL_SETS["demo"].label

    def demo_state() -> str:
        tree = dialog.installed_page.tree
        return next(tree.topLevelItem(i).text(1) for i in range(tree.topLevelItemCount())
                    if tree.topLevelItem(i).text(0) == demo)

    assert demo_state() == "not downloaded"  # a fresh data folder: built on first use
    generate(qtbot, window, "wind", seconds=0.5, seed=1)
    qtbot.waitUntil(lambda: demo_state() != "not downloaded", timeout=WAIT_MS)
    assert "file" in demo_state()
