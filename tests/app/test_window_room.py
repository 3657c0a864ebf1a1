"""Room for the centre (issue 34): on a 1366x768 laptop the Take and Library pages get the room,
the settings and session columns fold away (View menu, Ctrl+[ / Ctrl+]) and come back, and a
folded column stays folded in the next run; the Advanced group is folded by default and
remembered too."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QApplication

from tests.browser_support import open_window, show_at
from tests.gui_support import child

LAPTOP = (1366, 768)


def action(win, name: str) -> QAction:
    found = win.findChild(QAction, name)
    assert found is not None, name
    return found


def test_on_a_laptop_screen_the_centre_gets_the_room(qtbot, window):
    from app.shell.columns import default_sizes

    assert default_sizes(1366) != default_sizes(1920)  # a laptop's layout of its own
    show_at(qtbot, window, LAPTOP)
    settings, centre, session = window.splitter.sizes()
    # more than either side column together; before issue 34 the centre had about 640
    assert centre >= 780 and centre > settings + session
    # the side columns are whole, not squeezed under their contents' minimum
    for index in (0, 2):
        widget = window.splitter.widget(index)
        assert widget.width() >= widget.minimumSizeHint().width()


@pytest.mark.parametrize(("name", "index", "keys"), [
    ("settingsColumnAction", 0, "Ctrl+["), ("sessionColumnAction", 2, "Ctrl+]")])
def test_a_side_column_folds_away_and_comes_back(qtbot, window, name, index, keys):
    show_at(qtbot, window, LAPTOP)
    splitter = window.splitter
    toggle = action(window, name)
    assert toggle.shortcut().toString() == keys and toggle.isChecked()
    width, centre = splitter.sizes()[index], splitter.sizes()[1]
    toggle.trigger()
    QApplication.processEvents()
    assert splitter.sizes()[index] == 0 and not toggle.isChecked()
    assert splitter.sizes()[1] == centre + width  # the centre took the whole column
    toggle.trigger()
    QApplication.processEvents()
    assert splitter.sizes()[index] == width and toggle.isChecked()  # as wide as it was


def test_the_keys_fold_the_columns(qtbot, window):
    show_at(qtbot, window, LAPTOP)
    window.activateWindow()
    qtbot.keyClick(window, Qt.Key.Key_BracketLeft, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(window, Qt.Key.Key_BracketRight, Qt.KeyboardModifier.ControlModifier)
    QApplication.processEvents()
    sizes = window.splitter.sizes()
    assert sizes[0] == 0 and sizes[2] == 0 and sizes[1] > 1300


def test_the_centre_never_folds(qtbot, window):
    show_at(qtbot, window, LAPTOP)
    splitter = window.splitter
    splitter.moveSplitter(splitter.width(), 1)  # the centre dragged as narrow as it goes
    QApplication.processEvents()
    assert splitter.sizes()[1] >= splitter.widget(1).minimumSizeHint().width() > 0


def test_folded_columns_and_the_advanced_group_are_remembered(qtbot, window):
    show_at(qtbot, window, LAPTOP)
    assert not child(window, "advancedBody").isVisible()  # folded by default
    action(window, "sessionColumnAction").trigger()
    child(window, "generationAdvancedToggle").click()
    assert child(window, "precisionCombo").isVisible()
    window.close()
    second = open_window(qtbot)
    try:
        show_at(qtbot, second, LAPTOP)
        assert second.splitter.sizes()[2] == 0 and second.splitter.sizes()[0] > 0
        assert not action(second, "sessionColumnAction").isChecked()
        assert action(second, "settingsColumnAction").isChecked()
        assert child(second, "precisionCombo").isVisible()
        assert child(second, "generationAdvancedToggle").isChecked()
        action(second, "sessionColumnAction").trigger()  # back, at a usable width
        QApplication.processEvents()
        session = second.splitter.widget(2)
        assert session.width() >= session.minimumSizeHint().width()
    finally:
        second.studio.shutdown()


def test_the_library_pages_own_folds_are_remembered(qtbot, window):
    """On a laptop the Library page opens with both side columns folded (a browser wants the
    width); the user's own choice for it comes back in the next run, and the Take page keeps
    its layout whichever page the window was closed on."""
    show_at(qtbot, window, LAPTOP)
    window.show_library()
    QApplication.processEvents()
    assert window.splitter.sizes()[0] == 0 and window.splitter.sizes()[2] == 0
    action(window, "settingsColumnAction").trigger()  # the user wants the settings here
    window.close()  # on the Library page
    second = open_window(qtbot)
    try:
        show_at(qtbot, second, LAPTOP)
        sizes = second.splitter.sizes()
        assert sizes[0] > 0 and sizes[2] > 0  # the Take page as it was
        second.show_library()
        QApplication.processEvents()
        sizes = second.splitter.sizes()
        assert sizes[0] > 0 and sizes[2] == 0  # the Library page as the user left it
    finally:
        second.studio.shutdown()


def test_screenshots_at_laptop_and_full_hd_sizes(qtbot, window, tmp_path):
    """The window at both sizes, grabbed (kept in SA3_SHOTS_DIR when it is set, for a person
    to look at); the centre is the widest column at both."""
    import os
    from pathlib import Path

    folder = Path(os.environ.get("SA3_SHOTS_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    for size in (LAPTOP, (1920, 1080)):
        show_at(qtbot, window, size)
        settings, centre, session = window.splitter.sizes()
        assert centre > max(settings, session)
        shot = window.grab()
        assert not shot.isNull() and shot.width() == size[0]
        shot.save(str(folder / f"window-{size[0]}x{size[1]}.png"))
