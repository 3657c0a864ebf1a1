"""The bottom of the Models dialog, under every page: download progress (labelled bars), the
dialog's one message line, Cancel and Close. Layout only."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import (
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.models.advanced import wrapped
from engines.models.inventory import human_size

IDLE = "Nothing is downloading"


def _bar(name: str) -> QProgressBar:
    bar = QProgressBar()
    bar.setObjectName(name)
    bar.setValue(0)  # a bar with no value shows no text at all
    bar.setFormat(IDLE)
    return bar


class ProgressPanel(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        bars = QFormLayout()
        self.file_progress = _bar("fileProgress")
        self.total_progress = _bar("totalProgress")
        bars.addRow("This file", self.file_progress)
        bars.addRow("All files", self.total_progress)
        layout.addLayout(bars)
        self.message = wrapped("", "modelManagerMessage")
        layout.addWidget(self.message)
        bottom = QHBoxLayout()
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setObjectName("cancelDownloadButton")
        self.cancel_button.setToolTip("Stop the download, build or self-test; files already "
                                      "complete are kept.")
        self.cancel_button.setEnabled(False)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.buttons.setObjectName("modelsButtonBox")
        self.buttons.button(QDialogButtonBox.StandardButton.Close).setToolTip(
            "Close this window; a download, build or self-test still running stops.")
        bottom.addWidget(self.cancel_button)
        bottom.addStretch(1)
        bottom.addWidget(self.buttons)
        layout.addLayout(bottom)

    def show_progress(self, name: str, done: int, total: int, all_done: int,
                      all_total: int) -> None:
        self.file_progress.setValue(int(100 * done / max(total, 1)))
        self.total_progress.setValue(int(100 * all_done / max(all_total, 1)))
        self.file_progress.setFormat(f"{Path(name).name}: %p%")
        self.total_progress.setFormat(f"%p% of {human_size(all_total)}")
