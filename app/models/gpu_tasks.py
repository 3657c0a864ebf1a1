"""Engine builds and the self-test for the Models dialog. Both run on the one GPU worker, since
TensorRT objects live on that thread only; what they say comes back as signals, one sentence
at a time."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal

from app.common.gpu_jobs import task_job
from app.common.gpu_service import GpuService
from app.common.own_jobs import OwnJobs
from engines import paths
from engines.catalog import tensorrt_version as trt_version
from engines.errors import StudioError
from engines.models import build_plan, builder
from engines.models.selftest import run_selftest

BUILD = "build"
SELFTEST = "selftest"


class ModelsGpuTasks(OwnJobs, QObject):
    """Submits builds and self-tests; `said` carries progress, `finished` and `failed` carry
    (kind, sentence) for the task this object submitted, never for anyone else's."""

    said = Signal(str)
    finished = Signal(str, str)
    failed = Signal(str, str)

    def __init__(self, gpu_service: GpuService, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.gpu_service = gpu_service
        self.pending: dict[int, str] = {}
        self.listen_to(gpu_service)

    @property
    def busy(self) -> bool:
        return bool(self.pending)

    @staticmethod
    def refusal(catalog) -> str | None:
        """Why builds and the self-test cannot run here, or None when they can."""
        if catalog.gpu is None:
            return ("No NVIDIA graphics card was found; building engines and the self-test "
                    "need one (the demo runs without).")
        if catalog.tensorrt_version is None:
            return (f"TensorRT is not installed; install it with "
                    f"`{trt_version.install_command()}` and restart SA3 Studio.")
        return trt_version.unsupported_reason(catalog.tensorrt_version)

    def build(self, catalog, models: Path, set_key: str, precision: str) -> str | None:
        """Start building `set_key`'s engines; the sentence that refuses it, or None."""
        refusal = self.refusal(catalog)
        if refusal:
            return refusal
        gpu = catalog.gpu
        if precision == "fp8" and not gpu.has_fp8:
            return (f"fp8 needs a graphics card with FP8 support (compute capability 8.9 or "
                    f"newer); this one is {gpu.major}.{gpu.minor}: build fp16.")

        def task(report, cancel):
            specs = build_plan.plan_builds(models, [set_key], gpu.sm, precision)
            if not specs:
                raise StudioError(f"No ONNX graphs for {set_key} were found; download them "
                                  f"first (Backend: ONNX graphs, under Advanced options).")
            for number, spec in enumerate(specs, 1):
                report(f"Building engine {number} of {len(specs)} ({spec.engine_path.name}); "
                       f"this can take several minutes...")
                builder.build_engine(spec, gpu_cc=(gpu.major, gpu.minor), cancel=cancel,
                                     timing_cache=paths.cache_dir() / f"timing-{gpu.sm}.cache")
            return f"Built {len(specs)} engine(s) for this graphics card."

        return self._submit(task, BUILD, "The build")

    def selftest(self, catalog, models: Path) -> str | None:
        """Start the self-test; the sentence that refuses it, or None."""
        refusal = self.refusal(catalog)
        if refusal:
            return refusal

        def task(report, cancel):
            timings = run_selftest(models, catalog, lambda name: report(f"building {name}"))
            return (f"Self-test passed: engines built in {timings['build_s']} s, first take "
                    f"{timings['first_ms']} ms, then {timings['replay_ms']} ms per take.")

        return self._submit(task, SELFTEST, "The self-test")

    def cancel(self) -> None:
        if self.busy and self.gpu_service.host is not None:
            self.gpu_service.host.cancel()

    def _submit(self, fn, kind: str, label: str) -> str | None:
        service = self.gpu_service
        host = service.host
        if host is None or service.busy or self.busy:
            return "The graphics card is busy; try again when it is done."
        self.pending[service.submit(task_job(fn, label))] = kind
        self.said.emit(f"{label} is running...")
        return None

    def _report(self, text: str) -> None:
        self.said.emit(text)

    def _done(self, task_id: int, result) -> None:
        kind = self.pending.pop(task_id, None)
        if kind is not None:
            self.finished.emit(kind, str(result))

    def _failed(self, task_id: int, message: str) -> None:
        kind = self.pending.pop(task_id, None)
        if kind is not None:
            self.failed.emit(kind, message)
