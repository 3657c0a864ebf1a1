"""The Models dialog: what this machine can run, downloads, engine builds and the self-test.

Downloads run on their own QThread (network and disk only); builds and the self-test are
submitted to the one GPU worker, since TensorRT objects live on that thread only.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QThread, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QFileDialog,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QProgressBar,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
)

from app.download_worker import DownloadWorker
from app.notifier import show_settings_notices
from engines.errors import StudioError
from engines.failures import shown
from engines.models.inventory import human_size

log = logging.getLogger(__name__)

DOWNLOAD_SETS = ("medium", "sm-music", "sm-sfx", "t5gemma")
PRECISIONS = ("fp16", "fp32", "fp8")


class ModelManagerDialog(QDialog):
    planRequested = Signal(object)
    downloadRequested = Signal(object, object)

    def __init__(self, controller, gpu_service, parent=None) -> None:
        """`controller`: the models controller (its `catalog`, `models_changed()`);
        `gpu_service`: the GPU worker service, which runs builds and the self-test."""
        super().__init__(parent)
        self.setObjectName("modelManagerDialog")
        self.setWindowTitle("Models")
        self.resize(760, 640)
        self.controller = controller
        self.gpu_service = gpu_service
        self.plan = None
        self.catalog = controller.catalog  # until refresh() reads it again
        self._task_ids: set[int] = set()
        layout = QVBoxLayout(self)
        self.machine_label = QLabel()
        self.machine_label.setObjectName("machineLabel")
        self.machine_label.setWordWrap(True)
        layout.addWidget(self.machine_label)
        self.installed = QTreeWidget()
        self.installed.setObjectName("installedTree")
        self.installed.setHeaderLabels(["Set / file", "Size or state"])
        layout.addWidget(self.installed, stretch=1)

        folders = QHBoxLayout()
        self.folders_list = QListWidget()
        self.folders_list.setObjectName("extraFoldersList")
        self.folders_list.setMaximumHeight(50)
        self.add_folder_button = QPushButton("Add models folder...")
        self.add_folder_button.setObjectName("addFolderButton")
        folders.addWidget(self.folders_list, stretch=1)
        folders.addWidget(self.add_folder_button)
        layout.addLayout(folders)

        box = QGroupBox("Download from Hugging Face")
        grid = QGridLayout(box)
        self.set_checks = {}
        for col, name in enumerate(DOWNLOAD_SETS):
            check = QCheckBox(name)
            check.setObjectName(f"downloadSet_{name}")
            grid.addWidget(check, 0, col)
            self.set_checks[name] = check
        self.precision_checks = {}
        for col, name in enumerate(PRECISIONS):
            check = QCheckBox(name)
            check.setObjectName(f"downloadPrecision_{name}")
            check.setChecked(name == "fp16")
            grid.addWidget(check, 1, col)
            self.precision_checks[name] = check
        self.onnx_check = QCheckBox("ONNX graphs (to build here)")
        self.onnx_check.setObjectName("downloadOnnxCheck")
        grid.addWidget(self.onnx_check, 1, 3)
        self.arch_edit = QLineEdit()
        self.arch_edit.setObjectName("downloadArchEdit")
        self.arch_edit.setPlaceholderText("arch, e.g. sm_90")
        grid.addWidget(self.arch_edit, 2, 0)
        self.sizes_button = QPushButton("Show files and sizes")
        self.sizes_button.setObjectName("showSizesButton")
        self.download_button = QPushButton("Download")
        self.download_button.setObjectName("downloadButton")
        self.download_button.setEnabled(False)
        self.cancel_download_button = QPushButton("Cancel")
        self.cancel_download_button.setObjectName("cancelDownloadButton")
        self.cancel_download_button.setEnabled(False)
        grid.addWidget(self.sizes_button, 2, 1)
        grid.addWidget(self.download_button, 2, 2)
        grid.addWidget(self.cancel_download_button, 2, 3)
        self.plan_label = QLabel("")
        self.plan_label.setObjectName("planLabel")
        self.plan_label.setWordWrap(True)
        grid.addWidget(self.plan_label, 3, 0, 1, 4)
        self.file_progress = QProgressBar()
        self.file_progress.setObjectName("fileProgress")
        self.total_progress = QProgressBar()
        self.total_progress.setObjectName("totalProgress")
        grid.addWidget(self.file_progress, 4, 0, 1, 2)
        grid.addWidget(self.total_progress, 4, 2, 1, 2)
        self.token_edit = QLineEdit()
        self.token_edit.setObjectName("tokenEdit")
        self.token_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.token_edit.setPlaceholderText("Hugging Face token (stored in the system keyring)")
        self.token_button = QPushButton("Store token")
        self.token_button.setObjectName("storeTokenButton")
        grid.addWidget(self.token_edit, 5, 0, 1, 3)
        grid.addWidget(self.token_button, 5, 3)
        layout.addWidget(box)

        build = QHBoxLayout()
        self.build_set = QComboBox()
        self.build_set.setObjectName("buildSetCombo")
        for name in ("sm-sfx", "sm-music", "medium", "t5gemma"):
            self.build_set.addItem(name)
        self.build_precision = QComboBox()
        self.build_precision.setObjectName("buildPrecisionCombo")
        self.build_precision.addItems(PRECISIONS)
        self.build_button = QPushButton("Build engines from ONNX")
        self.build_button.setObjectName("buildButton")
        self.selftest_button = QPushButton("Self-test this GPU")
        self.selftest_button.setObjectName("selfTestButton")
        build.addWidget(self.build_set)
        build.addWidget(self.build_precision)
        build.addWidget(self.build_button)
        build.addWidget(self.selftest_button)
        layout.addLayout(build)
        self.message = QLabel("")
        self.message.setObjectName("modelManagerMessage")
        self.message.setWordWrap(True)
        layout.addWidget(self.message)

        self.thread = QThread(self)
        self.thread.setObjectName("downloadThread")
        self.downloader = DownloadWorker()
        self.downloader.moveToThread(self.thread)
        self.planRequested.connect(self.downloader.plan)
        self.downloadRequested.connect(self.downloader.run)
        self.downloader.planned.connect(self._planned)
        self.downloader.progress.connect(self._progress)
        self.downloader.finished.connect(self._downloaded)
        self.downloader.failed.connect(self._failed)
        self.thread.start()

        self.sizes_button.clicked.connect(self.request_plan)
        self.download_button.clicked.connect(self.start_download)
        self.cancel_download_button.clicked.connect(self.downloader.cancel.set)
        self.token_button.clicked.connect(self.store_token)
        self.add_folder_button.clicked.connect(self.add_folder)
        self.build_button.clicked.connect(self.start_build)
        self.selftest_button.clicked.connect(self.start_selftest)
        worker = gpu_service.worker
        worker.taskProgress.connect(self._task_progress)
        worker.taskDone.connect(self._task_done)
        worker.taskFailed.connect(self._task_failed)
        self.refresh()

    # ------------------------------------------------------------------ state
    def say(self, text: str) -> None:
        self.message.setText(text)

    def refresh(self) -> None:
        """Re-read what is installed; a failure (a models folder that cannot be made) is one
        sentence here and in the status bar, and the dialog keeps what it showed."""
        try:
            self._fill()
        except Exception as exc:  # noqa: BLE001 - one sentence, the traceback to the log
            self.say(self.controller.notifier.failed("Could not list the installed models", exc))
        notices = show_settings_notices(self.controller.notifier)  # read by the catalog
        if notices:
            self.say("  ".join(notices))

    def _fill(self) -> None:
        from engines import paths
        from engines.models.inventory import (
            default_catalog,
            installed_sets,
            load_extra_roots,
            machine_report,
        )

        catalog = default_catalog()
        self.catalog = catalog
        report = machine_report(catalog.gpu)
        self.machine_label.setText("\n".join(report.lines()))
        if catalog.gpu is not None and not self.arch_edit.text():
            self.arch_edit.setText(catalog.gpu.sm)
        self.installed.clear()
        for entry in installed_sets(catalog):
            top = QTreeWidgetItem([f"{entry.model}: {entry.label}",
                                   f"{len(entry.files)} file(s), {human_size(entry.total_bytes)}"])
            for path, size in entry.files:
                top.addChild(QTreeWidgetItem([str(path), human_size(size)]))
            for where, state in entry.runnable.items():
                top.addChild(QTreeWidgetItem([where, state]))
            self.installed.addTopLevelItem(top)
        self.folders_list.clear()
        for root in load_extra_roots(paths.data_dir()):
            self.folders_list.addItem(str(root))
        gpu = catalog.gpu
        if gpu is None or not gpu.has_fp8:
            self.precision_checks["fp8"].setToolTip("fp8 needs FP8 tensor cores (compute "
                                                     "capability 8.9+).")

    def _selection(self) -> dict | None:
        sets = [n for n, c in self.set_checks.items() if c.isChecked()]
        precisions = [n for n, c in self.precision_checks.items() if c.isChecked()]
        fmt = "onnx" if self.onnx_check.isChecked() else "trt"
        arch = self.arch_edit.text().strip()
        if not sets:
            self.say("Choose at least one set to download.")
            return None
        if not precisions:
            self.say("Choose at least one precision tier.")
            return None
        if fmt == "trt" and not (arch.startswith("sm_") and arch[3:].isdigit()):
            self.say("No NVIDIA GPU was found, so the engine arch is unknown: type the target "
                     "arch (e.g. sm_90) or choose ONNX graphs.")
            return None
        models = self._models_dir()
        if models is None:
            return None
        return {"sets": sets, "precisions": precisions, "fmt": fmt, "arch": arch,
                "models_dir": models}

    def _models_dir(self) -> Path | None:
        """The models folder (created if missing), or None after saying why it cannot be."""
        from engines import paths

        try:
            return Path(paths.models_dir())
        except Exception as exc:  # noqa: BLE001
            self.say(self.controller.notifier.failed("Could not create the models folder",
                                                     exc))
            return None

    # ------------------------------------------------------------------ downloads
    def request_plan(self) -> None:
        selection = self._selection()
        if selection is None:
            return
        self.say("Asking the hub for the file list...")
        self.planRequested.emit(selection)

    def _planned(self, plan) -> None:
        self.plan = plan
        if not plan.files:
            self.say("The hub has no files for that choice; try another arch or ONNX graphs.")
            self.download_button.setEnabled(False)
            return
        lines = [f"{len(plan.files)} file(s), {human_size(plan.total_bytes)} in total:"]
        lines += [f"{f.path} ({human_size(f.size)})" for f in plan.files[:12]]
        if len(plan.files) > 12:
            lines.append(f"... and {len(plan.files) - 12} more")
        self.plan_label.setText("\n".join(lines))
        self.download_button.setEnabled(True)
        self.say("Check the sizes, then Download.")

    def start_download(self) -> None:
        if self.plan is None:
            return
        models = self._models_dir()
        if models is None:
            return
        self.download_button.setEnabled(False)
        self.cancel_download_button.setEnabled(True)
        self.say("Downloading...")
        self.downloadRequested.emit(self.plan, models)

    def _progress(self, name: str, done: int, total: int, all_done: int, all_total: int) -> None:
        self.file_progress.setValue(int(100 * done / max(total, 1)))
        self.total_progress.setValue(int(100 * all_done / max(all_total, 1)))
        self.file_progress.setFormat(f"{Path(name).name}: %p%")

    def _downloaded(self, written: list) -> None:
        self.cancel_download_button.setEnabled(False)
        self.say(f"Downloaded {len(written)} file(s).")
        self.refresh()
        self.controller.models_changed()

    def _failed(self, message: str) -> None:
        self.cancel_download_button.setEnabled(False)
        self.download_button.setEnabled(self.plan is not None)
        self.say(message)

    def store_token(self) -> None:
        from engines.models import download as dl

        token = self.token_edit.text().strip()
        if not token:
            self.say("Paste a token from https://huggingface.co/settings/tokens first.")
            return
        try:
            where = dl.store_token(token)
        except Exception as exc:  # noqa: BLE001 - a keyring backend may raise anything
            self.say(self.controller.notifier.failed("Could not store the token", exc))
            return
        self.token_edit.clear()
        self.say(f"Token stored ({where}).")

    def add_folder(self, folder: str | None = None) -> None:
        from engines import paths
        from engines.models.inventory import load_extra_roots, save_extra_roots

        if not folder:
            folder = QFileDialog.getExistingDirectory(self, "Add a models folder")
        if not folder:
            return
        try:
            data = paths.data_dir()
            roots = load_extra_roots(data) + [Path(folder)]
            save_extra_roots(data, roots)
        except Exception as exc:  # noqa: BLE001 - the old list stays as it was
            self.say(self.controller.notifier.failed(
                f"Could not add {shown(folder)} to the model folders", exc))
            return
        self.refresh()
        self.controller.models_changed()

    # ------------------------------------------------------------------ GPU tasks
    def _gpu_ready(self) -> bool:
        if self.catalog.gpu is None:
            self.say("No NVIDIA GPU was found; building engines and the self-test need one "
                     "(the demo runs without).")
            return False
        if self.catalog.tensorrt_version is None:
            self.say("TensorRT is not installed; install it with pip install "
                     "'sa3-studio[tensorrt]' and restart the app.")
            return False
        return True

    def start_build(self) -> None:
        if not self._gpu_ready():
            return
        from engines import paths

        gpu = self.catalog.gpu
        models = self._models_dir()
        if models is None:
            return
        sets = [self.build_set.currentText()]
        precision = self.build_precision.currentText()
        if precision == "fp8" and not gpu.has_fp8:
            self.say(f"fp8 needs FP8 tensor cores (compute capability 8.9+); this GPU is "
                     f"{gpu.major}.{gpu.minor}: build fp16.")
            return

        def task(report, cancel):
            from engines.models import builder

            specs = builder.plan_builds(models, sets, gpu.sm, precision)
            if not specs:
                raise StudioError(f"No ONNX graphs for {sets[0]} were found; download them "
                                  f"first (tick 'ONNX graphs').")
            for spec in specs:
                report(f"Building {spec.engine_path.name}...")
                builder.build_engine(spec, gpu_cc=(gpu.major, gpu.minor), cancel=cancel,
                                     timing_cache=paths.cache_dir() / f"timing-{gpu.sm}.cache")
            return f"Built {len(specs)} engine(s) for {gpu.sm}."

        self._submit(task, "The build")

    def start_selftest(self) -> None:
        if not self._gpu_ready():
            return
        from engines.cli.models import run_selftest

        models = self._models_dir()
        if models is None:
            return
        catalog = self.catalog

        def task(report, cancel):
            timings = run_selftest(models, catalog, report)
            return (f"Self-test passed: engines built in {timings['build_s']} s, first take "
                    f"{timings['first_ms']} ms, replay {timings['replay_ms']} ms.")

        self._submit(task, "The self-test")

    def _submit(self, fn, label: str) -> None:
        host = self.gpu_service.host
        if host is None or self.gpu_service.running or self.gpu_service.list_running:
            self.say("The GPU is busy generating; try again when it is done.")
            return
        task = self.gpu_service.new_task(fn, label)
        self._task_ids.add(task.task_id)
        self.say(f"{label} is running on the GPU worker...")
        host.submit_task(task)

    def _task_progress(self, task_id: int, text: str) -> None:
        if task_id in self._task_ids:
            self.say(text)

    def _task_done(self, task_id: int, result) -> None:
        if task_id in self._task_ids:
            self._task_ids.discard(task_id)
            self.say(str(result))
            self.refresh()
            self.controller.models_changed()

    def _task_failed(self, task_id: int, message: str) -> None:
        if task_id in self._task_ids:
            self._task_ids.discard(task_id)
            self.say(message)

    def done(self, code: int) -> None:  # closing the dialog stops its download thread
        self.downloader.cancel.set()
        self.thread.quit()
        self.thread.wait(5000)
        super().done(code)
