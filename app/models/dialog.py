"""The Models dialog: what to get for this machine and one button that gets it ("Get models"),
what is installed and whether it runs here ("Installed"), and the advanced options.

Downloads run on their own QThread (network and disk only); builds and the self-test go to the
one GPU worker (app.models.gpu_tasks). Everything the dialog shows passes through
app.common.remedy_words, which words remedies as this dialog's controls.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QThread, Signal
from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QListWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.common.expected_errors import CATALOG_ERRORS, SETTINGS_ERRORS
from app.common.notifier import show_settings_notices
from app.common.remedy_words import MODELS, for_window
from app.common.threads import stop_thread
from app.models.download_worker import DownloadWorker
from app.models.first_run import FirstRunPage
from app.models.gpu_tasks import ModelsGpuTasks
from app.models.installed import InstalledPage
from app.models.progress import ProgressPanel
from app.models.setup import SetupRun
from engines import paths
from engines.error_sentences import shown
from engines.models import download
from engines.models.inventory import (
    default_catalog,
    human_size,
    installed_sets,
    load_extra_roots,
    machine_report,
    save_extra_roots,
)

if TYPE_CHECKING:
    from app.common.gpu_service import GpuService
    from app.models.controller import ModelsController

log = logging.getLogger(__name__)

PLAN_LINES = 12


class ModelManagerDialog(QDialog):
    planRequested = Signal(object)
    downloadRequested = Signal(object, object)

    def __init__(self, controller: ModelsController, gpu_service: GpuService,
                 parent: QWidget | None = None) -> None:
        """`controller`: the models controller (its `catalog`, `notifier`, `models_changed()`);
        `gpu_service`: the GPU worker service, which runs builds and the self-test."""
        super().__init__(parent)
        self.setObjectName("modelManagerDialog")
        self.setWindowTitle("Models")
        self.resize(820, 680)
        self.controller = controller
        self.plan = None
        self.catalog = controller.catalog  # until refresh() reads it again
        layout = QVBoxLayout(self)
        self.tabs = QTabWidget()
        self.tabs.setObjectName("modelsTabs")
        self.first_run = FirstRunPage()
        self.installed_page = InstalledPage()
        self.tabs.addTab(self.first_run, "Get models")
        self.tabs.addTab(self.installed_page, "Installed")
        layout.addWidget(self.tabs, stretch=1)
        bottom = self.bottom = ProgressPanel()
        layout.addWidget(bottom)
        self.message, self.cancel_download_button = bottom.message, bottom.cancel_button
        self.file_progress, self.total_progress = bottom.file_progress, bottom.total_progress
        self.buttons = bottom.buttons
        self.buttons.rejected.connect(self.reject)
        # the advanced widgets, under the names the handlers and tests use
        advanced = self.advanced = self.first_run.advanced
        self.set_checks, self.precision_checks = advanced.set_checks, advanced.precision_checks
        self.file_kind, self.arch_edit = advanced.file_kind, advanced.arch_edit
        self.plan_label, self.folders_list = advanced.plan_label, advanced.folders_list
        self.token_edit = advanced.token_edit
        self.machine_label, self.installed = (self.installed_page.machine_label,
                                              self.installed_page.tree)

        self.thread = QThread(self)
        self.thread.setObjectName("downloadThread")
        self.downloader = DownloadWorker()
        self.downloader.moveToThread(self.thread)
        self.planRequested.connect(self.downloader.plan)
        self.downloadRequested.connect(self.downloader.run)
        self.downloader.planned.connect(self._planned)
        self.downloader.progress.connect(bottom.show_progress)
        self.downloader.finished.connect(self._downloaded)
        self.downloader.failed.connect(self._failed)
        self.thread.start()
        self.gpu_tasks = ModelsGpuTasks(gpu_service, self)
        self.gpu_tasks.said.connect(self.say)
        self.setup = SetupRun(self)

        advanced.sizes_button.clicked.connect(lambda: self.request_plan())
        advanced.download_button.clicked.connect(self.start_download)
        advanced.token_button.clicked.connect(self.store_token)
        advanced.add_folder_button.clicked.connect(lambda: self.add_folder())
        advanced.build_button.clicked.connect(self.start_build)
        advanced.selftest_button.clicked.connect(self.start_selftest)
        self.cancel_download_button.clicked.connect(self.cancel)
        self.first_run.get_button.clicked.connect(lambda: self.setup.start())
        self.refresh()

    # ------------------------------------------------------------------ state
    def say(self, text: str) -> None:
        self.message.setText(for_window(text, MODELS))

    def show_get_models(self) -> None:
        self.tabs.setCurrentWidget(self.first_run)

    def refresh(self) -> None:
        """Re-read what is installed; a failure (a models folder that cannot be made) is one
        sentence here and in the status bar, and the dialog keeps what it showed."""
        try:
            self._fill()
        except CATALOG_ERRORS as exc:  # one sentence, the traceback to the log
            self.say(self.controller.notifier.failed("Could not list the installed models", exc))
        notices = show_settings_notices(self.controller.notifier)  # read by the catalog
        if notices:
            self.say("  ".join(notices))

    def _fill(self) -> None:
        catalog = default_catalog()
        self.catalog = catalog
        report = machine_report(catalog.gpu, tensorrt=catalog.tensorrt_version)
        self.installed_page.fill(report.lines(), installed_sets(catalog), catalog.roots,
                                 catalog)  # and what each set's defaults would pick
        if catalog.gpu is not None and not self.arch_edit.text():
            self.arch_edit.setText(catalog.gpu.sm)
        self.folders_list.clear()
        for root in load_extra_roots(paths.data_dir()):
            self.folders_list.addItem(str(root))
        if not self.folders_list.count():  # an empty list would be an empty box
            placeholder = QListWidgetItem("None added yet")
            placeholder.setFlags(Qt.ItemFlag.NoItemFlags)
            self.folders_list.addItem(placeholder)
        self.setup.show_recommendation(catalog)

    def extra_folders(self) -> list[str]:
        items = (self.folders_list.item(i) for i in range(self.folders_list.count()))
        return [item.text() for item in items if item.flags() != Qt.ItemFlag.NoItemFlags]

    def models_dir(self) -> Path | None:
        """The models folder (created if missing), or None after saying why it cannot be."""
        try:
            return Path(paths.models_dir())
        except CATALOG_ERRORS as exc:
            self.say(self.controller.notifier.failed("Could not create the models folder",
                                                     exc))
            return None

    def busy(self, on: bool) -> None:
        """A download, build or self-test is running: one at a time, and Cancel stops it."""
        self.cancel_download_button.setEnabled(on)
        self.first_run.get_button.setEnabled(not on and self.setup.can_start)
        self.advanced.sizes_button.setEnabled(not on)
        self.advanced.download_button.setEnabled(not on and self.plan is not None)
        self.advanced.build_button.setEnabled(not on)
        self.advanced.selftest_button.setEnabled(not on)

    def cancel(self) -> None:
        """Stop whatever runs; a "Download and set up" run also takes no further step (a
        download starting after its file list arrives would not see the cancel)."""
        self.downloader.cancel.set()
        self.gpu_tasks.cancel()
        self.setup.stopped("Cancelled; files already complete are kept.")

    # ------------------------------------------------------------------ downloads
    def _selection(self) -> dict | None:
        """The advanced download choice, or None after saying what is missing."""
        choice = self.advanced.selection()
        if isinstance(choice, str):
            self.say(choice)
            return None
        models = self.models_dir()
        return None if models is None else {**choice, "models_dir": models}

    def request_plan(self, selection: dict | None = None) -> None:
        selection = selection or self._selection()
        if selection is None:
            return
        self.say("Asking Hugging Face for the file list...")
        self.busy(True)
        self.planRequested.emit(selection)

    def _planned(self, plan) -> None:
        self.plan = plan if plan.files else None
        self.busy(False)
        if not plan.files:
            self._failed("Hugging Face has no files for that choice; try another graphics "
                         "card architecture, or ONNX graphs in Backend.")
            return
        lines = [f"{len(plan.files)} file(s), {human_size(plan.total_bytes)} in total:"]
        lines += [f"{f.path} ({human_size(f.size)})" for f in plan.files[:PLAN_LINES]]
        if len(plan.files) > PLAN_LINES:
            lines.append(f"... and {len(plan.files) - PLAN_LINES} more")
        self.plan_label.setText("\n".join(lines))
        if self.setup.planned(plan):
            return
        self.say("Check the sizes, then press Download.")

    def start_download(self) -> None:
        models = self.models_dir() if self.plan is not None else None
        if models is None:
            return
        self.busy(True)
        self.say(f"Downloading {self.plan.summary()}...")
        self.downloadRequested.emit(self.plan, models)

    def _downloaded(self, written: list) -> None:
        self.busy(False)
        self.say(f"Downloaded {len(written)} file(s).")
        self.refresh()
        self.controller.models_changed()
        self.setup.downloaded()

    def _failed(self, message: str) -> None:
        self.busy(False)
        self.say(message)
        self.setup.stopped(message)

    def store_token(self) -> None:
        token = self.token_edit.text().strip()
        if not token:
            self.say("Paste a token from https://huggingface.co/settings/tokens first.")
            return
        try:
            where = download.store_token(token)
        except Exception as exc:  # noqa: BLE001 - a keyring backend may raise anything
            self.say(self.controller.notifier.failed("Could not store the token", exc))
            return
        self.token_edit.clear()
        self.say(f"Token stored ({where}).")

    def add_folder(self, folder: str | None = None) -> None:
        if not folder:
            folder = QFileDialog.getExistingDirectory(self, "Add a models folder")
        if not folder:
            return
        try:
            data = paths.data_dir()
            roots = load_extra_roots(data) + [Path(folder)]
            save_extra_roots(data, roots)
        except SETTINGS_ERRORS as exc:  # the old list stays as it was
            self.say(self.controller.notifier.failed(
                f"Could not add {shown(folder)} to the model folders", exc))
            return
        self.refresh()
        self.controller.models_changed()

    # ------------------------------------------------------------------ GPU tasks
    def start_build(self) -> None:
        models = self.models_dir()
        if models is None:
            return
        refusal = self.gpu_tasks.build(self.catalog, models,
                                       self.advanced.build_set.currentData(),
                                       self.advanced.build_precision.currentData())
        self._started(refusal)

    def start_selftest(self) -> None:
        models = self.models_dir()
        if models is not None:
            self._started(self.gpu_tasks.selftest(self.catalog, models))

    def _started(self, refusal: str | None) -> bool:
        if refusal:
            self.say(refusal)
            return False
        self.busy(True)
        return True

    def gpu_task_ended(self, kind: str, text: str, ok: bool) -> None:
        """Called by the setup run for every task this dialog started."""
        self.busy(False)
        self.say(text)
        if ok:
            self.refresh()
            self.controller.models_changed()

    def done(self, code: int) -> None:
        """Closing the dialog stops what it started (a download would go on unseen); its
        download thread stays for the next time it is opened."""
        self.cancel()
        super().done(code)

    def shutdown(self) -> None:
        """The window is closing: stop what runs and end the download thread (a download
        stops at its next block; a request in flight at its timeout)."""
        self.cancel()
        stop_thread(self.thread)

