"""The Adapters panel in the real window (issue 35), on the demo set and its two checked-in demo
adapters: added through Add adapter... (the file dialog answered), each row saying what the file
is, a strength slider and number per row, on/off; the take made with them differs from one
without and records them; strength 0 is no adapter at all; a refused file is one sentence in
the window's words and adds no row; the panel comes back after a restart."""

from __future__ import annotations

import hashlib
import shutil
import time

import numpy as np
import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtTest import QTest

from app.adapters.panel import AdaptersPanel
from app.adapters.state import adapter_settings, apply_adapter_settings, panel_adapters
from app.adapters.strength import SLIDER_TICKS
from engines.demo.demo_adapters import demo_adapter_path
from tests.adapter_support import write_adapter
from tests.app.test_gui import generate
from tests.browser_support import open_window, show_at
from tests.gui_support import child

BRIGHT, DARK = "demo-bright.safetensors", "demo-dark.safetensors"


def demo_adapter(name: str):
    return demo_adapter_path(name)


def add_adapters(win, *paths) -> None:
    """Add adapter... with the file dialog answering `paths`; back once they are read."""
    controller = win.studio.adapters_controller
    controller.choose_files = lambda: [str(p) for p in paths]
    child(win, "addAdapterButton").click()
    wait_read(win)


def wait_read(win) -> None:
    """Until the files being added were read (off the GUI thread) and their rows made."""
    controller = win.studio.adapters_controller
    deadline = time.monotonic() + 30
    while controller.reading and time.monotonic() < deadline:
        QTest.qWait(5)
    assert not controller.reading


def name(win, n: int) -> str:
    """Row n's adapter name, whole (the label elides it in a narrow column)."""
    return child(win, f"adapterName_{n}").full_text


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def current_pcm(win) -> np.ndarray:
    return win.studio.session.current_take().pcm.copy()


def test_adapters_from_the_panel_change_the_take_and_are_recorded(qtbot, window):
    bright, dark = demo_adapter(BRIGHT), demo_adapter(DARK)
    assert child(window, "adaptersEmptyLabel").isVisibleTo(window)
    add_adapters(window, bright, dark)
    assert not child(window, "adaptersEmptyLabel").isVisibleTo(window)
    assert [name(window, n) for n in (0, 1)] == ["demo-bright", "demo-dark"]
    assert child(window, "adapterDetails_0").text() == "LoRA · rank 4"
    assert child(window, "adapterDetails_1").text() == "DoRA · rank 4"
    child(window, "adapterStrength_0").setValue(30)  # slid to 1.5
    assert child(window, "adapterStrengthSpin_0").value() == pytest.approx(1.5)
    child(window, "adapterStrengthSpin_1").setValue(0.5)
    assert child(window, "adapterStrength_1").value() == 10  # the slider follows the number
    generate(qtbot, window, "rain on a tin roof", seconds=1.0, seed=11)
    with_adapters = current_pcm(window)
    record = window.studio.library.get(window.studio.session.current_take().library_id)
    assert [(a["file_name"], a["sha256"], a["variant"], a["rank"], a["strength"], a["enabled"])
            for a in record.adapters] == [
        (BRIGHT, sha256(bright), "lora", 4, 1.5, True),
        (DARK, sha256(dark), "dora-rows", 4, 0.5, True)]
    child(window, "adapterRemove_0").click()  # the rows below move up, names and all
    assert name(window, 0) == "demo-dark"
    assert child(window, "adapterStrengthSpin_0").value() == 0.5
    child(window, "adapterRemove_0").click()
    assert window.generation_panel.adapters_panel.rows == []
    assert window.findChild(object, "adapterName_0") is None
    generate(qtbot, window, "rain on a tin roof", seconds=1.0, seed=11)
    plain = current_pcm(window)
    assert np.abs(with_adapters.astype(np.int32) - plain).max() > 1000  # heard, not rounding
    plain_record = window.studio.library.get(window.studio.session.current_take().library_id)
    assert plain_record.adapters == []


def test_strength_zero_or_switched_off_is_the_take_without_adapters(qtbot, window):
    add_adapters(window, demo_adapter(BRIGHT))
    child(window, "adapterStrength_0").setValue(0)
    generate(qtbot, window, "glass shatter", seconds=0.5, seed=5)
    at_zero = current_pcm(window)
    child(window, "adapterStrength_0").setValue(20)  # 1.0, then switched off
    child(window, "adapterEnabled_0").setChecked(False)
    generate(qtbot, window, "glass shatter", seconds=0.5, seed=5)
    switched_off = current_pcm(window)
    child(window, "adapterRemove_0").click()
    generate(qtbot, window, "glass shatter", seconds=0.5, seed=5)
    np.testing.assert_array_equal(at_zero, current_pcm(window))
    np.testing.assert_array_equal(switched_off, current_pcm(window))


def test_the_slider_covers_0_to_2_and_the_number_reaches_10(qtbot, window):
    add_adapters(window, demo_adapter(BRIGHT))
    slider, spin = child(window, "adapterStrength_0"), child(window, "adapterStrengthSpin_0")
    assert (slider.minimum(), slider.maximum(), SLIDER_TICKS) == (0, 40, 40)
    assert (spin.minimum(), spin.maximum(), spin.value()) == (0.0, 10.0, 1.0)
    spin.setValue(6.5)
    assert slider.value() == slider.maximum() and spin.value() == 6.5  # pinned at its end
    slider.setValue(39)
    assert spin.value() == pytest.approx(1.95)
    panel = window.generation_panel.adapters_panel
    assert [c.strength for c in panel_adapters(panel)] == [pytest.approx(1.95)]


@pytest.mark.parametrize("name, content", [
    ("notes.txt", b"not an adapter"),
    ("weights.ckpt", b"\x80\x02pickle"),
    ("broken.safetensors", b"\x08\x00\x00\x00\x00\x00\x00\x00{not json"),
])
def test_a_refused_file_is_one_sentence_in_the_windows_words(qtbot, window, tmp_path, name,
                                                             content):
    path = tmp_path / name
    path.write_bytes(content)
    add_adapters(window, path)
    note = child(window, "adaptersNote")
    assert window.generation_panel.adapters_panel.rows == []
    text = note.text()
    assert note.isVisibleTo(window) and name in text
    assert "--lora" not in text and "Traceback" not in text and "{0}" not in text
    assert "Adapters panel" in text and text.count(". ") == 0 and text.endswith(".")
    assert window.statusBar().currentMessage() == text
    add_adapters(window, demo_adapter(BRIGHT))  # a good file afterwards: the note goes
    assert not note.isVisibleTo(window) and len(window.generation_panel.adapters_panel.rows) == 1


@pytest.mark.parametrize("variant, baked, why", [
    ("dora-cols", True, "dora-cols"), ("dora-rows", False, "baked")])
def test_an_adapter_the_engine_cannot_serve_is_refused_in_one_sentence(qtbot, window, tmp_path,
                                                                       variant, baked, why):
    path = write_adapter(tmp_path / f"{variant}.safetensors", variant, baked=baked)
    add_adapters(window, path)
    text = child(window, "adaptersNote").text()
    assert window.generation_panel.adapters_panel.rows == []
    assert why in text and path.name in text and "Adapters panel" in text
    assert "--lora" not in text and "{0}" not in text


def test_the_same_file_twice_is_refused(qtbot, window, tmp_path):
    copy = tmp_path / "copy.safetensors"
    shutil.copy(demo_adapter(BRIGHT), copy)
    add_adapters(window, demo_adapter(BRIGHT), copy)
    assert len(window.generation_panel.adapters_panel.rows) == 1
    assert "already" in child(window, "adaptersNote").text()


def test_the_panel_comes_back_after_a_restart(qtbot, window):
    add_adapters(window, demo_adapter(BRIGHT), demo_adapter(DARK))
    child(window, "adapterStrengthSpin_0").setValue(3.25)
    child(window, "adapterEnabled_1").setChecked(False)
    window.studio.remember_window()  # as the window closes
    again = open_window(qtbot)
    try:
        qtbot.wait(20)  # its first turns of the event loop (filter lists filled)
        assert [name(again, n) for n in (0, 1)] == ["demo-bright", "demo-dark"]
        assert child(again, "adapterStrengthSpin_0").value() == 3.25
        assert child(again, "adapterStrength_0").value() == SLIDER_TICKS
        assert not child(again, "adapterEnabled_1").isChecked()
        assert child(again, "adapterDetails_1").text() == "DoRA · rank 4"
    finally:
        again.studio.shutdown()


def test_dropped_files_are_added_and_rows_fit_a_laptop_column(qtbot, window, tmp_path):
    show_at(qtbot, window, (1366, 768))
    column = window.splitter.widget(0)
    width_before = column.width()
    junk = tmp_path / "readme.txt"
    junk.write_text("not an adapter")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in (demo_adapter(BRIGHT), junk,
                                                       demo_adapter(DARK))])
    panel = window.generation_panel.adapters_panel
    drop = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime,
                      Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier)
    panel.dropEvent(drop)
    wait_read(window)
    assert [row.entry.file_name for row in panel.rows] == [BRIGHT, DARK]
    assert "readme.txt" in child(window, "adaptersNote").text()  # said, not added
    qtbot.wait(20)
    assert column.width() == width_before  # the rows take the column's width, not more
    for n in (0, 1):
        slider = child(window, f"adapterStrength_{n}")
        assert slider.isVisible() and slider.width() >= 80  # room to slide
        right = slider.mapTo(column, slider.rect().topRight()).x()
        assert right <= column.width()


def test_remembered_adapters_from_a_damaged_file_are_skipped_not_raised(qtbot, tmp_path):
    panel = AdaptersPanel()
    qtbot.addWidget(panel)
    gone = tmp_path / "gone.safetensors"
    apply_adapter_settings(panel, [
        "text", {"path": 3}, {"path": ""}, {"path": str(demo_adapter(BRIGHT)), "strength": 99,
                                             "rank": "four", "enabled": "yes"},
        {"path": str(gone), "strength": 0.4, "enabled": False, "variant": "lora", "rank": 8}])
    assert [row.entry.path.name for row in panel.rows] == [BRIGHT, gone.name]
    first, second = adapter_settings(panel)
    assert (first["strength"], first["rank"], first["enabled"]) == (1.0, 0, True)
    assert (second["strength"], second["enabled"]) == (0.4, False)
    assert panel.rows[1].entry.missing and "file missing" in panel.rows[1].details_label.text()
    apply_adapter_settings(panel, {"not": "a list"})  # ignored
    assert len(panel.rows) == 2
    apply_adapter_settings(panel, [])  # remembered as none: none
    assert panel.rows == []
