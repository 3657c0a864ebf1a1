"""Find similar in the window (issue 22): a small demo library of three prompts, found again by
how they sound - from a session take (the Take menu's findSimilarAction), from a library row, and
from an audio file dropped on the library's search box - with the embedding pass over old takes
off the GUI thread and its progress in the window. The oracle is each take's prompt, never the
embedding."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
import soundfile as sf
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QAction, QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

import engines.store.sound_search as search_module
from app.library.table import MATCH
from tests.app.test_gui import WAIT_MS, generate
from tests.browser_support import FULL_HD, fresh_home, open_window, show_at
from tests.gui_support import child

PROMPTS = ("rain on a tin roof", "laser blast, sci-fi", "church bell ringing")
SEEDS = 3


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    fresh_home(tmp_path, monkeypatch)
    win = open_window(qtbot)
    for n, prompt in enumerate(PROMPTS):
        generate(qtbot, win, prompt, seconds=1.0 + n % 2, seed=11 * (n + 1), variations=SEEDS)
    show_at(qtbot, win, FULL_HD)
    yield win
    win.studio.shutdown()


def results(qtbot, win) -> list:
    """Wait for a sound search's answer; the records it lists, closest first."""
    similar = win.studio.library_controller.similar
    qtbot.waitUntil(lambda: similar.active and not similar.busy, timeout=WAIT_MS)
    return list(child(win, "libraryView").model().records)


def match_texts(win) -> list[float]:
    model = child(win, "libraryView").model()
    return [float(model.index(row, MATCH).data().rstrip("%")) for row in range(model.rowCount())]


def test_find_similar_on_a_session_take_ranks_its_own_prompt_first(qtbot, window):
    takes = child(window, "takesList")
    takes.setCurrentRow(1)  # a "rain" take, by the order they were made
    take = window.studio.session.current_take()
    assert take.prompt == PROMPTS[0]
    window.findChild(QAction, "findSimilarAction").trigger()
    found = results(qtbot, window)
    assert child(window, "centreTabs").currentWidget() is window.library_sources  # on screen
    assert take.library_id not in [r.id for r in found]  # not itself
    assert [r.prompt for r in found[:SEEDS - 1]] == [PROMPTS[0]] * (SEEDS - 1)
    matches = match_texts(window)
    assert matches == sorted(matches, reverse=True) and 0 <= matches[-1] < matches[0] <= 100
    assert "sound most like take #" in child(window, "libraryCountLabel").text()
    assert child(window, "libraryShowAllButton").isVisible()
    child(window, "libraryShowAllButton").click()  # back to the library as searched
    assert child(window, "libraryView").model().rowCount() == len(PROMPTS) * SEEDS
    assert not window.studio.library_controller.similar.active


def test_find_similar_on_a_library_row(qtbot, window):
    window.show_library()
    view = child(window, "libraryView")
    model = view.model()
    row = next(r for r in range(model.rowCount()) if model.record(r).prompt == PROMPTS[2])
    view.selectRow(row)
    child(window, "librarySimilarButton").click()
    found = results(qtbot, window)
    assert [r.prompt for r in found[:SEEDS - 1]] == [PROMPTS[2]] * (SEEDS - 1)
    # typing a search leaves the sound search
    child(window, "librarySearchEdit").setText("laser")
    assert {r.prompt for r in model.records} == {PROMPTS[1]}
    assert view.horizontalHeader().isSectionHidden(MATCH)


def _drop_file(widget, path: Path) -> None:
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(path))])
    point = QPoint(10, widget.height() // 2)
    enter = QDragEnterEvent(point, Qt.DropAction.CopyAction, data, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(widget, enter)
    assert enter.isAccepted()
    drop = QDropEvent(QPointF(point), Qt.DropAction.CopyAction, data,
                      Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(widget, drop)


def test_dropping_a_sound_on_the_search_box_finds_takes_like_it(qtbot, window, tmp_path):
    library = window.studio.library
    bell = next(r for r in library.search(limit=None) if r.prompt == PROMPTS[2])
    audio, rate = sf.read(bell.audio_path, dtype="float32")
    outside = tmp_path / "my bell.flac"  # a file of the user's, outside the library
    sf.write(outside, audio, rate)
    box = child(window, "librarySearchEdit")
    window.show_library()
    _drop_file(box, outside)
    found = results(qtbot, window)
    assert [r.prompt for r in found[:SEEDS]] == [PROMPTS[2]] * SEEDS
    assert found[0].id == bell.id  # its own sound, nearly the same
    assert box.text() == ""  # searched by sound, not pasted as words
    assert "my bell.flac" in child(window, "libraryCountLabel").text()


def test_a_file_that_is_not_audio_is_one_sentence(qtbot, window, tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a sound")
    _drop_file(child(window, "librarySearchEdit"), text)
    similar = window.studio.library_controller.similar
    qtbot.waitUntil(lambda: not similar.busy, timeout=WAIT_MS)
    message = window.statusBar().currentMessage()
    assert "notes.txt" in message and "Traceback" not in message and message.endswith(".")
    assert not similar.active


def test_old_takes_are_embedded_off_the_gui_thread_with_progress(qtbot, window, monkeypatch):
    root = window.studio.library.root
    with sqlite3.connect(root / "library.sqlite3") as conn:  # takes kept before sound search
        conn.execute("DELETE FROM embeddings")
    threads, passes = [], []
    real = search_module.embed_missing

    def watched(library, encoders=None, progress=None):
        threads.append(threading.get_ident())
        return real(library, encoders, progress)

    monkeypatch.setattr(search_module, "embed_missing", watched)
    similar = window.studio.library_controller.similar
    similar.search.progress.connect(lambda done, total: passes.append((done, total)))
    bar = child(window, "librarySoundProgress")
    seen = []
    bar.valueChanged.connect(lambda _value: seen.append(bar.isVisible()))
    child(window, "takesList").setCurrentRow(0)
    window.findChild(QAction, "findSimilarAction").trigger()
    found = results(qtbot, window)
    assert threads and threading.main_thread().ident not in threads
    total = len(PROMPTS) * SEEDS
    assert passes[-1] == (total, total)  # every old take, counted in the window
    assert True in seen and not bar.isVisible()  # shown while it ran, gone once done
    with sqlite3.connect(root / "library.sqlite3") as conn:
        assert conn.execute("SELECT count(*) FROM embeddings").fetchone()[0] == total
    assert [r.prompt for r in found[:SEEDS - 1]] == [PROMPTS[0]] * (SEEDS - 1)
