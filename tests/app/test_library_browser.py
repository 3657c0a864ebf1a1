"""The library as a sound browser (issue 22), room to browse: the window at 1920x1080 and at
its minimum size (pytest-qt, offscreen, demo model set) - every library column without sideways
scrolling, session rows that tell takes of one prompt apart, tooltips that wrap, the position
readout and the drag grip."""

from __future__ import annotations

import pytest
from PySide6 import QtGui
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QFont, QTextDocument

from app.library.table import (
    CREATED,
    FAV,
    LENGTH,
    MATCH,
    MODEL,
    PROMPT,
    RATING,
    SEED,
    TAGS,
    TIER,
)
from app.library.table_view import PROMPT_FLOOR
from tests.app.test_gui import WAIT_MS, generate
from tests.browser_support import FULL_HD, settle, show_at
from tests.gui_support import child

PROMPT_TEXT = "coin pickup, bright, short, with a little sparkle at the end"
WANTED = {FAV: "favourite", RATING: "rating", PROMPT: "name/prompt", LENGTH: "length",
          TAGS: "tags", SEED: "seed", MODEL: "model", TIER: "tier", CREATED: "date"}


def tooltip_width(text: str, font: QFont) -> float:
    """How wide a tooltip is laid out on a 1920 px screen: its widest line (plain text, which
    Qt never wraps), or its rich text's."""
    document = QTextDocument()
    document.setDefaultFont(font)
    document.setTextWidth(FULL_HD[0])
    if QtGui.Qt.mightBeRichText(text):  # (in QtGui's Qt namespace, not QtCore's)
        document.setHtml(text)
    else:
        document.setPlainText(text)
    return document.idealWidth()


def _library_with_tags(qtbot, win) -> None:
    generate(qtbot, win, PROMPT_TEXT, seconds=0.5, seed=2742749, variations=3)
    library = win.studio.library
    for record in library.search(limit=None):
        library.update(record.id, tags=["ui", "pickup", "coin"], rating=4, favourite=True)
    win.studio.library_controller.refresh_library()


def _fully_shown(view, column: int) -> bool:
    header = view.horizontalHeader()
    left = header.sectionViewportPosition(column)
    return (not header.isSectionHidden(column) and left >= 0
            and left + header.sectionSize(column) <= view.viewport().width())


def _text_fits(view, column: int) -> bool:
    header, model = view.horizontalHeader(), view.model()
    metrics = view.fontMetrics()
    widest = max(metrics.horizontalAdvance(str(model.index(row, column).data() or ""))
                 for row in range(model.rowCount()))
    return header.sectionSize(column) >= widest


def test_every_library_column_shows_without_sideways_scrolling_at_full_hd(qtbot, window):
    _library_with_tags(qtbot, window)
    show_at(qtbot, window, FULL_HD)
    window.show_library()
    settle()
    view = child(window, "libraryView")
    assert view.isVisible() and view.model().rowCount() == 3
    assert view.horizontalScrollBar().maximum() == 0
    assert not view.horizontalScrollBar().isVisible()
    for column, what in WANTED.items():
        assert _fully_shown(view, column), what
    for column in (SEED, LENGTH, MODEL, TIER, CREATED, TAGS, RATING):
        assert _text_fits(view, column), WANTED[column]  # whole, not cut
    assert view.horizontalHeader().sectionSize(PROMPT) >= PROMPT_FLOOR
    # a sound search adds the Match column, and still no sideways scrolling
    window.studio.library_controller.find_similar_selected()  # nothing selected: says so
    view.selectRow(0)
    window.studio.library_controller.find_similar_selected()
    qtbot.waitUntil(lambda: window.studio.library_controller.similar.active, timeout=WAIT_MS)
    settle()
    assert _fully_shown(view, MATCH) and _fully_shown(view, TAGS)
    assert view.horizontalScrollBar().maximum() == 0


