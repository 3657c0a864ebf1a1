"""The window as a game designer meets it: nothing squeezed at any size it can take, a dark
theme in which disabled controls look disabled, a layout and choices remembered between runs,
the keyboard shortcuts on F1, and a module structure that stays small and free of circles."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from PySide6.QtCore import QEvent, QPoint, Qt
from PySide6.QtGui import QAction, QColor, QHelpEvent, QPalette
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QFileDialog,
    QLabel,
    QLineEdit,
    QPushButton,
    QToolButton,
    QWidget,
)

from tests.browser_support import show_at

APP_DIR = Path(__file__).resolve().parents[2] / "app"
CHECKED = (QPushButton, QToolButton, QLabel, QComboBox, QLineEdit, QAbstractSpinBox)
SIZES = ["min", (1280, 720), (1920, 1080)]
WAIT_MS = 60_000


def open_window(qtbot):
    from app import build_main_window

    win = build_main_window()
    qtbot.addWidget(win)
    return win


def squeezed(win, skip: tuple[QWidget, ...] = ()) -> tuple[list[str], int]:
    """Visible controls of the window (not of its dialogs) smaller than their minimum size
    hint, and how many controls were looked at; those inside `skip` (folded columns) are not
    looked at."""
    found, looked = [], 0
    for widget in win.findChildren(QWidget):
        if not isinstance(widget, CHECKED) or any(w.isAncestorOf(widget) for w in skip):
            continue
        internal = widget.objectName().startswith("qt_")  # a spin box's own line edit
        if internal or not widget.isVisible() or widget.window() is not win:
            continue
        looked += 1
        hint = widget.minimumSizeHint()
        if widget.width() < hint.width() or widget.height() < hint.height():
            text = widget.text() if hasattr(widget, "text") else ""
            found.append(f"{type(widget).__name__} {widget.objectName() or text!r}: "
                         f"{widget.width()}x{widget.height()} < {hint.width()}x{hint.height()}")
    return found, looked


# ---------------------------------------------------------------------------- layout
def test_the_window_fits_a_720p_screen(window):
    hint = window.minimumSizeHint()
    # a 1280x720 screen less a title bar and a task bar
    assert hint.width() <= 1280 and hint.height() <= 660, hint


@pytest.mark.parametrize("size", SIZES, ids=["minimum", "1280x720", "1920x1080"])
def test_nothing_is_squeezed(qtbot, window, size):
    show_at(qtbot, window, size)
    expected = window.minimumSizeHint().toTuple() if size == "min" else size
    assert window.size().toTuple() == expected
    found, looked = squeezed(window)
    assert looked > 40  # the generation panel, the transport, the Finish panel, the takes
    assert not found, "\n".join(found)
    # the SFX/Music lengths: whole and side by side
    for button in window.generation_panel.preset_buttons:
        assert button.width() >= button.minimumSizeHint().width()
    row = sorted(window.generation_panel.preset_buttons[:4], key=lambda b: b.x())
    assert all(a.geometry().right() < b.x() for a, b in zip(row, row[1:], strict=False))


def test_dragging_the_column_handles_squeezes_nothing(qtbot, window):
    show_at(qtbot, window, (1280, 720))
    splitter = window.splitter
    splitter.moveSplitter(0, 1)  # settings column dragged to the window's edge
    splitter.moveSplitter(splitter.width(), 2)  # takes column dragged to the other edge
    QApplication.processEvents()
    # the side columns fold away whole (issue 34: room for the centre), never half squeezed;
    # their View menu items say they are folded
    assert splitter.sizes()[0] == 0 and splitter.sizes()[2] == 0 and splitter.sizes()[1] > 0
    assert not window.findChild(QAction, "settingsColumnAction").isChecked()
    assert not window.findChild(QAction, "sessionColumnAction").isChecked()
    assert splitter.widget(0).visibleRegion().isEmpty()  # not on screen at all
    assert splitter.widget(2).visibleRegion().isEmpty()
    found, _ = squeezed(window, skip=(splitter.widget(0), splitter.widget(2)))
    assert not found, "\n".join(found)
    window.findChild(QAction, "settingsColumnAction").trigger()  # back at a usable width
    window.findChild(QAction, "sessionColumnAction").trigger()
    QApplication.processEvents()
    assert all(size > 0 for size in splitter.sizes())
    found, _ = squeezed(window)
    assert not found, "\n".join(found)
    splitter.moveSplitter(splitter.width(), 1)  # the centre as narrow as it goes
    QApplication.processEvents()
    found, _ = squeezed(window)
    assert not found, "\n".join(found)


def test_a_cut_off_model_name_is_whole_in_the_tooltip(qtbot, window):
    show_at(qtbot, window, "min")
    combo = window.findChild(QComboBox, "modelCombo")
    name = combo.currentText()
    assert combo.fontMetrics().horizontalAdvance(name) > combo.width()  # it is cut off here
    event = QHelpEvent(QEvent.Type.ToolTip, QPoint(5, 5), combo.mapToGlobal(QPoint(5, 5)))
    QApplication.sendEvent(combo, event)
    assert combo.toolTip() == name


# ---------------------------------------------------------------------------- theme
def test_theme_is_dark_and_complete(window):
    from app.common.theme import COLORS, THEME_PROPERTY, stylesheet

    app = QApplication.instance()
    assert app.property(THEME_PROPERTY)
    sheet = app.styleSheet()
    assert sheet == stylesheet() and COLORS["accent"] in sheet
    assert "@" not in sheet  # every colour token was filled in
    window_colour = app.palette().color(QPalette.ColorRole.Window)
    assert window_colour.lightness() < 60  # dark, like the black plots
    assert not app.windowIcon().isNull() and not window.windowIcon().isNull()
    icons = APP_DIR.parent / "resources" / "icons"
    for name in ("play", "pause", "loop", "generate", "dice", "export", "copy", "delete", "app"):
        assert (icons / f"{name}.svg").is_file(), name
    assert not window.generation_panel.generate_button.icon().isNull()


def _accent_pixels(widget) -> int:
    image = widget.grab().toImage()
    accent = QColor("#7fc8ff")
    return sum(1 for x in range(image.width()) for y in range(image.height())
               if abs(image.pixelColor(x, y).red() - accent.red()) < 25
               and abs(image.pixelColor(x, y).green() - accent.green()) < 25
               and abs(image.pixelColor(x, y).blue() - accent.blue()) < 25)


def test_a_disabled_slider_looks_disabled(qtbot, window):
    show_at(qtbot, window, (1280, 720))
    slider = window.findChild(object, "initNoiseSlider")
    group = QPalette.ColorGroup
    role = QPalette.ColorRole.WindowText
    assert slider.palette().color(group.Disabled, role) != slider.palette().color(group.Active,
                                                                                    role)
    slider.setEnabled(True)
    lit = _accent_pixels(slider)
    slider.setEnabled(False)
    assert lit > 20  # the enabled slider's filled part is the waveform's blue
    assert _accent_pixels(slider) == 0  # greyed out when there is no init audio


# ---------------------------------------------------------------------------- persistence
def test_layout_and_choices_come_back_in_the_next_run(qtbot, home, tmp_path, monkeypatch):
    from tests.app.test_gui import generate

    first = open_window(qtbot)
    show_at(qtbot, first, (1300, 760))
    first.splitter.setSizes([360, 560, 380])
    QApplication.processEvents()
    columns = first.splitter.sizes()
    first.studio.finish_controller.choose_preset("Game SFX one-shot")
    first.findChild(object, "autoplayCheck").setChecked(False)
    generate(qtbot, first, "door slam", seconds=0.5, seed=3)
    out = tmp_path / "delivered"
    out.mkdir()
    take = first.studio.session.current_take()
    # the chosen preset finishes new takes too: saved once that is done
    qtbot.waitUntil(lambda: take.finished is not None, timeout=WAIT_MS)
    assert first.studio.export_controller.save_take(take, out / "door.wav") is not None
    first.close()
    assert (home / "window.ini").is_file()

    second = open_window(qtbot)
    try:
        # restoreGeometry keeps the window on the screen it finds, and the offscreen test
        # screen is only 800 px wide: the height says the geometry came back
        screen = QApplication.primaryScreen().availableGeometry()
        assert second.size().toTuple() == (min(1300, screen.width() - 2), 760)
        show_at(qtbot, second, (1300, 760))
        assert second.splitter.sizes() == columns
        assert second.findChild(QComboBox, "presetCombo").currentText() == "Game SFX one-shot"
        assert second.findChild(QComboBox, "modelCombo").currentData() == "demo"
        generate(qtbot, second, "door slam", seconds=0.5, seed=4)
        again = second.studio.session.current_take()
        qtbot.waitUntil(lambda: again.finished is not None, timeout=WAIT_MS)
        assert again.finishing.preset == "Game SFX one-shot"  # the remembered preset, applied
        asked = []

        def fake_dialog(_parent, _title, suggested, *_args):
            asked.append(suggested)
            return "", ""

        monkeypatch.setattr(QFileDialog, "getSaveFileName", fake_dialog)
        second.studio.export_controller.save_as()
        assert asked and Path(asked[0]).parent == out  # Save As opens where it saved last
    finally:
        second.studio.shutdown()


def test_a_model_that_cannot_run_here_is_not_restored(qtbot, home):
    from app.common.window_state import KEY_MODEL, settings_path

    settings_path().write_text(f"[{KEY_MODEL.split('/')[0]}]\nmodel=sm-sfx\n")
    win = open_window(qtbot)
    try:
        assert win.findChild(QComboBox, "modelCombo").currentData() == "demo"
    finally:
        win.studio.shutdown()


def test_a_window_never_shown_remembers_nothing(qtbot, home):
    from PySide6.QtCore import QSettings

    from app.common.window_state import KEY_GEOMETRY, KEY_PRESET, KEY_SPLITTER, settings_path

    win = open_window(qtbot)
    win.close()
    # (other panels may keep their own keys in the same file)
    settings = QSettings(str(settings_path()), QSettings.Format.IniFormat)
    assert not {KEY_GEOMETRY, KEY_SPLITTER, KEY_PRESET} & set(settings.allKeys())


def test_a_damaged_settings_file_still_opens_the_window(qtbot, home):
    from app.common.window_state import settings_path

    settings_path().write_bytes(b"[window]\ngeometry=\x00\xff garbage\nsplitter=12\n")
    win = open_window(qtbot)
    try:
        assert win.splitter.count() == 3 and all(win.splitter.sizes())
    finally:
        win.studio.shutdown()


# ---------------------------------------------------------------------------- shortcuts
def test_f1_opens_the_shortcut_sheet(qtbot, window):
    from PySide6.QtGui import QShortcut

    from app.shell.shortcuts_sheet import ShortcutsSheet

    show_at(qtbot, window, (1280, 720))
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    qtbot.keyClick(window, Qt.Key.Key_F1)
    sheet = window.findChild(ShortcutsSheet, "shortcutsSheet")
    assert sheet is not None and sheet.isVisible()
    rows = sheet.rows()
    keys = {row[0] for row in rows}
    for expected in ("Space", "Ctrl+Enter", "L", "Up", "Down", "F1", "F2", "Ctrl+O", "Ctrl+S",
                     "Ctrl+Q"):
        assert expected in keys, (expected, rows)
    assert ("Space", "Play / pause", "Take") in rows
    assert ("Ctrl+Enter", "Generate", "Take") in rows
    # every QShortcut of the window is there, even one added after the sheet was written
    extra = QShortcut("Ctrl+Shift+K", window)
    extra.setWhatsThis("Test key")
    sheet.hide()
    window.menus.shortcuts_action.trigger()
    assert ("Ctrl+Shift+K", "Test key", "Window") in sheet.rows()
    for shortcut in window.findChildren(QShortcut):
        text = shortcut.key().toString().replace("Return", "Enter")
        assert text in {row[0] for row in sheet.rows()}, text


def test_listed_keys_still_work_once(qtbot, window):
    """A menu item that shows Space or Ctrl+Enter must not bind the key a second time: Qt
    would call the key ambiguous and do nothing."""
    show_at(qtbot, window, (1280, 720))
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    menus = window.menus
    for action in (menus.generate_action, menus.play_action, menus.loop_action):
        assert not action.shortcuts()
    window.findChild(QLineEdit, "seedEdit").setText("not a number")
    history = window.studio.notifier.history
    before = len([m for m in history if "not a whole number" in m])
    window.findChild(QComboBox, "modelCombo").setFocus()
    qtbot.keyClick(window.findChild(QComboBox, "modelCombo"), Qt.Key.Key_Return,
                   Qt.KeyboardModifier.ControlModifier)
    assert len([m for m in history if "not a whole number" in m]) == before + 1
    loop = window.findChild(object, "loopCheck")
    was = loop.isChecked()
    window.session_panel.takes_list.setFocus()
    qtbot.keyClick(window.session_panel.takes_list, Qt.Key.Key_L)
    assert loop.isChecked() is not was  # toggled once, not twice


def test_take_menu_steps_through_the_takes(qtbot, window):
    from tests.app.test_gui import generate

    window.findChild(object, "autoplayCheck").setChecked(False)
    generate(qtbot, window, "footstep", seconds=0.5, seed=5, variations=2)
    takes = window.session_panel.takes_list
    takes.setCurrentRow(0)
    window.menus.next_action.trigger()
    assert takes.currentRow() == 1
    window.menus.next_action.trigger()  # the last take stays selected
    assert takes.currentRow() == 1
    window.menus.previous_action.trigger()
    assert takes.currentRow() == 0


def test_help_menu_has_shortcuts_and_about(window):
    from app.shell.shortcuts_sheet import about_text

    titles = [a.text().replace("&", "") for a in window.menuBar().actions()]
    assert titles[-1] == "Help"
    assert window.menus.shortcuts_action.shortcut().toString() == "F1"
    assert "About" in window.menus.about_action.text()
    assert "SA3 Studio" in about_text() and "F1" in about_text()


# ---------------------------------------------------------------------------- structure
def _module_imports(path: Path) -> set[str]:
    """The app.* modules a module imports when it is imported (not inside functions, not
    under TYPE_CHECKING)."""
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    body = list(tree.body)
    while body:
        node = body.pop(0)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            body.extend(node.orelse)
            continue
        if isinstance(node, ast.If | ast.Try):
            body.extend(getattr(node, "body", []) + getattr(node, "orelse", [])
                        + [n for h in getattr(node, "handlers", []) for n in h.body])
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("app"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("app"):
            found.add(node.module)
            for alias in node.names:  # `from app.widgets import waveform` names a module
                found.add(f"{node.module}.{alias.name}")
    return found


def _app_modules() -> dict[str, Path]:
    modules = {}
    for path in APP_DIR.rglob("*.py"):
        parts = path.relative_to(APP_DIR.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    return modules


def test_no_import_circles_in_app():
    modules = _app_modules()
    graph = {name: sorted(_module_imports(path) & modules.keys() - {name})
             for name, path in modules.items()}
    assert graph["app.shell.main_window"]  # the parser does see imports
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for nxt in graph[name]:
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt]
                pytest.fail("import circle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, path + [nxt])
        state[name] = 2

    for name in graph:
        if name not in state:
            visit(name, [name])


def test_no_module_in_app_is_over_500_lines():
    long = {str(path.relative_to(APP_DIR.parent)): n for path in APP_DIR.rglob("*.py")
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 500}
    assert not long
