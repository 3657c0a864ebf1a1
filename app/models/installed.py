"""The Models dialog's "Installed" page: this machine in detail, and per model set the files on
disk and, for each backend and precision, whether it runs here or why not.

Reasons are long sentences (with folder names), so nothing is cut short: the tree wraps its
text, every item's tooltip holds its full text, and the selected row is repeated in full in a
word-wrapped label under the tree.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QRect, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGroupBox,
    QHeaderView,
    QStyledItemDelegate,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.common.remedy_words import MODELS, for_window
from app.common.tiers import pick_words
from app.models.advanced import wrapped
from engines.catalog import BACKEND_LABELS
from engines.models.inventory import InstalledSet, human_size

HEADERS = ["Model set, file or backend", "Size, or whether it runs here"]
PICK_HINT = "Select a model set to read what Generate would use for it, and why."


class WrappingDelegate(QStyledItemDelegate):
    """Rows as tall as their wrapped text: a tree view asks its delegate for a row's height
    without telling it the column's width, so the stock delegate answers with one line and
    the rest of a sentence is cut off."""

    PADDING = 4

    def __init__(self, tree: QTreeWidget) -> None:
        super().__init__(tree)
        self.tree = tree

    def sizeHint(self, option, index):  # noqa: N802 - Qt's name
        hint = super().sizeHint(option, index)
        width = self.tree.columnWidth(index.column())
        if index.column() == 0:
            width -= self.tree.indentation() * (1 + _depth(index))
        text = str(index.data() or "")
        bounds = option.fontMetrics.boundingRect(QRect(0, 0, max(width - 8, 40), 100_000),
                                                 Qt.TextFlag.TextWordWrap, text)
        hint.setHeight(max(hint.height(), bounds.height() + self.PADDING))
        return hint


def _depth(index) -> int:
    depth = 0
    while index.parent().isValid():
        index = index.parent()
        depth += 1
    return depth


def where_words(where: str) -> str:
    """"tensorrt fp16" -> "TensorRT at fp16"."""
    backend, _, precision = where.partition(" ")
    return f"{BACKEND_LABELS.get(backend, backend)} at {precision}"


class InstalledPage(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("installedPage")
        layout = QVBoxLayout(self)
        machine = QGroupBox("This computer in detail")
        box = QVBoxLayout(machine)
        self.machine_label = wrapped("", "machineLabel")
        self.machine_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        box.addWidget(self.machine_label)
        layout.addWidget(machine)
        self.tree = QTreeWidget()
        self.tree.setObjectName("installedTree")
        self.tree.setHeaderLabels(HEADERS)
        self.tree.setWordWrap(True)
        self.tree.setTextElideMode(Qt.TextElideMode.ElideNone)
        self.tree.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        header = self.tree.header()
        header.setStretchLastSection(True)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        self.tree.setColumnWidth(0, 260)
        self.tree.setItemDelegate(WrappingDelegate(self.tree))
        # a column of another width wraps differently: measure the rows again
        header.sectionResized.connect(lambda *_: self.tree.doItemsLayout())
        layout.addWidget(self.tree, stretch=1)
        self.details = wrapped("Select a row to read it in full here.", "installedDetails")
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.details)
        # what Generate would pick for the selected set, and why (issue 14)
        self.pick_label = wrapped(PICK_HINT, "installedPickLabel")
        self.pick_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.pick_label)
        self.picks: dict[str, str] = {}
        self.tree.currentItemChanged.connect(self._show_details)

    def fill(self, machine_lines: list[str], entries: list[InstalledSet],
             roots: tuple[Path, ...], catalog=None) -> None:
        """`catalog` (engines.catalog.Catalog) says what each set's defaults would pick."""
        self.machine_label.setText("\n".join(for_window(line, MODELS) for line in machine_lines))
        self.tree.clear()
        self.picks = ({entry.label: pick_words(catalog, entry.model, MODELS) for entry in entries}
                      if catalog is not None else {})
        self.pick_label.setText(PICK_HINT)
        for entry in entries:
            files = (f"{len(entry.files)} file(s), {human_size(entry.total_bytes)}"
                     if entry.files else "not downloaded")
            top = _item(entry.label, files)
            for path, size in entry.files:
                top.addChild(_item(_short(path, roots), human_size(size), str(path)))
            for where, state in entry.runnable.items():
                top.addChild(_item(where_words(where),
                                   "Ready" if state == "ready" else for_window(state, MODELS)))
            self.tree.addTopLevelItem(top)

    def top_texts(self) -> list[str]:
        return [self.tree.topLevelItem(i).text(0) for i in range(self.tree.topLevelItemCount())]

    def _show_details(self, item: QTreeWidgetItem | None, _previous=None) -> None:
        if item is None:
            return
        self.details.setText(f"{item.toolTip(0)}: {item.toolTip(1)}")
        top = item
        while top.parent() is not None:
            top = top.parent()
        pick = self.picks.get(top.text(0))
        if pick:
            self.pick_label.setText(f"{top.text(0)}: {pick}")


def _item(name: str, state: str, full_name: str | None = None) -> QTreeWidgetItem:
    item = QTreeWidgetItem([name, state])
    item.setToolTip(0, full_name or name)
    item.setToolTip(1, state)
    return item


def _short(path: Path, roots: tuple[Path, ...]) -> str:
    """A file as <arch or onnx>/<folder>/<file> under its models folder."""
    for root in roots:
        try:
            return str(Path(path).relative_to(root))
        except ValueError:
            continue
    return Path(path).name
