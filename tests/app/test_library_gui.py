"""The library panel in the window: every take recorded, searchable, restorable."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from tests.app.test_gui import WAIT_MS, child, generate


def library_rows(win) -> list:
    return child(win, "libraryView").model().records


def select_row(win, row: int) -> None:
    child(win, "libraryView").selectRow(row)


def test_every_take_is_recorded_and_searchable(qtbot, window):
    generate(qtbot, window, "laser zap", seconds=0.5, seed=5)
    generate(qtbot, window, "rain on leaves", seconds=0.5, seed=6, variations=2)
    rows = library_rows(window)
    assert len(rows) == 3
    assert {r.seed for r in rows} == {5, 6, 7}
    assert all(t.library_id is not None for t in window.studio.session.takes.values())
    record = window.studio.library.get(rows[0].id)
    assert record.audio_path.is_file() and not record.missing
    child(window, "librarySearchEdit").setText("rain")
    assert [r.prompt for r in library_rows(window)] == ["rain on leaves"] * 2
    child(window, "librarySearchEdit").setText("")
    assert child(window, "libraryCountLabel").text() == "3 takes"


def test_tags_notes_rating_and_filters(qtbot, window):
    generate(qtbot, window, "coin", seconds=0.5, seed=1)
    generate(qtbot, window, "bell", seconds=0.5, seed=2)
    panel = window.library_panel
    select_row(window, 0)  # newest first: bell
    panel.tags_edit.setText("ui, pickup")
    panel.notes_edit.setPlainText("use for the shop screen")
    panel.favourite_check.setChecked(True)
    panel.rating_spin.setValue(4)
    panel.save_meta_button.click()
    stored = window.studio.library.get(library_rows(window)[0].id)
    assert stored.tags == ["ui", "pickup"] and stored.rating == 4 and stored.favourite
    child(window, "librarySearchEdit").setText("shop screen")
    assert [r.prompt for r in library_rows(window)] == ["bell"]
    child(window, "librarySearchEdit").setText("")
    panel.favourite_filter.setChecked(True)
    assert [r.prompt for r in library_rows(window)] == ["bell"]
    panel.favourite_filter.setChecked(False)
    panel.rating_filter.setValue(5)
    assert library_rows(window) == []


def test_restore_settings_and_regenerate_exactly(qtbot, window):
    child(window, "cfgSpin").setValue(2.5)
    child(window, "negativePromptEdit").setText("wind")
    child(window, "stepsSpin").setValue(6)
    generate(qtbot, window, "thunder", seconds=1.5, seed=77)
    original = window.studio.session.current_take().pcm.copy()
    # scramble the panel, then restore from the library
    child(window, "promptEdit").setPlainText("something else")
    child(window, "cfgSpin").setValue(1.0)
    child(window, "stepsSpin").setValue(20)
    select_row(window, 0)
    child(window, "restoreSettingsButton").click()
    assert child(window, "promptEdit").toPlainText() == "thunder"
    assert child(window, "cfgSpin").value() == 2.5
    assert child(window, "negativePromptEdit").text() == "wind"
    assert child(window, "stepsSpin").value() == 6
    assert child(window, "seedEdit").text() == "77"
    assert child(window, "secondsSpin").value() == pytest.approx(1.5)
    child(window, "regenerateButton").click()
    ctl = window.studio
    qtbot.waitUntil(lambda: not ctl.gpu.running and len(ctl.session.takes) == 2, timeout=WAIT_MS)
    np.testing.assert_array_equal(ctl.session.current_take().pcm, original)


def test_missing_audio_shows_and_regenerates_into_the_same_row(qtbot, window):
    generate(qtbot, window, "footsteps", seconds=1.0, seed=9)
    ctl = window.studio
    record = library_rows(window)[0]
    original = ctl.library.load_audio(record.id)
    record.audio_path.unlink()
    ctl.library_controller.refresh_library()
    assert library_rows(window)[0].missing
    model = child(window, "libraryView").model()
    assert model.data(model.index(0, 7)) == "missing"
    select_row(window, 0)
    child(window, "regenerateButton").click()
    qtbot.waitUntil(lambda: not ctl.gpu.running, timeout=WAIT_MS)
    rows = library_rows(window)
    assert len(rows) == 1 and not rows[0].missing and rows[0].id == record.id
    np.testing.assert_array_equal(ctl.library.load_audio(record.id), original)


def test_delete_to_trash_and_undo(qtbot, window):
    generate(qtbot, window, "whoosh", seconds=0.5, seed=3)
    record = library_rows(window)[0]
    select_row(window, 0)
    window.library_panel.delete_button.click()
    assert library_rows(window) == []
    assert not record.audio_path.exists()
    from engines import paths

    assert any((paths.library_dir() / "trash").iterdir())
    window.library_panel.undo_button.click()
    rows = library_rows(window)
    assert [r.id for r in rows] == [record.id] and rows[0].audio_path.is_file()


def test_export_selection_folder_and_zip(qtbot, window, tmp_path):
    generate(qtbot, window, "engine", seconds=0.5, seed=4, variations=2)
    child(window, "libraryView").selectAll()
    folder = tmp_path / "out"
    folder.mkdir()
    written = window.studio.library_controller.export_selected(str(folder))
    assert len(written) == 2 and all(p.is_file() for p in written)
    sidecars = sorted(folder.glob("*.json"))
    assert len(sidecars) == 2 and json.loads(sidecars[0].read_text())
    archive = window.studio.library_controller.export_selected_zip(str(tmp_path / "takes.zip"))
    with zipfile.ZipFile(archive) as z:
        names = z.namelist()
    assert sum(n.endswith(".json") for n in names) == 2 and len(names) == 4


def test_double_click_loads_an_old_take_into_the_session(qtbot, window):
    generate(qtbot, window, "drone", seconds=0.5, seed=8)
    ctl = window.studio
    lst = child(window, "takesList")
    lst.setCurrentRow(0)
    ctl.takes_controller.delete_current()  # gone from the session, still in the library
    assert lst.count() == 0
    take = ctl.library_controller.load_from_library(library_rows(window)[0].id)
    assert lst.count() == 1 and take.seed == 8
    np.testing.assert_array_equal(take.pcm, ctl.library.load_audio(take.library_id))


def test_inpainted_take_keeps_its_lineage(qtbot, window):
    generate(qtbot, window, "rain", seconds=3.0, seed=2)
    ctl = window.studio
    parent = ctl.session.current_take()
    child(window, "useAsInitButton").click()
    child(window, "waveformView").set_spans([(1.0, 1.5)])
    generate(qtbot, window, "explosion", seconds=3.0, seed=3)
    child_take = ctl.session.current_take()
    record = ctl.library.get(child_take.library_id)
    assert record.parent_id == parent.library_id and record.mode == "inpaint"
    assert [r.id for r in ctl.library.lineage(record.id)] == [record.id, parent.library_id]
