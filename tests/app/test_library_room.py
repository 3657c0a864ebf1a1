"""The library table's room (issue 34): at 1366x768 the name gets the spare width (at least
PROMPT_FLOOR) and nothing scrolls sideways - the Library page opens with the side columns
folded and every default column shows; with them back the columns the inspector repeats fold
away - and at 1920x1080
nothing is cut that fits (the name first, then the tags). Screenshots go to /tmp/h/shots."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from app.library.table import (
    CREATED,
    FAV,
    LENGTH,
    MODEL,
    PROMPT,
    RATING,
    SEED,
    TAGS,
    THUMB_SIZE,
    TIER,
)
from app.library.table_room import FOLD_ORDER
from app.library.table_view import PROMPT_FLOOR, LibraryTableView
from tests.app.test_library_browser import _fully_shown, _text_fits
from tests.app.test_library_inspector import keep_take, studio_window  # noqa: F401 - `win`
from tests.browser_support import FULL_HD, settle, show_at
from tests.gui_support import child

LAPTOP = (1366, 768)
DEFAULT_COLUMNS = (FAV, RATING, PROMPT, LENGTH, TAGS, SEED, MODEL, TIER, CREATED)
SHOTS = Path("/tmp/h/shots")


def _library_page(qtbot, win, size, tmp_path, tags=("foley", "footsteps", "gravel", "outdoor")):
    record = keep_take(win, tmp_path)
    win.studio.library.update(record.id, tags=list(tags), rating=4)
    win.studio.library_controller.refresh_library()
    show_at(qtbot, win, size)
    win.show_library()
    settle()
    view = child(win, "libraryView")
    view.selectRow(0)
    settle()
    return view


def _fold_side_columns(win, folded: bool) -> None:
    for name in ("settingsColumnAction", "sessionColumnAction"):
        child(win, name).setChecked(not folded)
    settle()


def _shot(win, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    win.grab().save(str(SHOTS / f"{name}.png"))


def _no_sideways_scrolling(view) -> bool:
    bar = view.horizontalScrollBar()
    return bar.maximum() == 0 and not bar.isVisible()


def _columns_shown(win) -> tuple[bool, bool]:
    return (child(win, "settingsColumnAction").isChecked(),
            child(win, "sessionColumnAction").isChecked())


def test_at_1366_the_library_opens_with_every_column_and_the_name_first(qtbot, win, tmp_path):
    view = _library_page(qtbot, win, LAPTOP, tmp_path)
    # a laptop's Library page is a browser: both side columns fold for it...
    assert _columns_shown(win) == (False, False)
    _shot(win, "library_1366")
    header = view.horizontalHeader()
    assert view.folded_columns() == set()
    assert header.sectionSize(PROMPT) >= PROMPT_FLOOR
    assert _name_fits(qtbot, view)  # the name first: the tags gave way
    assert _no_sideways_scrolling(view)
    for column in DEFAULT_COLUMNS:
        assert _fully_shown(view, column), column
    for column in (SEED, LENGTH, MODEL, TIER, CREATED, RATING):
        assert _text_fits(view, column), column
    assert 240 <= child(win, "libraryInspector").width() <= 360

    win.centre_tabs.setCurrentIndex(0)  # ...and the Take page has its own columns back
    settle()
    assert _columns_shown(win) == (True, True)
    win.show_library()
    settle()
    assert _columns_shown(win) == (False, False)


def test_at_1366_with_the_side_columns_back_nothing_scrolls_sideways(qtbot, win, tmp_path):
    view = _library_page(qtbot, win, LAPTOP, tmp_path)
    _fold_side_columns(win, False)
    _shot(win, "library_1366_sides_open")
    header = view.horizontalHeader()
    assert header.sectionSize(PROMPT) >= PROMPT_FLOOR
    assert _no_sideways_scrolling(view)
    # what folded away is only what the inspector beside the table shows anyway
    assert view.folded_columns() and view.folded_columns() <= set(FOLD_ORDER)
    for column in DEFAULT_COLUMNS:
        assert column in view.folded_columns() or _fully_shown(view, column), column
    # the user's choice for the Library page holds when they come back to it
    win.centre_tabs.setCurrentIndex(0)
    settle()
    win.show_library()
    settle()
    assert _columns_shown(win) == (True, True)


def _name_fits(qtbot, view) -> bool:
    """The name reads whole beside its thumbnail (drawn by then)."""
    model = view.model()
    qtbot.waitUntil(lambda: model.thumbnails.idle()
                    and model.index(0, PROMPT).data(Qt.ItemDataRole.DecorationRole) is not None,
                    timeout=10_000)
    text = view.fontMetrics().horizontalAdvance(model.index(0, PROMPT).data())
    size = view.horizontalHeader().sectionSize(PROMPT)
    return size >= view.sizeHintForColumn(PROMPT) and size >= text + THUMB_SIZE.width()


def test_at_1920_nothing_is_cut_that_fits(qtbot, win, tmp_path):
    view = _library_page(qtbot, win, FULL_HD, tmp_path, tags=("foley", "gravel"))
    _shot(win, "library_1920")
    assert _no_sideways_scrolling(view) and view.folded_columns() == set()
    assert _name_fits(qtbot, view)
    for column in DEFAULT_COLUMNS:
        assert _fully_shown(view, column), column
    for column in (SEED, LENGTH, MODEL, TIER, CREATED, RATING, TAGS):
        assert _text_fits(view, column), column


def test_at_1920_long_tags_give_way_to_the_name(qtbot, win, tmp_path):
    tags = ("foley", "footsteps", "gravel", "outdoor", "boots", "slow", "leather", "walk")
    view = _library_page(qtbot, win, FULL_HD, tmp_path, tags=tags)
    assert _name_fits(qtbot, view)  # the name first...
    assert view.horizontalHeader().sectionSize(TAGS) >= 60  # ...the tags still there
    assert _no_sideways_scrolling(view)


def test_columns_folded_for_room_come_back_in_the_next_run(qtbot, win, tmp_path):
    view = _library_page(qtbot, win, LAPTOP, tmp_path)
    _fold_side_columns(win, False)
    assert view.folded_columns()
    state = view.column_state()
    again = LibraryTableView()
    qtbot.addWidget(again)
    again.setModel(view.model())
    again.set_up_columns(state)
    again.resize(1600, 400)
    again.show()
    settle()
    header = again.horizontalHeader()
    assert [c for c in DEFAULT_COLUMNS if header.isSectionHidden(c)] == []


@pytest.mark.parametrize("room, folded", [(2000, []), (650, [TIER, CREATED]),
                                          (100, list(FOLD_ORDER))])
def test_columns_fold_in_the_order_the_inspector_repeats_them(room, folded):
    from app.library.table_room import columns_to_fold

    widths = {column: 60 for column in FOLD_ORDER}  # 8 columns of 60 px
    assert columns_to_fold(room, widths, floor=240) == folded


def test_use_as_init_brings_back_the_folded_settings_column(qtbot, win, tmp_path):
    _library_page(qtbot, win, LAPTOP, tmp_path)
    assert _columns_shown(win) == (False, False)
    child(win, "libraryUseAsInitButton").click()
    settle()
    assert _columns_shown(win)[0]  # the init audio is in view where it is used
    assert win.studio.session.init_take is not None