def test_variations_of_one_prompt_read_differently_at_the_minimum_size(qtbot, window, no_gpu):
    generate(qtbot, window, PROMPT_TEXT, seconds=0.5, seed=2742749, variations=3)
    takes = child(window, "takesList")
    original = window.studio.session.current_take()
    child(window, "compareTiersButton").click()  # the same latents through the coarse tier
    qtbot.waitUntil(lambda: takes.count() == 4
                    and not window.studio.compare_controller.pending, timeout=WAIT_MS)
    show_at(qtbot, window, "min")
    show_at(qtbot, window, "min")  # the takes may have changed the minimum
    assert takes.isVisible()
    texts = [takes.visible_texts(row) for row in range(takes.count())]
    names = [name for name, _detail in texts]
    assert all(name != PROMPT_TEXT for name in names)  # the name is cut at this size...
    assert len(set(texts)) == len(texts), texts  # ...and yet every row reads differently
    details = [detail for _name, detail in texts]
    assert sum(detail.startswith("coarse") for detail in details) == 1, details
    assert sum(detail.startswith(original.codec_tier) for detail in details) == 1, details
    assert not takes.horizontalScrollBar().isVisible()


def test_the_take_tooltip_wraps(qtbot, window):
    generate(qtbot, window, PROMPT_TEXT * 3, seconds=0.5, seed=5)
    item = child(window, "takesList").item(0)
    tip = item.toolTip()
    take = window.studio.session.current_take()
    assert take.engine_words()[:40] in tip and "dit" in tip.lower()
    font = child(window, "takesList").font()
    assert tooltip_width(tip, font) <= 520  # a paragraph, not a 1,600 px line
    record_tip = child(window, "libraryView").model().index(0, PROMPT).data(
        Qt.ItemDataRole.ToolTipRole)
    assert tooltip_width(record_tip, font) <= 520


def test_the_position_readout_shows_the_selected_takes_length(qtbot, window):
    generate(qtbot, window, "door slam", seconds=2.0, seed=3)
    generate(qtbot, window, "click", seconds=0.5, seed=4)
    label = child(window, "positionLabel")
    qtbot.waitUntil(lambda: label.text().endswith("/ 0.50 s"), timeout=WAIT_MS)
    child(window, "takesList").setCurrentRow(0)
    qtbot.waitUntil(lambda: label.text() == "0.00 / 2.00 s", timeout=WAIT_MS)


@pytest.mark.parametrize("size", ["min", FULL_HD], ids=["minimum", "1920x1080"])
def test_the_drag_grip_covers_no_plot_handle_or_end_marker(qtbot, window, size):
    generate(qtbot, window, "rain", seconds=1.0, seed=2)
    child(window, "fadeOutSpin").setValue(200.0)  # the fade-out handle near the end
    window.studio.finish_controller.apply_now()
    show_at(qtbot, window, size)
    waveform = child(window, "waveformView")
    grip = child(window, "waveformDragHandle")
    assert grip.isVisible()
    area = grip.geometry()
    plots = waveform.plot_rects()
    assert len(plots) == 2 and all(not plot.intersects(area) for plot in plots)
    take = window.studio.session.current_take()
    viewport = waveform.plot_viewport()
    for seconds in (take.seconds, take.seconds - 0.2):  # the end marker, the fade-out handle
        for channel in (0, 1):
            point = viewport.mapTo(waveform, waveform.position_for_seconds(seconds, channel))
            assert not area.contains(point)
            assert not area.contains(point + QPoint(0, -20))


@pytest.mark.parametrize("size", ["min", (1280, 720), FULL_HD],
                         ids=["minimum", "1280x720", "1920x1080"])
def test_nothing_on_the_library_page_is_squeezed(qtbot, window, size):
    from tests.app.test_layout import squeezed

    show_at(qtbot, window, size)
    window.show_library()
    settle()
    assert child(window, "libraryView").isVisible()
    # a narrow window's Library page folds the side columns (app.shell.columns): what they
    # hold is out of view, not squeezed
    splitter = window.splitter
    folded = tuple(splitter.widget(index) for index in window.columns.folded())
    assert size == FULL_HD or folded
    found, looked = squeezed(window, skip=folded)
    assert looked > 25 and not found, "\n".join(found)
