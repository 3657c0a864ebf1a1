"""Everything a user can read in a window: for tests that check the window's words."""

from __future__ import annotations

import re

FLAG = re.compile(r"(?<![\w-])--[a-z]")  # a command-line flag, not "x--y" or a lone "--"


def widget_texts(root) -> list[tuple[str, str]]:
    """(where, text) for everything a user can read in `root` and its visible children: text,
    tooltips, placeholders, window titles, item texts, tab and group titles, menu actions."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import (
        QAbstractButton,
        QComboBox,
        QGroupBox,
        QLabel,
        QLineEdit,
        QListWidget,
        QPlainTextEdit,
        QProgressBar,
        QTabWidget,
        QTextEdit,
        QTreeWidget,
        QWidget,
    )

    found: list[tuple[str, str]] = []

    def add(widget, *texts) -> None:
        name = f"{type(widget).__name__}#{widget.objectName()}"
        found.extend((name, str(t)) for t in texts if t)

    widgets = [root] + [w for w in root.findChildren(QWidget) if w.isVisibleTo(root)]
    for w in widgets:
        add(w, w.windowTitle(), w.toolTip(), w.statusTip(), w.whatsThis())
        if isinstance(w, (QLabel, QAbstractButton)):
            add(w, w.text())
        if isinstance(w, QLineEdit):
            add(w, w.text(), w.placeholderText())
        if isinstance(w, (QPlainTextEdit, QTextEdit)):
            add(w, w.toPlainText(), w.placeholderText())
        if isinstance(w, QGroupBox):
            add(w, w.title())
        if isinstance(w, QProgressBar):
            add(w, w.text())
        if isinstance(w, QComboBox):
            for i in range(w.count()):
                add(w, w.itemText(i), w.itemData(i, Qt.ItemDataRole.ToolTipRole))
        if isinstance(w, QListWidget):
            for i in range(w.count()):
                add(w, w.item(i).text(), w.item(i).toolTip())
        if isinstance(w, QTabWidget):
            for i in range(w.count()):
                add(w, w.tabText(i), w.tabToolTip(i))
        if isinstance(w, QTreeWidget):
            header = w.headerItem()
            add(w, *(header.text(c) for c in range(w.columnCount())))
            for item in tree_items(w):
                for c in range(w.columnCount()):
                    add(w, item.text(c), item.toolTip(c))
    for action in root.findChildren(QAction):
        add(action, action.text(), action.toolTip(), action.statusTip())
    return found


def tree_items(tree):
    stack = [tree.topLevelItem(i) for i in range(tree.topLevelItemCount())]
    while stack:
        item = stack.pop()
        yield item
        stack.extend(item.child(i) for i in range(item.childCount()))


def flags_in(texts: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(where, text) for where, text in texts if FLAG.search(text)]
