"""What the Adapters panel does: adds adapter files (Add adapter... or a drop), each read and
checked as the engine will take it (engines.adapters: a .safetensors LoRA or DoRA of a variant
the branch serves), and removes them. A refused file is one sentence in the window's words,
under the rows and in the status bar, and is not added.

Reading a file means hashing it (its SHA-256 is what a take records), a fraction of a second
for a 200 MB adapter: that is done off the GUI thread, and the rows come when it is done.

A strength or switch change needs nothing here: the panel's `changed` is what live audition
(app.live.controller) renders again on, and the next request reads the rows
(app.adapters.state)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QFileDialog

from app.adapters.entry import entry_of_info
from app.adapters.panel import AdaptersPanel
from app.common.background_jobs import BackgroundJobs, JobOutcome
from app.common.notifier import Notifier, user_sentence
from engines.adapters.files import check_servable, read_adapter_info
from engines.error_sentences import printable
from engines.errors import StudioError

log = logging.getLogger(__name__)

FILE_FILTER = "Adapters (*.safetensors)"


class AdaptersController(QObject):
    """`choose_files()` asks for files (the file dialog; tests answer through it)."""

    def __init__(self, panel: AdaptersPanel, notifier: Notifier, parent: QObject | None = None,
                 *, choose_files: Callable[[], list[str]] | None = None) -> None:
        super().__init__(parent)
        self.panel = panel
        self.notifier = notifier
        self.folder = ""  # where the last adapter was added from: the dialog opens there
        self.choose_files = choose_files or self._dialog
        self.reading = 0  # batches of files being read
        self._jobs = BackgroundJobs(self, threads=1)  # one at a time: files are added in order
        self._jobs.done.connect(self._read)
        panel.add_button.clicked.connect(self.choose_and_add)
        panel.filesDropped.connect(self.add_files)
        panel.removeRequested.connect(self.remove)

    def _dialog(self) -> list[str]:
        paths, _ = QFileDialog.getOpenFileNames(self.panel.window(), "Add adapters",
                                                self.folder, FILE_FILTER)
        return paths

    def choose_and_add(self) -> None:
        paths = self.choose_files()
        if paths:
            self.add_files(paths)

    def add_files(self, paths: list[str]) -> None:
        """Read `paths` off the GUI thread; then each file the engine can use is added, at
        strength 1, below the others, and the first refusal is said."""
        if not paths:
            return
        self.folder = str(Path(paths[-1]).parent)
        self.reading += 1
        self._jobs.submit(tuple(paths), lambda: [_read_file(Path(p)) for p in paths])

    def _read(self, outcome: JobOutcome) -> None:
        self.reading -= 1
        if outcome.error is not None:  # _read_file catches what a file can cause
            self.notifier.failed("Could not read the adapter files", outcome.error)
            return
        added, refusals = [], []
        for path, read in zip(outcome.key, outcome.value, strict=True):
            refusal = self._add(read) if not isinstance(read, str) else read
            if refusal is None:
                added.append(Path(path).name)
            else:
                refusals.append(refusal)
        note = refusals[0] if refusals else ""
        if len(refusals) > 1:
            note += f" ({len(refusals) - 1} more file{'s' if len(refusals) > 2 else ''} not " \
                    "added either.)"
        self.panel.show_note(note)
        if note:
            self.notifier.error(note)
        elif added:
            self.notifier.status(f"Added {', '.join(printable(n) for n in added)}: each "
                                 "starts at strength 1, its full trained effect.")

    def _add(self, info) -> str | None:
        """A row for `info`; None once added, else why it was not."""
        if any(row.entry.sha256 == info.sha256 for row in self.panel.rows):
            return (f"{printable(info.file_name)} is in the Adapters panel already; change "
                    "its strength instead of stacking it twice.")
        self.panel.add_row(entry_of_info(info))
        return None

    def remove(self, index: int) -> None:
        if 0 <= index < len(self.panel.rows):
            name = self.panel.rows[index].entry.file_name
            self.panel.remove_row(index)
            self.panel.show_note("")
            self.notifier.status(f"Removed {printable(name)} from the adapters.")

    def shutdown(self) -> None:
        self._jobs.shutdown()


def _read_file(path: Path):
    """On a pool thread: what the file is (engines.adapters AdapterInfo), or the sentence that
    refuses it."""
    try:
        info = read_adapter_info(path)
        check_servable(info)
    except (StudioError, OSError) as exc:
        log.info("adapter %s refused", path, exc_info=True)
        return user_sentence(f"Could not add the adapter {path.name}", exc)
    return info
