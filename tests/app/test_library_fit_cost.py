"""Fitting the Library table's columns to their contents costs what is on screen, not what is
listed: after a few pages are scrolled through, every refit (a new listing, a resize, the
scrollbar appearing as an import lists its first sounds) asked the model about each of up to
1,000 listed rows, a dozen questions a cell, and the window stalled for it (bench/
bench_library_window.py's import_stall measures the window's longest stall)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.bench_library_window import build_big_library
from tests.app.test_browser import RecordingPlayer
from tests.browser_support import FULL_HD, settle, show_at

ROWS = 1500


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("fit-home")
    build_big_library(home / "library", ROWS, tmp_path_factory.mktemp("fit-work"))
    return home


@pytest.fixture
def page(qtbot, home, monkeypatch):
    monkeypatch.setenv("SA3_STUDIO_HOME", str(home))
    from app.models.controller import FIRST_RUN_KEY
    from app.shell.main_window import MainWindow
    from app.shell.studio import Studio
    from engines.settings import update_settings

    update_settings(home, {FIRST_RUN_KEY: True})
    win = MainWindow()
    qtbot.addWidget(win)
    win.studio = Studio(win, player=RecordingPlayer(), start_worker=False)
    win.studio.after_paint.stop()
    show_at(qtbot, win, FULL_HD)
    page = win.studio.library_page()
    win.show_library()
    settle()
    yield page
    win.studio.shutdown()


def test_a_refit_asks_only_about_the_rows_on_screen(page, monkeypatch):
    model, view = page.panel.model, page.panel.view
    model.fetch_all()  # every row of the library listed, as after scrolling to the end
    assert model.rowCount() == ROWS
    on_screen = view.rowAt(view.viewport().height() - 1) - view.rowAt(0) + 1
    assert 5 < on_screen < 100
    asked: set[int] = set()

    class Watched(list):  # the model reads a row's record for each question about it
        def __getitem__(self, row):
            asked.add(row)
            return super().__getitem__(row)

    monkeypatch.setattr(model, "records", Watched(model.records))
    view.fit_prompt()
    assert asked, "the refit measured nothing (the check itself is broken)"
    assert len(asked) <= on_screen + 1  # (a partly shown last row counts)
