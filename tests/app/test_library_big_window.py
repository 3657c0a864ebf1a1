"""The Library page on a 50,000-row library (takes and imported sounds, issue 34): it opens and
answers each keystroke in the search box without reading the whole library, lists more as the
table is scrolled to its end, and its count line is right (the library's own count is the
oracle). How long these take is measured against the goals by bench/bench_library_window.py,
not asserted here."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.library.paged_listing import MORE_ROWS, PAGE_LIMIT
from bench.bench_library_window import build_big_library
from tests.app.test_browser import RecordingPlayer
from tests.browser_support import FULL_HD, settle, show_at
from tests.gui_support import child

ROWS = 50_000


@pytest.fixture(scope="module")
def big_home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("big-home")
    build_big_library(home / "library", ROWS, tmp_path_factory.mktemp("big-work"))
    return home


@pytest.fixture
def studio(qtbot, big_home, monkeypatch):
    """The window on the big library, shown at full HD, its Library page not built yet."""
    monkeypatch.setenv("SA3_STUDIO_HOME", str(big_home))
    from app.models.controller import FIRST_RUN_KEY
    from app.shell.main_window import MainWindow
    from app.shell.studio import Studio
    from engines.settings import update_settings

    update_settings(big_home, {FIRST_RUN_KEY: True})
    import app.shell.library_page  # noqa: F401 - loaded ahead, as the window's Preload does
    win = MainWindow()
    qtbot.addWidget(win)
    win.studio = Studio(win, player=RecordingPlayer(), start_worker=False)
    win.studio.after_paint.stop()  # the page is built by the test
    show_at(qtbot, win, FULL_HD)
    yield win
    win.studio.shutdown()


def test_a_big_library_opens_with_a_first_page_and_lists_more_on_scrolling(studio):
    page = studio.studio.library_page()
    studio.show_library()
    page.panel.view.viewport().repaint()
    settle()
    model, view = page.panel.model, page.panel.view
    assert model.rowCount() == PAGE_LIMIT
    assert child(studio, "libraryCountLabel").text() == f"{ROWS:,} takes ({PAGE_LIMIT} listed)"
    newest = page.controller.library.search(limit=PAGE_LIMIT + MORE_ROWS)
    assert [model.record(row).id for row in range(PAGE_LIMIT)] == \
        [record.id for record in newest[:PAGE_LIMIT]]

    view.scrollToBottom()  # the view asks for the next page at its end
    settle()
    assert model.rowCount() == PAGE_LIMIT + MORE_ROWS
    assert [model.record(row).id for row in range(model.rowCount())] == \
        [record.id for record in newest]
    assert child(studio, "libraryCountLabel").text() == \
        f"{ROWS:,} takes ({PAGE_LIMIT + MORE_ROWS} listed)"


def test_typing_in_the_search_box_lists_and_counts_right(studio):
    page = studio.studio.library_page()
    studio.show_library()
    settle()
    library, edit = page.controller.library, child(studio, "librarySearchEdit")
    for end in range(1, len("rain on tin") + 1):
        edit.setText("rain on tin"[:end])
        page.panel.view.viewport().repaint()
    matching = library.count("rain on tin")
    page.controller.listing.count_now()
    label = child(studio, "libraryCountLabel").text()
    assert label.startswith(f"{matching:,} of {ROWS:,} takes")

    edit.setText("r")  # a broad search: counted once typing pauses, not on the keystroke
    assert child(studio, "libraryCountLabel").text() == f"{PAGE_LIMIT}+ of {ROWS:,} takes"
    page.controller.listing.count_now()
    assert child(studio, "libraryCountLabel").text() == \
        f"{library.count('r'):,} of {ROWS:,} takes ({PAGE_LIMIT} listed)"


def test_the_source_filter_on_a_big_library(studio):
    page = studio.studio.library_page()
    settle()  # the filter lists fill after the page is painted
    source = child(studio, "librarySourceFilter")
    source.setCurrentIndex(source.findData("imported"))
    model = page.panel.model
    assert all(model.record(row).is_sound_file for row in range(model.rowCount()))
    page.controller.listing.count_now()
    imported = page.controller.library.count(source="imported")
    assert child(studio, "libraryCountLabel").text().startswith(f"{imported:,} of {ROWS:,}")
    assert source.count() == 4  # any, generated, imported, and the one folder imported
