"""The Adapters panel: LoRA/DoRA files stacked on the model, in the generation column. Layout
only; app.adapters.controller adds and removes files, app.adapters.state reads the rows as a
request's adapters and as remembered settings.

Object names: adaptersPanel, addAdapterButton, adaptersEmptyLabel, adaptersNote (why the last
file was refused), and per row n (0, 1, ... in the panel's order, renumbered when a row goes):
adapterEnabled_<n> (on/off), adapterName_<n>, adapterDetails_<n> (variant and rank),
adapterStrength_<n> (the slider, 0 to 2), adapterStrengthSpin_<n> (the number, 0 to 10) and
adapterRemove_<n>. Files dropped on the panel are offered to the controller (`filesDropped`).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QGridLayout,
    QGroupBox,
    QLabel,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.adapters.entry import AdapterEntry
from app.adapters.strength import StrengthControl
from app.common.theme import icon
from app.widgets.named import named

EMPTY_WORDS = ("No adapters: the model as trained. Add LoRA or DoRA files (.safetensors), or "
               "drop them here.")
ADAPTER_SUFFIX = ".safetensors"


class NameLabel(QLabel):
    """A file's name, elided in the middle when the column is narrow (the end of a name tells
    versions apart); `full_text` is the whole name."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.full_text = text
        self.setAccessibleName(text)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self.setText(self.fontMetrics().elidedText(self.full_text, Qt.TextElideMode.ElideMiddle,
                                                   max(self.width(), 1)))


class AdapterRow(QWidget):
    """One adapter: its switch, name, variant and rank, strength and Remove button."""

    def __init__(self, entry: AdapterEntry) -> None:
        super().__init__()
        self.entry = entry  # the file and what it is; strength and switch live in the widgets
        self.enabled_check = QCheckBox()
        self.enabled_check.setChecked(entry.enabled)
        self.enabled_check.setToolTip("On or off: an adapter switched off weighs nothing (the "
                                      "same as strength 0), and keeps its strength")
        self.name_label = NameLabel(entry.file_name.removesuffix(ADAPTER_SUFFIX))
        self.name_label.setToolTip(f"{entry.path}\nSHA-256 {entry.sha256 or 'not read yet'}")
        self.details_label = QLabel(entry.details())
        self.details_label.setEnabled(False)  # the quieter colour of a secondary line
        self.strength = StrengthControl(entry.strength)
        self.remove_button = QToolButton()
        self.remove_button.setIcon(icon("delete"))
        self.remove_button.setText("Remove")  # the accessible name; the icon is what shows
        self.remove_button.setToolTip(f"Remove {entry.file_name} from the stack")
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 2, 0, 2)
        grid.setVerticalSpacing(0)
        grid.addWidget(self.enabled_check, 0, 0)
        grid.addWidget(self.name_label, 0, 1)
        grid.addWidget(self.details_label, 0, 2)
        grid.addWidget(self.remove_button, 0, 3)
        grid.addWidget(self.strength, 1, 1, 1, 3)
        grid.setColumnStretch(1, 1)

    def set_index(self, n: int) -> None:
        """Name the row's controls for its place in the panel."""
        self.setObjectName(f"adapterRow_{n}")
        self.enabled_check.setObjectName(f"adapterEnabled_{n}")
        self.name_label.setObjectName(f"adapterName_{n}")
        self.details_label.setObjectName(f"adapterDetails_{n}")
        self.strength.set_names(f"adapterStrength_{n}", f"adapterStrengthSpin_{n}")
        self.remove_button.setObjectName(f"adapterRemove_{n}")


class AdaptersPanel(QGroupBox):
    """The stack of adapters, top to bottom in the order they are stacked."""

    changed = Signal()  # a row came or went, or a strength or switch changed
    removeRequested = Signal(int)  # a row's Remove button: its index
    filesDropped = Signal(list)  # local file paths (str) dropped on the panel

    def __init__(self) -> None:
        super().__init__("Adapters")
        self.setObjectName("adaptersPanel")
        self.setAcceptDrops(True)
        self.setToolTip("LoRA and DoRA adapters change the model's sound; they stack, each at "
                        "its own strength")
        self.add_button = named(QPushButton("Add adapter..."), "addAdapterButton", icon("open"))
        self.empty_label = named(QLabel(EMPTY_WORDS), "adaptersEmptyLabel")
        self.empty_label.setWordWrap(True)
        self.note_label = named(QLabel(""), "adaptersNote")
        self.note_label.setWordWrap(True)
        self.note_label.hide()
        self.rows: list[AdapterRow] = []
        self._rows_layout = QVBoxLayout()
        self._rows_layout.setContentsMargins(0, 0, 0, 0)
        layout = QVBoxLayout(self)
        layout.addWidget(self.empty_label)
        layout.addLayout(self._rows_layout)
        layout.addWidget(self.note_label)
        layout.addWidget(self.add_button, 0, Qt.AlignmentFlag.AlignLeft)

    # ------------------------------------------------------------------ rows
    def add_row(self, entry: AdapterEntry) -> AdapterRow:
        row = AdapterRow(entry)
        row.set_index(len(self.rows))
        self.rows.append(row)
        self._rows_layout.addWidget(row)
        row.enabled_check.toggled.connect(self.changed)
        row.strength.valueChanged.connect(self.changed)
        row.remove_button.clicked.connect(lambda: self.removeRequested.emit(self.rows.index(row)))
        self.empty_label.hide()
        self.changed.emit()
        return row

    def remove_row(self, index: int) -> None:
        row = self.rows.pop(index)
        self._rows_layout.removeWidget(row)
        row.setParent(None)  # gone from the window now: its names are the next row's
        row.deleteLater()
        for n, later in enumerate(self.rows):
            later.set_index(n)
        self.empty_label.setVisible(not self.rows)
        self.changed.emit()

    def set_entries(self, entries: list[AdapterEntry]) -> None:
        """Replace every row (restored settings): one `changed` for the lot."""
        blocked = self.blockSignals(True)
        try:
            while self.rows:
                self.remove_row(len(self.rows) - 1)
            for entry in entries:
                self.add_row(entry)
        finally:
            self.blockSignals(blocked)
        self.changed.emit()

    def show_note(self, text: str) -> None:
        """A sentence under the rows (why a file was refused); "" hides it."""
        self.note_label.setText(text)
        self.note_label.setVisible(bool(text))

    # ------------------------------------------------------------------ drops
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 - Qt override
        if self._local_files(event):
            event.acceptProposedAction()

    def dragMoveEvent(self, event) -> None:  # noqa: N802 - Qt override
        if self._local_files(event):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt override
        files = self._local_files(event)
        if files:
            event.acceptProposedAction()
            self.filesDropped.emit(files)

    @staticmethod
    def _local_files(event) -> list[str]:
        """Every local file a drag carries (a refused one is said by the controller)."""
        mime = event.mimeData()
        if mime is None or not mime.hasUrls():
            return []
        return [url.toLocalFile() for url in mime.urls()
                if url.isLocalFile() and url.toLocalFile()]
