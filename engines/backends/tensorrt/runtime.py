"""The process-wide TensorRT runtime and the logger that collects TensorRT's errors.

One runtime per process (deserializing is its only job and it is thread-safe), and one logger
whose recent errors let a failed load or a refused call name TensorRT's own reason.
tensorrt is imported on first use (engines.lazy), in `import_tensorrt`, so `engines` imports
without it.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import deque
from typing import Any

from engines.backends.tensorrt.engine_error import EngineError
from engines.catalog.tensorrt_version import require_supported
from engines.lazy import lazy_import, real_module

log = logging.getLogger(__name__)
tensorrt = lazy_import("tensorrt")


@functools.lru_cache(maxsize=4)
def _collector_class(base: type) -> type:
    """A trt.ILogger subclass (built lazily: the base class lives in the tensorrt module)."""

    class TrtLogCollector(base):  # type: ignore[misc, valid-type]
        """Routes TensorRT messages into Python logging and keeps the recent errors, so a
        failed deserialize can name its reason. TensorRT may call `log` from any thread."""

        def __init__(self, keep: int = 32) -> None:
            base.__init__(self)  # pybind requires the base __init__ when overriding it
            self._lock = threading.Lock()
            self._errors: deque[tuple[int, str]] = deque(maxlen=keep)
            self._count = 0

        def log(self, severity: Any, msg: str) -> None:
            level = getattr(severity, "name", str(severity)).rsplit(".", 1)[-1]
            if level in ("INTERNAL_ERROR", "ERROR"):
                with self._lock:
                    self._count += 1
                    self._errors.append((self._count, str(msg)))
                log.error("TensorRT: %s", msg)
            elif level == "WARNING":
                log.warning("TensorRT: %s", msg)
            else:
                log.debug("TensorRT: %s", msg)

        @property
        def error_count(self) -> int:
            """How many errors were logged so far (a mark for `errors_since`)."""
            with self._lock:
                return self._count

        def errors_since(self, mark: int) -> list[str]:
            with self._lock:
                return [msg for number, msg in self._errors if number > mark]

    return TrtLogCollector


def make_logger(trt: Any) -> Any:
    """A fresh collecting logger for the given tensorrt module."""
    return _collector_class(trt.ILogger)()


_shared: tuple[Any, Any, Any] | None = None  # (tensorrt module, Runtime, logger)
_shared_lock = threading.Lock()


def shared_runtime(trt: Any) -> tuple[Any, Any]:
    """The one trt.Runtime of this process and its logger (created on first use)."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared[0] is not trt:
            logger = make_logger(trt)
            try:
                runtime = trt.Runtime(logger)
            except Exception as err:  # pybind raises when createInferRuntime returns null
                raise EngineError(
                    f"TensorRT {version_of(trt)} could not start ({err}); check the NVIDIA "
                    "driver and the CUDA installation."
                ) from err
            _shared = (trt, runtime, logger)
        return _shared[1], _shared[2]


def import_tensorrt() -> Any:
    """The tensorrt module, or an EngineError that says how to get a supported one."""
    try:
        trt = real_module(tensorrt)
    except ImportError as err:
        raise EngineError(
            f"TensorRT is not installed ({err}); install sa3-studio[tensorrt] or use the "
            "ONNX Runtime backend."
        ) from err
    require_supported(trt)  # TensorRT 11 and others: one sentence, not an AttributeError later
    return trt


def version_of(trt: Any) -> str:
    """The version string of a tensorrt module ('unknown' for one that has none)."""
    return str(getattr(trt, "__version__", "unknown"))
