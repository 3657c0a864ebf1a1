"""The progress monitor of a TensorRT build: phases and steps to a callback, and cancel.

TensorRT calls the monitor from its own threads. Returning False from `step_complete` is how
TensorRT lets a caller stop a build mid-way; a broken progress display must neither cancel nor
crash the build.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]


@functools.lru_cache(maxsize=4)
def monitor_class(base: type) -> type:
    """A trt.IProgressMonitor subclass (built lazily: the base lives in the tensorrt module)."""

    class BuildProgress(base):  # type: ignore[misc, valid-type]
        """Forwards phases and steps to `progress`; cancels at the next step once `cancel` is
        set. TensorRT calls it from its own threads."""

        def __init__(self, progress: Progress | None, cancel: threading.Event | None) -> None:
            base.__init__(self)  # pybind requires the base __init__ when overriding it
            self._progress = progress
            self._cancel = cancel
            self._steps: dict[str, int] = {}
            self._lock = threading.Lock()
            self.cancelled = False

        def _report(self, phase: str, step: int, steps: int) -> None:
            if self._progress is None:
                return
            try:
                self._progress(phase, step, steps)
            except Exception:  # a broken display must not cancel (or crash) the build
                log.exception("build progress callback failed")

        def phase_start(self, phase_name: str, parent_phase: str | None, num_steps: int) -> None:
            with self._lock:
                self._steps[phase_name] = int(num_steps)
            self._report(phase_name, 0, int(num_steps))

        def step_complete(self, phase_name: str, step: int) -> bool:
            if self._cancel is not None and self._cancel.is_set():
                self.cancelled = True
                return False
            with self._lock:
                steps = self._steps.get(phase_name, 0)
            self._report(phase_name, int(step) + 1, steps)
            return True

        def phase_finish(self, phase_name: str) -> None:
            with self._lock:
                steps = self._steps.pop(phase_name, 0)
            if not self.cancelled:
                self._report(phase_name, steps, steps)

    return BuildProgress
