"""One lazy-import helper for heavy or optional third-party modules (tensorrt, cuda-python,
onnxruntime, scipy, pyloudnorm, psycopg), declared at module top as Polygraphy does:

    trt = lazy_import("tensorrt")          # nothing imported yet
    ...
    trt.Logger(...)                        # imported here, on first use

so the window opens fast, `--help` answers at once, and a machine without the optional package
still imports every module. `available()` asks whether the package is installed without
importing it. A missing package raises ModuleNotFoundError on first use, as a plain import
would; the caller words it as an error with a remedy.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from types import ModuleType


class LazyModule:
    """A stand-in for a module that imports it on the first attribute read."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None
        self._lock = threading.Lock()

    def load(self) -> ModuleType:
        """The real module, imported now if it was not yet."""
        if self._module is None:
            with self._lock:
                if self._module is None:
                    self._module = importlib.import_module(self._name)
        return self._module

    def available(self) -> bool:
        """True when the module can be imported here (found on the path), without importing it."""
        if self._module is not None:
            return True
        try:
            return importlib.util.find_spec(self._name) is not None
        except (ImportError, ValueError):  # a parent package missing, or a broken one
            return False

    def __getattr__(self, attr: str):
        if attr.startswith("_"):
            raise AttributeError(attr)
        return getattr(self.load(), attr)

    def __repr__(self) -> str:
        state = "loaded" if self._module is not None else "not loaded"
        return f"<lazy module {self._name!r} ({state})>"


def lazy_import(name: str) -> LazyModule:
    """`name` imported on first use (see the module docstring)."""
    return LazyModule(name)
