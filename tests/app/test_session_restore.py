"""A restart restores the session (issue 34): the session's takes come back from the library in
their order with the selected one selected, and the prompt and every generation panel setting
as they were. A take deleted from the library meanwhile is left out, with one notice. The
checks go through object names, on a second real window built on the same data folder."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PySide6.QtWidgets import QApplication

from tests.app.test_gui import generate
from tests.browser_support import open_window, show_at
from tests.gui_support import child

WAIT_MS = 60_000


def reopen(qtbot, first):
    """Close `first` as a user does (shown, then closed) and open the next run's window on the
    same data folder, its remembered takes brought back."""
    if not first.isVisible():
        show_at(qtbot, first, (1280, 720))
    first.close()
    second = open_window(qtbot)
    show_at(qtbot, second, (1280, 720))
    qtbot.waitUntil(lambda: second.studio.session_restore.settled, timeout=WAIT_MS)
    return second


def session_rows(win) -> list[tuple[int | None, str, int | None]]:
    """(library id, name shown, seed) of each row of the takes list, in order."""
    session, takes = win.studio.session, child(win, "takesList")
    rows = []
    for row in range(takes.count()):
        take = session.take_for(takes.item(row))
        rows.append((take.library_id, takes.item(row).text(), take.seed))
    return rows


def test_takes_prompt_and_settings_come_back_after_a_restart(qtbot, window):
    generate(qtbot, window, "door slam", seconds=0.5, seed=3)
    generate(qtbot, window, "glass chime", seconds=0.5, seed=40, variations=2)
    takes = child(window, "takesList")
    takes.setCurrentRow(1)  # the first glass chime, not the newest take
    selected_pcm = window.studio.session.current_take().pcm.copy()
    before = session_rows(window)
    child(window, "promptEdit").setPlainText("rain on a tin roof, close")
    child(window, "cfgSpin").setValue(3.5)  # lets the negative prompt work
    child(window, "negativePromptEdit").setText("thunder")
    child(window, "stepsSpin").setValue(12)
    child(window, "secondsSpin").setValue(1.25)
    child(window, "seedEdit").setText("777")
    child(window, "seedLockCheck").setChecked(True)
    child(window, "variationsSpin").setValue(3)
    child(window, "rerollFlaggedCheck").setChecked(True)
    child(window, "apgSpin").setValue(0.4)

    second = reopen(qtbot, window)
    try:
        assert session_rows(second) == before
        assert all(library_id is not None for library_id, _name, _seed in before)
        current = second.studio.session.current_take()
        assert current.library_id == before[1][0]
        assert np.array_equal(current.pcm, selected_pcm)  # the very audio, from the library
        assert child(second, "waveformView").samples().shape == selected_pcm.shape
        assert child(second, "promptEdit").toPlainText() == "rain on a tin roof, close"
        assert child(second, "negativePromptEdit").text() == "thunder"
        assert child(second, "negativePromptEdit").isEnabled()  # CFG 3.5 came back too
        assert child(second, "cfgSpin").value() == 3.5
        assert child(second, "stepsSpin").value() == 12
        assert child(second, "secondsSpin").value() == 1.25
        assert child(second, "seedEdit").text() == "777"
        assert child(second, "seedLockCheck").isChecked()
        assert child(second, "variationsSpin").value() == 3
        assert child(second, "rerollFlaggedCheck").isChecked()
        assert child(second, "apgSpin").value() == pytest.approx(0.4)
        assert child(second, "modelCombo").currentData() == "demo"
        # what comes back is a session like any other: the next take joins it
        generate(qtbot, second, "door slam", seconds=0.5, seed=5)
        assert child(second, "takesList").count() == len(before) + 1
    finally:
        second.studio.shutdown()


def test_a_take_deleted_from_the_library_is_left_out_with_one_notice(qtbot, window):
    generate(qtbot, window, "door slam", seconds=0.5, seed=3, variations=3)
    ids = [library_id for library_id, _name, _seed in session_rows(window)]
    window.studio.library.delete(ids[1])  # to the library's trash, as the Library page does
    window.studio.session.select(window.studio.session.for_library_id(ids[1]))
    second = reopen(qtbot, window)
    try:
        assert [row[0] for row in session_rows(second)] == [ids[0], ids[2]]
        notices = [line for line in second.studio.notifier.history
                   if "no longer in the library" in line]
        assert notices == ["1 take of the last session is no longer in the library (deleted, "
                           "or its audio file is gone), so the session came back without it."]
        assert "no longer in the library" in second.statusBar().currentMessage()
        assert second.studio.session.current_take() is not None  # the newest one, selected
    finally:
        second.studio.shutdown()


def test_the_init_take_and_its_spans_come_back(qtbot, window, tmp_path):
    import soundfile as sf

    path = tmp_path / "knock.wav"
    sf.write(path, np.full((44100, 2), 0.25, np.float32), 44100)
    window.studio.inpaint_controller.open_init_file(str(path))
    window.studio.session.restore_spans([(0.2, 0.6)])
    QApplication.processEvents()
    spans = list(window.studio.session.spans)  # as the waveform snapped them
    assert len(spans) == 1 and spans[0][0] == pytest.approx(0.2, abs=0.05)
    init_id = window.studio.session.init_take.library_id
    assert init_id is not None  # imported audio is kept in the library too
    second = reopen(qtbot, window)
    try:
        init = second.studio.session.init_take
        assert init is not None and init.library_id == init_id
        assert [v for span in second.studio.session.spans for v in span] == \
            pytest.approx([v for span in spans for v in span])
        assert "knock" in child(second, "initLabel").text()
    finally:
        second.studio.shutdown()


def test_compared_tiers_are_kept_in_the_library_and_come_back(qtbot, window):
    generate(qtbot, window, "glass chime", seconds=0.5, seed=21)
    child(window, "compareTiersButton").click()  # hidden in the folded Advanced group: a click
    qtbot.waitUntil(lambda: child(window, "takesList").count() == 2
                    and not window.studio.compare_controller.pending, timeout=WAIT_MS)
    before = session_rows(window)
    assert before[1][1] == "glass chime [coarse tier]" and before[1][0] is not None
    assert window.studio.library.get(before[1][0]).decoder_tier == "coarse"
    second = reopen(qtbot, window)
    try:
        assert session_rows(second) == before
    finally:
        second.studio.shutdown()


def test_a_take_made_before_the_restore_ends_keeps_its_selection(qtbot, window):
    generate(qtbot, window, "door slam", seconds=0.5, seed=3, variations=2)
    show_at(qtbot, window, (1280, 720))
    window.close()
    second = open_window(qtbot)  # not shown: its after-paint steps wait for the event loop
    try:
        generate(qtbot, second, "glass chime", seconds=0.5, seed=8)
        made = second.studio.session.current_take()
        qtbot.waitUntil(lambda: second.studio.session_restore.settled, timeout=WAIT_MS)
        assert child(second, "takesList").count() == 3
        assert second.studio.session.current_take() is made
    finally:
        second.studio.shutdown()


def test_a_damaged_session_file_still_opens_the_window(qtbot, home):
    from app.common.session_memory import session_path

    session_path().write_text('{"take_ids": [1, "x", -3, true], "settings": {"steps": "many", '
                              '"prompt": 5, "seconds": 1e308, "model": ["demo"]}, "spans": 7}')
    win = open_window(qtbot)
    try:
        show_at(qtbot, win, (1280, 720))
        qtbot.waitUntil(lambda: win.studio.session_restore.settled, timeout=WAIT_MS)
        assert child(win, "stepsSpin").value() == 8  # the default: "many" was dropped
        assert child(win, "takesList").count() == 0  # take #1 is not in this library
        assert [line for line in win.studio.notifier.history if "no longer" in line]
    finally:
        win.studio.shutdown()
    session_path().write_bytes(b"\xff\x00 not json")
    win = open_window(qtbot)
    try:
        QApplication.processEvents()
        assert child(win, "promptEdit").toPlainText() == ""
    finally:
        win.studio.shutdown()


def test_the_session_file_is_replaced_whole(qtbot, window, home):
    from app.common.session_memory import session_path

    generate(qtbot, window, "door slam", seconds=0.5, seed=3)
    show_at(qtbot, window, (1280, 720))
    window.close()
    saved = json.loads(session_path().read_text())
    assert saved["take_ids"] == [window.studio.session.current_take().library_id]
    assert saved["settings"]["prompt"] == "door slam"
    leftovers = [p.name for p in session_path().parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []
