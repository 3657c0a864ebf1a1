"""The Help menu's windows: the keyboard shortcut sheet (F1) and About.

The sheet is read from the window itself every time it opens - the menus' actions and the
window's QShortcuts - so it cannot drift from what the keys really do. Keys that something
other than a QAction handles (Space and L in the takes controller's event filter, Up/Down in
the takes list, Ctrl+Enter in a QShortcut) appear in the menus as "hinted" actions: the key is
shown and kept in HINT_PROPERTY, but not bound twice.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

from PySide6 import __version__ as pyside_version
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QIcon, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engines.lazy import lazy_import

# importlib.metadata costs the window about 10 ms at startup; only the About line reads it.
metadata = lazy_import("importlib.metadata")

HINT_PROPERTY = "shortcutHint"  # keys a menu item shows but something else handles
NATIVE = QKeySequence.SequenceFormat.NativeText
OUTSIDE_MENUS = "Window"
NO_DESCRIPTION = "(no description)"
TYPING_NOTE = ("Space and L act whenever you are not typing in a text field; Up and Down "
               "move through the takes when the takes list has the focus.")


@dataclass(frozen=True)
class ShortcutEntry:
    keys: str  # as the platform writes them ("Ctrl+S", on macOS with its symbols)
    does: str
    menu: str  # the menu the action is in; OUTSIDE_MENUS for a window-wide QShortcut


def add_hinted_action(menu: QMenu, icon: QIcon, text: str, keys: str) -> QAction:
    """A menu item showing `keys`, which something else already handles (see the module
    docstring): binding them here too would make Qt treat them as ambiguous and do nothing."""
    # Qt's own menus draw the text after a tab as the shortcut column; macOS's native menu
    # bar may read it as a key equivalent of its own, a second binding: there the key is on
    # the F1 sheet only.
    label = text if sys.platform == "darwin" else f"{text}\t{keys}"
    action = menu.addAction(icon, label)
    action.setProperty(HINT_PROPERTY, keys)
    return action


def _shown(keys: str) -> str:
    sequence = QKeySequence(keys)
    return sequence.toString(NATIVE) if not sequence.isEmpty() else keys


def _same_key(keys: str) -> str:
    # Return and the keypad's Enter are one key to a user (Ctrl+Return and Ctrl+Enter both
    # generate): list them once.
    return QKeySequence(keys).toString().replace("Return", "Enter").lower()


def _label(text: str) -> str:
    text = text.split("\t")[0].replace("&&", "\0").replace("&", "").replace("\0", "&")
    return text.rstrip(".").strip()


def action_keys(action: QAction) -> str:
    """The keys of a menu action: its bound shortcuts, else its hint; "" when it has none."""
    bound = [seq.toString(NATIVE) for seq in action.shortcuts() if not seq.isEmpty()]
    if bound:
        return " or ".join(bound)
    hint = action.property(HINT_PROPERTY)
    return _shown(str(hint)) if hint else ""


def gather_shortcuts(window: QMainWindow, menus: Sequence[QMenu]) -> list[ShortcutEntry]:
    """Every key the window answers to, menu by menu, then the QShortcuts outside the menus.
    `menus` is the window's own list of its menus, never QAction.menu(): see app.shell.menus."""
    entries: list[ShortcutEntry] = []
    seen: set[str] = set()

    def add(keys: str, does: str, menu: str, raw: list[str]) -> None:
        if keys and not any(_same_key(k) in seen for k in raw):
            seen.update(_same_key(k) for k in raw)
            entries.append(ShortcutEntry(keys, does, menu))

    for menu in menus:
        for action in menu.actions():
            if action.isSeparator():
                continue
            raw = [seq.toString() for seq in action.shortcuts()] or \
                [str(action.property(HINT_PROPERTY) or "")]
            add(action_keys(action), _label(action.text()), _label(menu.title()), raw)
    for action in window.actions():  # actions bound to the window outside any menu
        raw = [seq.toString() for seq in action.shortcuts()]
        add(action_keys(action), _label(action.text()) or NO_DESCRIPTION, OUTSIDE_MENUS, raw)
    for shortcut in window.findChildren(QShortcut):
        keys = shortcut.key().toString()
        add(_shown(keys), shortcut.whatsThis() or NO_DESCRIPTION, OUTSIDE_MENUS, [keys])
    return entries


class ShortcutsSheet(QDialog):
    """A table of every shortcut of `window` (whose menu bar holds `menus`); filled again
    each time it is shown."""

    def __init__(self, window: QMainWindow, menus: Sequence[QMenu]) -> None:
        super().__init__(window)
        self.setObjectName("shortcutsSheet")
        self.setWindowTitle("Keyboard shortcuts")
        self._window = window
        self._menus = tuple(menus)
        table = self.table = QTableWidget(0, 3)
        table.setObjectName("shortcutsTable")
        table.setHorizontalHeaderLabels(["Keys", "Does", "Menu"])
        table.verticalHeader().hide()
        table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        table.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        table.setAlternatingRowColors(True)
        table.setShowGrid(False)
        header = table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        note = QLabel(TYPING_NOTE)
        note.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(table)
        layout.addWidget(note)
        layout.addWidget(buttons)
        self.refresh()
        rows = table.verticalHeader().length() + table.horizontalHeader().height()
        self.resize(480, min(rows + 150, 640))  # every row in sight, up to a point

    def refresh(self) -> None:
        entries = gather_shortcuts(self._window, self._menus)
        self.table.setRowCount(len(entries))
        for row, entry in enumerate(entries):
            for col, text in enumerate((entry.keys, entry.does, entry.menu)):
                item = QTableWidgetItem(text)
                if col == 0:
                    font = item.font()
                    font.setBold(True)
                    item.setFont(font)
                self.table.setItem(row, col, item)

    def rows(self) -> list[tuple[str, str, str]]:
        """What the sheet lists, as (keys, does, menu) rows."""
        table = self.table
        return [tuple(table.item(row, col).text() for col in range(3))
                for row in range(table.rowCount())]

    def showEvent(self, event) -> None:  # noqa: N802 - Qt override
        self.refresh()  # a controller or dialog may have added keys since it was built
        super().showEvent(event)


def show_shortcuts_sheet(window: QMainWindow, menus: Sequence[QMenu]) -> ShortcutsSheet:
    """Open (or bring forward) the window's one shortcut sheet; it does not block the window,
    so a user can try a key with the sheet still open."""
    sheet = window.findChild(ShortcutsSheet, "shortcutsSheet")
    if sheet is None:
        sheet = ShortcutsSheet(window, menus)
    sheet.show()
    sheet.raise_()
    sheet.activateWindow()
    return sheet


def app_version() -> str:
    try:
        return metadata.version("sa3-studio")
    except metadata.PackageNotFoundError:  # running from a clone that was never installed
        return "development"


def about_text() -> str:
    return (f"<h3>SA3 Studio {app_version()}</h3>"
            "<p>Sound design for games with Stable Audio 3: prompt, compare takes, finish "
            "and export them where your game engine wants them.</p>"
            "<p>The Demo model is a procedural stand-in that runs on any CPU; get the Stable "
            "Audio 3 models from <b>Models &gt; Manage models</b>.</p>"
            f"<p>Press <b>F1</b> for the keyboard shortcuts.<br>Qt for Python {pyside_version}"
            "</p>")


def show_about(parent: QWidget) -> None:
    QMessageBox.about(parent, "About SA3 Studio", about_text())
