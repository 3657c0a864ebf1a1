"""One lazy-import helper for heavy or optional third-party modules (tensorrt, cuda-python,
onnxruntime, scipy, pyloudnorm, huggingface_hub, psycopg), declared at module top as Polygraphy
does:

    trt = lazy_import("tensorrt")          # nothing imported yet
    ...
    trt.Logger(...)                        # imported here, on first use

so the window opens fast, `--help` answers at once, and a machine without the optional package
still imports every module. `is_installed(trt)` asks whether the package is there without
importing it; `real_module(trt)` is the module itself (imported now if it was not yet). A
missing package raises ImportError on first use, as a plain import would; the caller words it
as an error with a remedy. (Functions, not methods: a method `load` would hide `onnx.load`.)

A package that moved between versions names its layouts in order, newest first:
`lazy_import("cuda.bindings.driver", "cuda.cuda")` is the first of them that imports.

Each use reads the module from `sys.modules`, like an `import` statement inside the function
would: a module replaced there (a test's fake TensorRT, or None for "not installed") is the one
the next use gets.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType
from typing import Any

# Module dunders worth passing through; other dunders (probes by copy, pickle, inspect) are the
# stand-in's own and must not import anything.
_MODULE_DUNDERS = frozenset({"__version__", "__file__"})


def _imported(name: str) -> ModuleType:
    """`name` from sys.modules, imported now if it is not there (ImportError when it is None).
    Through importlib even when it is there: a module another thread is still importing is
    waited for, where sys.modules alone hands out a half-initialised one (the window imports
    scipy on a pool thread while the GUI thread may measure loudness)."""
    return importlib.import_module(name)


def _findable(name: str) -> bool:
    if name in sys.modules:
        return sys.modules[name] is not None
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent package missing, or a broken one
        return False


class LazyModule:
    """A stand-in for a module that imports it on the first attribute read. Its own state is
    private so that every public name is the module's."""

    def __init__(self, name: str, *alternatives: str) -> None:
        self._names = (name, *alternatives)
        self._found: str | None = None  # which of the names imported, once one did

    def _load(self) -> ModuleType:
        if self._found is not None:
            return _imported(self._found)
        for name in self._names[:-1]:
            try:
                module = _imported(name)
            except ImportError:
                continue
            self._found = name
            return module
        module = _imported(self._names[-1])  # the last name's ImportError is the one raised
        self._found = self._names[-1]
        return module

    def __getattr__(self, attr: str) -> Any:
        if attr in ("_names", "_found") or (
                attr.startswith("__") and attr not in _MODULE_DUNDERS):
            raise AttributeError(attr)
        return getattr(self._load(), attr)

    def __repr__(self) -> str:
        state = f"loaded as {self._found!r}" if self._found is not None else "not loaded"
        return f"<lazy module {' or '.join(map(repr, self._names))} ({state})>"


def lazy_import(name: str, *alternatives: str) -> LazyModule:
    """`name` (or the first of `alternatives` that imports, when it does not) imported on first
    use (see the module docstring)."""
    return LazyModule(name, *alternatives)


def real_module(lazy: LazyModule) -> ModuleType:
    """The module behind `lazy`, imported now if it was not yet (ImportError when none of its
    names imports)."""
    return lazy._load()


def is_installed(lazy: LazyModule) -> bool:
    """True when one of `lazy`'s names can be imported here (found on the path), without
    importing it (a dotted name's parent packages are imported to look inside them)."""
    return any(_findable(name) for name in lazy._names)
