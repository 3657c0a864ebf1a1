"""The Library page's inspector (issue 35): the selected row's facts in words - checked against
the take's file read by soundfile and measured by pyloudnorm and a 4x oversampled peak - its
waveform to click and scrub with the shared player (a stand-in stream: no audio device), Space
on the table, the Session tab's facts of the same take, and an imported sound worded without a
prompt it does not have."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import soundfile as sf
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QMouseEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from engines.catalog import MODEL_SETS
from engines.delivery.labels import label_changes
from tests.app.test_browser import RecordingPlayer
from tests.browser_support import FULL_HD, settle, show_at
from tests.engines.test_library import engine_files_in
from tests.gui_support import child
from tests.team_support import add_take

WAIT_MS = 10_000
PROMPT = "footsteps on gravel, slow walk, leather boots"
SEED = 2742749


@pytest.fixture(name="win")
def studio_window(qtbot, home):
    """The real window on its own data folder, with a player that needs no audio device and no
    GPU worker (the takes are put in the library directly)."""
    from app.shell.main_window import MainWindow
    from app.shell.studio import Studio

    window = MainWindow()
    qtbot.addWidget(window)
    window.studio = Studio(window, player=RecordingPlayer(), start_worker=False)
    child(window, "autoplayCheck").setChecked(False)
    window.studio.library_page()
    yield window
    window.studio.shutdown()


def keep_take(win, tmp_path, seconds: float = 1.0):
    library = win.studio.library
    record = add_take(library, engine_files_in(tmp_path / "engines"), PROMPT, SEED,
                      kind="tone:440", seconds=seconds)
    library.set_labels(record.id, label_changes(catid="FOOTGrvl", fx_name="Gravel Step"))
    win.studio.library_controller.refresh_library()
    return library.get(record.id)


def select_first_row(qtbot, win) -> None:
    show_at(qtbot, win, FULL_HD)
    win.show_library()
    settle()
    child(win, "libraryView").selectRow(0)
    settle()


def measured(qtbot, facts) -> dict[str, str]:
    qtbot.waitUntil(lambda: "measuring" not in dict(facts.rows).get("Loudness", "measuring"),
                    timeout=WAIT_MS)
    return dict(facts.rows)


def test_selecting_a_row_shows_its_facts_in_words(qtbot, win, tmp_path):
    import pyloudnorm
    from scipy.signal import resample_poly

    record = keep_take(win, tmp_path)
    select_first_row(qtbot, win)
    facts = child(win, "libraryFacts")
    rows = measured(qtbot, facts)
    assert rows["Prompt"] == PROMPT
    assert rows["Sound"] == "1.0 s · 44.1 kHz stereo"
    assert rows["Seed"] == str(SEED)
    assert rows["Model"].startswith(MODEL_SETS[record.model].label)
    assert rows["Finishing"] == "none (the raw take)"
    assert rows["Labels"].startswith("FOOTGrvl")
    assert "Gravel Step" in rows["Labels"]
    assert rows["Files"] == str(record.audio_path)
    # the file's name opens the folder it is in
    assert QUrl.fromLocalFile(str(record.audio_path.parent)).toString() in facts.text()
    assert facts.textInteractionFlags() & Qt.TextInteractionFlag.TextSelectableByMouse
    # loudness and true peak as independent meters read the take's file
    audio, rate = sf.read(record.audio_path, dtype="float64", always_2d=True)
    lufs, dbtp = (float(v) for v in re.findall(r"(-?\d+\.\d) (?:LUFS|dBTP)", rows["Loudness"]))
    assert lufs == pytest.approx(pyloudnorm.Meter(rate).integrated_loudness(audio), abs=0.15)
    oversampled = resample_poly(audio, 4, 1, axis=0)
    assert dbtp == pytest.approx(20 * math.log10(np.abs(oversampled).max()), abs=0.3)
    # no row selected: no facts (never the previous row's)
    child(win, "libraryView").clearSelection()
    settle()
    assert facts.rows == []
    assert child(win, "libraryPreview").duration == 0


def _drag(preview, x: float) -> None:
    """The pointer moved to `x` with the left button held (a scrub)."""
    point = QPointF(x, preview.height() / 2)
    event = QMouseEvent(QEvent.Type.MouseMove, point, preview.mapToGlobal(point),
                        Qt.MouseButton.NoButton, Qt.MouseButton.LeftButton,
                        Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(preview, event)


def test_the_waveform_plays_from_a_click_scrubs_and_follows_the_player(qtbot, win, tmp_path):
    record = keep_take(win, tmp_path, seconds=2.0)
    select_first_row(qtbot, win)
    preview, player = child(win, "libraryPreview"), win.studio.player
    qtbot.waitUntil(preview.has_peaks, timeout=WAIT_MS)
    assert preview.duration == pytest.approx(record.samples / record.sample_rate)
    step = preview.duration / preview.width()  # one pixel of the waveform, in seconds

    qtbot.mouseClick(preview, Qt.MouseButton.LeftButton,
                     pos=QPoint(preview.width() // 2, preview.height() // 2))
    position, length = player.plays[-1]
    assert length == pytest.approx(2.0, abs=1e-3)  # the row's audio, not a session take's
    assert position == pytest.approx(1.0, abs=2 * step)
    assert player.playing
    assert win.studio.session.list.count() == 0  # auditioned, not brought into the session

    player._stream.pull(4410)  # the device plays 0.1 s
    qtbot.waitUntil(lambda: preview.playhead() == pytest.approx(player.position_seconds),
                    timeout=WAIT_MS)
    assert player.position_seconds == pytest.approx(position + 0.1, abs=1e-3)

    _drag(preview, 0.8 * preview.width())  # scrubbing: what plays follows the pointer
    assert player.position_seconds == pytest.approx(1.6, abs=2 * step)
    assert preview.playhead() == pytest.approx(player.position_seconds, abs=2 * step)

    view = child(win, "libraryView")
    win.activateWindow()
    view.setFocus()
    settle()
    QTest.keyClick(view, Qt.Key.Key_Space)  # pauses the row that plays
    assert not player.playing
    QTest.keyClick(view, Qt.Key.Key_Space)  # and plays it on from there
    assert player.playing
    assert player.position_seconds == pytest.approx(1.6, abs=2 * step)


def test_the_session_tab_shows_the_same_facts_for_the_same_take(qtbot, win, tmp_path):
    record = keep_take(win, tmp_path)
    select_first_row(qtbot, win)
    library_rows = measured(qtbot, child(win, "libraryFacts"))
    win.studio.library_controller.load_from_library(record.id)  # a double-click
    session_facts = child(win, "sessionFacts")
    assert measured(qtbot, session_facts) == library_rows
    win.studio.session.list.setCurrentRow(-1)
    settle()
    assert session_facts.rows == []


def test_an_imported_sound_is_worded_by_its_file_not_a_prompt(qtbot, win, tmp_path):
    from engines.sound_import import import_folders

    folder = tmp_path / "field recordings"
    folder.mkdir()
    tone = 0.25 * np.sin(2 * np.pi * 220 * np.arange(48000) / 48000)
    sf.write(folder / "FOOTGrvl_Gravel Step_JD_Field.wav", tone, 48000, subtype="PCM_24")
    report = import_folders(win.studio.library, [folder])
    assert report.imported == 1, report.sentence()
    win.studio.library_controller.refresh_library()
    select_first_row(qtbot, win)
    rows = measured(qtbot, child(win, "libraryFacts"))
    assert rows["Source"] == f"imported from {folder}"
    assert "Prompt" not in rows and "Seed" not in rows and "Model" not in rows
    assert rows["Sound"].startswith("1.0 s · 48 kHz mono")
    assert "WAV" in rows["Sound"] and "24" in rows["Sound"]
    assert rows["Labels"].startswith("FOOTGrvl")
    assert rows["Files"] == str(folder / "FOOTGrvl_Gravel Step_JD_Field.wav")


def test_space_plays_a_freshly_selected_row_from_its_start(qtbot, win, tmp_path):
    keep_take(win, tmp_path)
    select_first_row(qtbot, win)
    player, view = win.studio.player, child(win, "libraryView")
    win.activateWindow()
    view.setFocus()
    settle()
    QTest.keyClick(view, Qt.Key.Key_Space)
    assert player.playing
    assert player.plays[-1] == (0.0, pytest.approx(1.0, abs=1e-3))
    assert child(win, "playButton").text() == "Pause"  # the transport says so too


def test_a_row_whose_file_is_gone_says_so(qtbot, win, tmp_path):
    record = keep_take(win, tmp_path)
    record.audio_path.unlink()
    win.studio.library_controller.refresh_library()
    select_first_row(qtbot, win)
    preview, facts = child(win, "libraryPreview"), child(win, "libraryFacts")
    rows = dict(facts.rows)
    assert rows["Files"] == f"{record.audio_path} (missing)"
    assert rows["Loudness"].startswith("not measured")
    assert not preview.has_peaks() and preview.duration == pytest.approx(1.0, abs=1e-3)
    qtbot.mouseClick(preview, Qt.MouseButton.LeftButton, pos=QPoint(10, 10))
    assert not win.studio.player.playing
    assert f"#{record.id}" in child(win, "statusBar").currentMessage()  # one sentence
