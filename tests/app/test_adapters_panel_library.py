"""Adapters and the Library page (issue 35): Restore settings puts a take's adapters back in the
Adapters panel at their strengths (and asks before replacing adapters the user set up), a
missing adapter file is one sentence naming it and its SHA-256, the adapter filter lists the
takes made with one adapter, and the take's facts name its adapters."""

from __future__ import annotations

import hashlib
import shutil

import numpy as np

from app.library import restore
from tests.app.test_adapters_panel import BRIGHT, DARK, add_adapters, demo_adapter
from tests.app.test_gui import WAIT_MS, generate
from tests.gui_support import child


def library_rows(win) -> list:
    return child(win, "libraryView").model().records


def restore_newest(win) -> None:
    child(win, "libraryView").selectRow(0)
    child(win, "restoreSettingsButton").click()


def panel_rows(win) -> list:
    return win.generation_panel.adapters_panel.rows


def test_restore_settings_brings_the_adapters_back_and_regenerates_exactly(qtbot, window,
                                                                          monkeypatch):
    add_adapters(window, demo_adapter(BRIGHT), demo_adapter(DARK))
    child(window, "adapterStrengthSpin_0").setValue(0.75)
    child(window, "adapterEnabled_1").setChecked(False)
    generate(qtbot, window, "wooden door creak", seconds=0.5, seed=21)
    original = window.studio.session.current_take().pcm.copy()
    child(window, "adapterRemove_1").click()
    child(window, "adapterRemove_0").click()
    restore_newest(window)
    assert [r.entry.file_name for r in panel_rows(window)] == [BRIGHT, DARK]
    assert child(window, "adapterStrengthSpin_0").value() == 0.75
    assert child(window, "adapterEnabled_0").isChecked()
    assert not child(window, "adapterEnabled_1").isChecked()
    assert "restored" in window.statusBar().currentMessage()
    # the panel holding other adapters is a setup the user would lose: asked first
    child(window, "adapterStrengthSpin_0").setValue(2.0)
    asked = []
    monkeypatch.setattr(restore, "ask_to_replace",
                        lambda _parent, _title, text, _verb: asked.append(text) or True)
    child(window, "regenerateButton").click()
    assert asked and "2 adapters in the Adapters panel" in asked[0]
    ctl = window.studio
    qtbot.waitUntil(lambda: not ctl.gpu.running and len(ctl.session.takes) == 2, timeout=WAIT_MS)
    assert child(window, "adapterStrengthSpin_0").value() == 0.75  # restored again
    np.testing.assert_array_equal(ctl.session.current_take().pcm, original)


def test_a_missing_adapter_is_one_sentence_with_its_name_and_sha256(qtbot, window, tmp_path):
    gone = tmp_path / "house-pads.safetensors"
    shutil.copy(demo_adapter(BRIGHT), gone)
    sha = hashlib.sha256(gone.read_bytes()).hexdigest()
    add_adapters(window, gone)
    generate(qtbot, window, "pad swell", seconds=0.5, seed=3)
    gone.unlink()
    child(window, "adapterRemove_0").click()
    restore_newest(window)
    said = window.statusBar().currentMessage()
    assert "house-pads.safetensors" in said and sha in said
    assert "--lora" not in said and "{0}" not in said and "Adapters panel" in said
    (row,) = panel_rows(window)  # still listed, marked: what the take was made with
    assert row.entry.missing and "file missing" in child(window, "adapterDetails_0").text()
    child(window, "generateButton").click()  # refused before any work, one sentence
    qtbot.waitUntil(lambda: "house-pads.safetensors" in window.statusBar().currentMessage()
                    and not window.studio.gpu.running, timeout=WAIT_MS)
    assert "not found" in window.statusBar().currentMessage()


def test_the_library_filters_by_adapter_and_the_facts_name_them(qtbot, window):
    generate(qtbot, window, "plain hit", seconds=0.5, seed=1)
    add_adapters(window, demo_adapter(DARK))
    child(window, "adapterStrengthSpin_0").setValue(0.6)
    generate(qtbot, window, "dark hit", seconds=0.5, seed=1)
    assert len(library_rows(window)) == 2
    adapter_filter = child(window, "libraryAdapterFilter")
    adapter_filter.setText("demo-dark")
    qtbot.waitUntil(lambda: [r.prompt for r in library_rows(window)] == ["dark hit"],
                    timeout=WAIT_MS)
    assert child(window, "libraryCountLabel").text().startswith("1 of 2")
    child(window, "libraryView").selectRow(0)
    facts = child(window, "libraryFacts")
    qtbot.waitUntil(lambda: bool(facts.rows), timeout=WAIT_MS)
    assert dict(facts.rows)["Adapters"] == "demo-dark.safetensors:0.6"
    adapter_filter.setText(BRIGHT)
    qtbot.waitUntil(lambda: library_rows(window) == [], timeout=WAIT_MS)
    adapter_filter.setText("")
    qtbot.waitUntil(lambda: len(library_rows(window)) == 2, timeout=WAIT_MS)
