"""The Library tab's Export to folder... and Export zip...: the selected takes through the one
delivery layer, each finished by its stored chain - the same files `library export` writes.

A stored loop made by the model is made again by the model with its stored seed, so the file
is that loop again: that needs the model, which lives on the GPU worker thread, so such an
export runs there as a task (its library opened on that thread) and says when it is done.
Any other export runs at once."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QFileDialog

from app.common.expected_errors import LIBRARY_ERRORS
from app.common.gpu_jobs import task_job
from app.common.gpu_service import GpuService
from app.common.notifier import Notifier
from app.common.own_jobs import OwnJobs
from app.library.panel import LibraryPanel
from engines import paths
from engines.audio_io import float_from_pcm16
from engines.delivery.labels import make_labels
from engines.error_sentences import shown
from engines.store.export_plan import ExportOptions
from engines.store.library import ClipLibrary
from engines.store.records import TakeRecord

log = logging.getLogger(__name__)


def needs_model(records: list[TakeRecord]) -> bool:
    """Whether a selected take's stored chain holds a loop the model made."""
    for record in records:
        loop = (record.finishing or {}).get("loop") if not record.is_imported else None
        if isinstance(loop, dict) and loop.get("method") == "model":
            return True
    return False


class LibraryExporter(OwnJobs, QObject):
    def __init__(self, panel: LibraryPanel, notifier: Notifier, gpu: GpuService, library,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.notifier = notifier
        self.gpu = gpu
        self.library = library
        self.pending: dict[int, str] = {}  # task id -> what it writes, for the status line
        self.panel = panel
        panel.export_button.clicked.connect(lambda: self.export_selected())
        panel.zip_button.clicked.connect(lambda: self.export_selected_zip())
        self.listen_to(gpu)

    def options(self) -> ExportOptions:
        """Each take finished by its stored chain, named by the export name template,
        labelled with the studio's names from settings."""
        return ExportOptions(use_stored=True, labels=make_labels(),
                             warn=lambda text: self.notifier.status(text))

    def export_selected(self, folder: str | None = None) -> list[Path]:
        """The files written now ([] when the export runs on the GPU worker: its status line
        says when it is done)."""
        records = self.panel.selected_records()
        if not records:
            self.notifier.error("Select takes in the library to export.")
            return []
        if not folder:
            folder = QFileDialog.getExistingDirectory(self.panel.window(), "Export takes to folder")
        if not folder:
            return []
        ids, target = [r.id for r in records], Path(folder)
        try:
            if self._on_worker(records, "folder", target, ids):
                return []
            written = self.library.export(ids, target, self.options())
        except LIBRARY_ERRORS as exc:  # one sentence, the traceback to the log
            self.notifier.failed(f"Could not export to {shown(folder)}", exc)
            return []
        self.notifier.status(f"Exported {len(written)} take(s) with sidecars to {folder}.")
        return written

    def export_selected_zip(self, path: str | None = None) -> Path | None:
        records = self.panel.selected_records()
        if not records:
            self.notifier.error("Select takes in the library to export.")
            return None
        if not path:
            path, _ = QFileDialog.getSaveFileName(self.panel.window(), "Export zip",
                                                  str(Path.home() / "sa3-takes.zip"),
                                                  "Zip archive (*.zip)")
        if not path:
            return None
        ids, target = [r.id for r in records], Path(path)
        try:
            if self._on_worker(records, "zip", target, ids):
                return None
            written = self.library.export_zip(ids, target, self.options())
        except LIBRARY_ERRORS as exc:  # one sentence, the traceback to the log
            self.notifier.failed(f"Could not write {shown(path)}", exc)
            return None
        self.notifier.status(f"Exported {len(records)} take(s) to {written}.")
        return written

    def _on_worker(self, records: list[TakeRecord], kind: str, target: Path,
                   ids: list[int]) -> bool:
        """Run the export on the GPU worker when a stored model loop needs the model; False
        when it can run here (no model loop) or the worker cannot take it (then the loop is
        made by crossfade and the status line says so)."""
        if not needs_model(records) or self.gpu.host is None or self.gpu.busy:
            return False
        options, worker = self.options(), self.gpu.worker

        def task(report, _cancel):
            def generate(request):
                return float_from_pcm16(worker.generator().generate(request).pcm)

            chosen = replace(options, generate=generate, warn=report)
            # SQLite connections stay on the thread that opened them: one of its own here.
            with ClipLibrary(paths.library_dir()) as library:
                if kind == "zip":
                    return [library.export_zip(ids, target, chosen)]
                return library.export(ids, target, chosen)

        key = self.gpu.submit(task_job(task, "Exporting takes"))
        self.pending[key] = str(target)
        self.notifier.status(f"Exporting {len(ids)} take(s) to {target}; the model makes "
                             "their loops again...")
        return True

    def _report(self, text: str) -> None:
        self.notifier.status(text)

    def _done(self, task_id: int, written) -> None:
        target = self.pending.pop(task_id, None)
        if target is not None:
            self.notifier.status(f"Exported {len(written)} file(s) with sidecars to {target}.")

    def _failed(self, task_id: int, message: str) -> None:
        target = self.pending.pop(task_id, None)
        if target is not None:
            self.notifier.error(message)
