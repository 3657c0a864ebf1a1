"""File > Render sound list...: a CSV or JSON sound list rendered into a folder on the GPU
worker (app.batch.run: the batch session of `python main.py batch`, so the same files,
sidecars and manifest.json), with a progress bar and Cancel in the status bar, each finished
take added to the session and the library, and every problem one sentence.

The worker reports from its own thread through this controller's private signals, which Qt
queues onto the GUI thread: the window never waits for a take.
"""

from __future__ import annotations

import logging
import threading
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer, Signal

from app.batch.progress import ListProgress
from app.common.displaydata import for_result
from app.common.gpu_jobs import LIST, list_job
from app.common.gpu_service import GpuService
from app.common.notifier import Notifier
from app.common.session import TakeModel
from app.common.session_take import Take
from engines.error_sentences import shown
from engines.errors import StudioError

if TYPE_CHECKING:
    from app.batch.run import ListRequest, TakeMade
    from engines.batch.session import BatchSummary

log = logging.getLogger(__name__)

LIBRARY_REFRESH_MS = 500  # takes kept while a list renders refresh the library panel this often
PROBLEMS_SHOWN = 3  # bad rows repeated with the final summary; the manifest has them all


class BatchController(QObject):
    libraryChanged = Signal()  # takes were kept in the library
    listFinished = Signal(object)  # BatchSummary, or None when the list could not be rendered
    runningChanged = Signal(bool)  # a list started (True) or ended (False)
    # from the worker thread (queued onto the GUI thread)
    _said = Signal(str, str)  # kind, sentence
    _started = Signal(int, int, str)  # position, total, file
    _done = Signal(int, int, str, str)  # position, total, file, status
    _made = Signal(object)  # TakeMade

    def __init__(self, progress: ListProgress, notifier: Notifier, session: TakeModel,
                 gpu: GpuService, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.progress = progress
        self.notifier = notifier
        self.session = session
        self.gpu = gpu
        self.dialog = None
        self.job_id = None  # the sound list's GPU job key while it renders
        self.problems: list[str] = []  # this run's bad rows and failed takes, one sentence each
        self.takes: list[Take] = []  # this run's takes, as added to the session
        self._last = ("", "", None)  # the dialog opens with the last values (None: default)
        self._refresh = QTimer(self, singleShot=True, interval=LIBRARY_REFRESH_MS)
        self._refresh.timeout.connect(self.libraryChanged)
        progress.cancel_button.clicked.connect(self.cancel)
        gpu.outcome.connect(self._list_outcome)
        self._said.connect(self._show_said)
        self._started.connect(self._take_started)
        self._done.connect(self._take_done)
        self._made.connect(self._take_made)

    @property
    def running(self) -> bool:
        return self.job_id is not None

    # ------------------------------------------------------------------ asking
    def open_dialog(self) -> None:
        """The Render sound list dialog (window-modal, not blocking); Render starts the list."""
        if self.running:
            self.notifier.status("A sound list is already rendering; wait for it or press "
                                 "Cancel list.")
            return
        # Imported on first use: the dialog and the list session (engines.batch, delivery) are
        # a quarter second of imports the window's first paint must not wait for.
        from app.batch.dialog import RenderListDialog

        list_path, out_dir, template = self._last
        dialog = RenderListDialog(self.progress.window(), list_path=list_path, out_dir=out_dir,
                                  template=template)
        dialog.accepted.connect(partial(self._dialog_accepted, dialog))
        dialog.finished.connect(dialog.deleteLater)
        self.dialog = dialog
        dialog.open()

    def _dialog_accepted(self, dialog) -> None:
        list_text, out_text, template, keep, force = dialog.values()
        self._last = (list_text, out_text, template)
        if self.dialog is dialog:
            self.dialog = None
        if not list_text:
            self.notifier.error("Choose a sound list (a CSV or JSON file) to render.")
            return
        if not out_text:
            self.notifier.error("Choose the folder to write the takes to.")
            return
        self.render_list(Path(list_text), Path(out_text), template=template,
                         keep_in_library=keep, force=force)

    def render_list(self, list_path: Path, out_dir: Path, *, template: str | None = None,
                    keep_in_library: bool = True, force: bool = False) -> bool:
        """Render the list on the GPU worker (`template`: the file names', None for the
        default); False (and one sentence) when it cannot start."""
        # Imported on first use, as the dialog is (open_dialog says why).
        from app.batch.run import DEFAULT_TEMPLATE, ListRequest, check_request, render_list

        if self.running:
            self.notifier.status("A sound list is already rendering; wait for it or press "
                                 "Cancel list.")
            return False
        if self.gpu.busy:
            self.notifier.status(f"{self.gpu.refusal()} Then render the list.")
            return False
        request = ListRequest(Path(list_path), Path(out_dir), template or DEFAULT_TEMPLATE,
                              keep_in_library, force)
        try:
            check_request(request)
            if self.gpu.host is None:
                raise StudioError("The GPU worker is not running, so the list cannot be "
                                  "rendered; restart SA3 Studio.")
        except StudioError as exc:
            self.notifier.error(str(exc))
            return False
        self.problems, self.takes = [], []
        self.job_id = self.gpu.submit(list_job(partial(self._run, render_list, request,
                                                       display=for_result)))
        self._show_running(True)
        self.notifier.status(f"Reading the sound list {shown(request.list_path)}...")
        return True

    def _run(self, render_list, request: ListRequest, generator, cancel: threading.Event,
             display=None) -> BatchSummary:
        """On the worker thread: app.batch.run's render_list."""
        return render_list(request, generator, cancel, _Relay(self), display)

    def cancel(self) -> None:
        """Stop after the current take; the manifest stays valid and a rerun continues."""
        if self.running and self.gpu.cancel(LIST):
            self.progress.cancel_button.setEnabled(False)
            self.notifier.status("Stopping the sound list after the current take...")

    # ------------------------------------------------------------------ the worker's answers
    def _show_said(self, kind: str, message: str) -> None:
        if kind == "error":
            self.problems.append(message)
        if kind in ("error", "warning"):
            self.notifier.error(message)
        else:
            self.notifier.status(message)

    def _take_started(self, position: int, total: int, file: str) -> None:
        bar = self.progress.bar
        if bar.maximum() != total:
            bar.setRange(0, total)
            bar.setValue(position - 1)
        self.notifier.status(f"[{position}/{total}] {file}")

    def _take_done(self, position: int, total: int, _file: str, _status: str) -> None:
        bar = self.progress.bar
        if bar.maximum() != total:
            bar.setRange(0, total)
        bar.setValue(position)

    def _take_made(self, made: TakeMade) -> None:
        result = made.result
        request = result.request
        raw_wav = made.finishing is None and made.file.suffix.lower() == ".wav"
        take = Take(prompt=request.prompt, pcm=result.pcm, seed=result.seed,
                    model=request.model, result=result, name=made.file.stem,
                    init_path=made.init_path, file_path=made.file if raw_wav else None,
                    display=made.display, library_id=made.library_id,
                    quality=list(getattr(result, "quality", None) or []),
                    variation=made.variation, finishing=made.finishing, loop=made.loop)
        self.takes.append(take)
        self.session.add_take(take, select=self.session.current_take() is None)
        if made.library_id is not None and not self._refresh.isActive():
            self._refresh.start()

    def _list_outcome(self, outcome) -> None:
        if outcome.key != self.job_id:
            return
        if outcome.error is not None:
            self._list_failed(str(outcome.error))
            return
        summary = outcome.value
        self._finish()
        self.notifier.notices([_summary(summary), *self._problem_lines()])
        if summary.manifest_error:
            self.notifier.error(summary.manifest_error)
        self.listFinished.emit(summary)

    def _list_failed(self, message: str) -> None:
        self._finish()
        self.notifier.error(message)
        self.listFinished.emit(None)

    def _finish(self) -> None:
        self.job_id = None
        self._show_running(False)
        self._refresh.stop()
        self.libraryChanged.emit()

    def _problem_lines(self) -> list[str]:
        lines = self.problems[:PROBLEMS_SHOWN]
        more = len(self.problems) - len(lines)
        if more:
            lines.append(f"... and {more} more problem(s), listed in the manifest.")
        return lines

    def _show_running(self, running: bool) -> None:
        progress = self.progress
        progress.cancel_button.setEnabled(running)
        progress.cancel_button.setVisible(running)
        progress.bar.setVisible(running)
        if running:
            progress.bar.setRange(0, 0)  # busy until the plan says how many takes
            progress.bar.setValue(0)
        self.runningChanged.emit(running)

    def shutdown(self) -> None:
        if self.running:
            self.gpu.cancel(LIST)


class _Relay:
    """app.batch.run.ListEvents as this controller's signals: called on the worker thread,
    heard on the GUI thread. A window closed meanwhile must not stop the list mid-take."""

    def __init__(self, controller: BatchController) -> None:
        self._c = controller

    def say(self, kind: str, message: str) -> None:
        self._emit(self._c._said, kind, message)

    def started(self, position: int, total: int, file: str) -> None:
        self._emit(self._c._started, position, total, file)

    def done(self, position: int, total: int, file: str, status: str) -> None:
        self._emit(self._c._done, position, total, file, status)

    def made(self, take: TakeMade) -> None:
        self._emit(self._c._made, take)

    @staticmethod
    def _emit(signal, *args) -> None:
        try:
            signal.emit(*args)
        except RuntimeError:  # the controller is gone (the window closed): the files are kept
            log.info("a sound list event had no window to go to", exc_info=True)


def _summary(summary: BatchSummary) -> str:
    counts = summary.counts
    where = shown(summary.manifest)
    if summary.cancelled:
        return (f"Sound list stopped after the current take: {counts['ok']} rendered, "
                f"{counts['pending']} not rendered yet; render the list again to continue "
                f"(manifest {where}).")
    if counts["failed"]:
        return (f"Sound list done: {counts['ok']} rendered, {counts['skipped']} skipped, "
                f"{counts['failed']} of {summary.items} item(s) failed; fix them and render "
                f"the list again, which skips the takes already made (manifest {where}).")
    return (f"Sound list done: {counts['ok']} rendered, {counts['skipped']} skipped; "
            f"{summary.audio_seconds:.1f} s of audio in {summary.wall_s:.1f} s (manifest "
            f"{where}).")
