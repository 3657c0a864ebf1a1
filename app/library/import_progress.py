"""The import's progress under the library table: what it is doing in words, a bar, and Cancel.
Layout and wording only; app.library.import_controller drives it.

Object names: libraryImportRow, libraryImportProgress, libraryImportCancelButton.
"""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QPushButton, QWidget

from app.widgets.named import named

# What each phase of engines.sound_import is called in the window.
PHASES = {"listing": "Looking for sound files",
          "reading": "Reading sound files",
          "writing": "Adding sound files to the library",
          "extras": "Drawing waveforms and preparing sound search",
          "thumbnails": "Drawing waveforms",
          "embeddings": "Preparing sound search"}


def progress_words(phase: str, done: int, total: int) -> str:
    """"Reading sound files: 120 of 2,000" (or without a count while it is not known)."""
    what = PHASES.get(phase, "Importing sounds")
    return f"{what}: {done:,} of {total:,}" if total > 0 else f"{what}..."


class ImportProgressRow(QWidget):
    """Hidden until an import starts; `show_progress` moves it, `finish` hides it."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("libraryImportRow")
        self.bar = named(QProgressBar(), "libraryImportProgress")
        self.bar.setTextVisible(True)
        self.cancel_button = named(QPushButton("Cancel import"), "libraryImportCancelButton")
        self.cancel_button.setToolTip("Stop after the file being read; what was imported stays, "
                                      "and File > Rescan sound folders finishes the job")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.bar, stretch=1)
        row.addWidget(self.cancel_button)
        self.hide()

    def show_progress(self, phase: str, done: int, total: int) -> str:
        """Show where the import is; returns the words (for the status bar too)."""
        words = progress_words(phase, done, total)
        if total > 0:
            self.bar.setRange(0, total)
            self.bar.setValue(min(done, total))
        else:
            self.bar.setRange(0, 0)  # a busy bar while the folders are walked
        self.bar.setFormat(words.replace("%", "%%"))
        self.cancel_button.setEnabled(True)
        self.show()
        return words

    def cancelling(self) -> None:
        self.cancel_button.setEnabled(False)
        self.bar.setFormat("Cancelling after the file being read...")

    def finish(self) -> None:
        self.hide()
        self.bar.reset()
