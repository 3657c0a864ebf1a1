"""One TensorRT engine file, ready to be driven by the captured pipeline.

`TrtEngine` deserializes a plan, discovers its I/O (names, dtypes, shapes, profile 0), and wraps
an execution context whose scratch memory the pipeline owns (several engines that run one after
another share one allocation). Every TensorRT boolean is checked; what TensorRT would refuse is
refused here first with a sentence a user can act on. `enqueue` is the one exception: its False
is returned, not raised, because under capture the pipeline decides (fall back to eager).

tensorrt is imported inside the functions that need it, so `engines` imports without it.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from engines.errors import BackendError

log = logging.getLogger(__name__)

DTYPES: dict[str, int] = {
    "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4,
    "int8": 1, "uint8": 1, "bool": 1, "fp8": 1,
}
"""Element type name -> bytes per element, for every type an SA3 engine may use."""

# trt.DataType member name -> our name. Looked up by the member's name, so a type TensorRT adds
# later (INT4, FP4, E8M0: not byte-addressable) gives a clear refusal, not a KeyError.
_TRT_DTYPES = {
    "FLOAT": "float32", "HALF": "float16", "BF16": "bfloat16", "INT64": "int64",
    "INT32": "int32", "INT8": "int8", "UINT8": "uint8", "BOOL": "bool", "FP8": "fp8",
}

# Engines built with the SAME-L JIT plugin call back into Python on every enqueue.
_JIT_PLUGIN_MARKERS = ("triton_swa",)

_ARCH_FOLDER = re.compile(r"^sm_\d+$")
_DEVICE_PATTERN = re.compile(r"incompatible device|compute capability|expecting compute", re.I)
_COMPUTE_PAIR = re.compile(r"expecting compute (\d+)\.(\d+) got compute (\d+)\.(\d+)", re.I)
_PLUGIN_PATTERN = re.compile(r"plugin|creator", re.I)
_MAGIC_PATTERN = re.compile(r"magic ?tag", re.I)
_VERSION_PATTERN = re.compile(r"version|serializ", re.I)
_LIBRARY_VERSIONS = re.compile(
    r"expecting library version (\d[\d.]*\d) got (\d[\d.]*\d)?", re.I
)


class EngineError(BackendError):
    """A TensorRT engine could not be loaded or driven; the text says what to do."""


@dataclass(frozen=True)
class TensorSpec:
    """One I/O tensor of an engine as TensorRT reports it."""

    name: str
    is_input: bool
    dtype: str  # a key of DTYPES
    shape: tuple[int, ...]  # -1 where dynamic
    profile: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None = None
    """(min, opt, max) of profile 0 for an input with dynamic dims, else None."""

    @property
    def itemsize(self) -> int:
        return DTYPES[self.dtype]

    @property
    def is_dynamic(self) -> bool:
        return any(dim < 0 for dim in self.shape)

    @property
    def max_shape(self) -> tuple[int, ...]:
        """The largest shape an input can take (its static shape when it has no profile)."""
        return self.profile[2] if self.profile is not None else self.shape

    def nbytes(self, shape: tuple[int, ...] | None = None) -> int:
        """Bytes a buffer of `shape` (default: the static shape) of this tensor needs."""
        dims = self.shape if shape is None else tuple(shape)
        if any(dim < 0 for dim in dims):
            raise EngineError(
                f"Tensor '{self.name}' has no concrete shape yet {dims}; pass the shape it will "
                "run with."
            )
        count = 1
        for dim in dims:
            count *= dim
        return count * self.itemsize


@runtime_checkable
class EngineRunner(Protocol):
    """What the captured pipeline drives. TrtEngine implements it over TensorRT; GPU tests
    implement doubles with the same methods."""

    name: str
    specs: dict[str, TensorSpec]
    capturable: bool  # False for JIT SAME-L plugin engines: run eagerly, never captured
    scratch_bytes: int  # device memory needed from the shared scratch allocation

    def bind_scratch(self, ptr: int, size: int) -> None: ...

    def set_input_shape(self, name: str, shape: tuple[int, ...]) -> None: ...

    def output_shape(self, name: str) -> tuple[int, ...]: ...

    def set_address(self, name: str, ptr: int) -> bool: ...

    def enqueue(self, stream_handle: int) -> bool: ...

    def close(self) -> None: ...


# ---- the process-wide runtime and its logger ---------------------------------------------------

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
                    f"TensorRT {_version(trt)} could not start ({err}); check the NVIDIA driver "
                    "and the CUDA installation."
                ) from err
            _shared = (trt, runtime, logger)
        return _shared[1], _shared[2]


def reset_runtime() -> None:
    """Forget the process-wide runtime (tests swap the tensorrt module)."""
    global _shared
    with _shared_lock:
        _shared = None


def _import_tensorrt() -> Any:
    try:
        import tensorrt as trt
    except ImportError as err:
        raise EngineError(
            f"TensorRT is not installed ({err}); install sa3-studio[tensorrt] or use the "
            "ONNX Runtime backend."
        ) from err
    return trt


def _version(trt: Any) -> str:
    return str(getattr(trt, "__version__", "unknown"))


def _as_shape(dims: Any) -> tuple[int, ...] | None:
    """A TensorRT Dims as a tuple, or None for the invalid Dims{-1} TensorRT returns on error
    (its len() raises, because __len__ gives -1)."""
    try:
        count = len(dims)
    except (TypeError, ValueError):
        return None
    return tuple(int(dims[i]) for i in range(count))


def _short(path: Path) -> str:
    """The part of an engine path a user recognises: <sm_XX>/<subdir>/<file>."""
    return "/".join(path.parts[-3:]) if len(path.parts) >= 3 else str(path)


def _folder_sm(path: Path) -> str | None:
    for part in reversed(path.parent.parts):
        if _ARCH_FOLDER.match(part):
            return part
    return None


def _fmt(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(dim) for dim in shape) + ")"


# ---- the engine --------------------------------------------------------------------------------

class TrtEngine:
    """One deserialized engine and its user-managed execution context (EngineRunner)."""

    def __init__(self, path: Path, *, gpu_sm: str | None = None, jit_plugin: bool = False,
                 runtime: Any = None, logger: Any = None) -> None:
        trt = _import_tensorrt()
        self.path = Path(path)
        self.name = self.path.name
        self.gpu_sm = gpu_sm
        self.trt_version = _version(trt)
        self.capturable = not (jit_plugin or any(m in self.name for m in _JIT_PLUGIN_MARKERS))
        if runtime is None:
            if logger is None:
                runtime, logger = shared_runtime(trt)
            else:
                runtime = trt.Runtime(logger)  # the caller's logger, so its errors stay theirs
        self._logger = logger
        self._engine: Any = None
        self._context: Any = None
        self._addresses: dict[str, int] = {}
        self._input_shapes: dict[str, tuple[int, ...]] = {}
        self._shapes_verified = False
        self._scratch: tuple[int, int] | None = None

        self.specs: dict[str, TensorSpec] = {}
        self.scratch_bytes = 0
        self._engine = self._deserialize(trt, runtime)
        try:
            self.specs = self._discover(trt)
            memory = getattr(self._engine, "device_memory_size_v2", None)
            if memory is None:  # TensorRT before 10.1
                memory = self._engine.device_memory_size
            self.scratch_bytes = int(memory)
            self._context = self._create_context(trt)
        except BaseException:
            self.close()
            raise
        log.info("Loaded %s", self.describe())

    # -- loading --

    def _mark(self) -> int:
        return self._logger.error_count if hasattr(self._logger, "error_count") else 0

    def _errors(self, mark: int) -> list[str]:
        if hasattr(self._logger, "errors_since"):
            return list(self._logger.errors_since(mark))
        return []

    def _reason(self, mark: int) -> str:
        errors = self._errors(mark)
        return f" ({errors[-1].strip().rstrip('.')})" if errors else ""

    def _deserialize(self, trt: Any, runtime: Any) -> Any:
        shown = _short(self.path)
        try:
            data = self.path.read_bytes()
        except OSError as err:
            raise EngineError(
                f"Could not read the engine file '{shown}' ({err.strerror or err}); check that "
                "it exists and is readable, or download it again."
            ) from err
        if not data:
            raise EngineError(f"The engine file '{shown}' is empty; download it again.")
        mark = self._mark()
        try:
            engine = runtime.deserialize_cuda_engine(data)
        except Exception as err:  # TensorRT reports through the logger, but be safe
            log.exception("deserialize_cuda_engine raised for %s", self.path)
            engine, extra = None, [str(err)]
        else:
            extra = []
        if engine is None:
            raise self._load_error(self._errors(mark) + extra)
        return engine

    def _load_error(self, errors: list[str]) -> EngineError:
        """Turn TensorRT's log of a failed deserialize into one actionable sentence."""
        shown = _short(self.path)
        text = " ".join(errors)
        folder_sm = _folder_sm(self.path)
        gpu_sm = self.gpu_sm
        built_sm = folder_sm
        pair = _COMPUTE_PAIR.search(text)
        if pair:
            gpu_sm = gpu_sm or f"sm_{pair.group(1)}{pair.group(2)}"
            built_sm = f"sm_{pair.group(3)}{pair.group(4)}"
        if _DEVICE_PATTERN.search(text) or (folder_sm and gpu_sm and folder_sm != gpu_sm):
            built = built_sm or "another GPU architecture"
            here = gpu_sm or "this GPU's"
            folder = f"models/{gpu_sm}" if gpu_sm else "the models folder of this GPU"
            return EngineError(
                f"'{shown}' was built for {built} but this GPU is {here}; use the engines in "
                f"{folder} or rebuild them."
            )
        if _PLUGIN_PATTERN.search(text):
            return EngineError(
                f"'{shown}' uses the SAME-L JIT plugin, which needs tensorrt.plugin, torch and "
                "triton installed here; install them or rebuild the engine AOT so the plugin "
                "is embedded."
            )
        if _MAGIC_PATTERN.search(text):
            return EngineError(
                f"'{shown}' is not an engine TensorRT {self.trt_version} can read (damaged, or "
                "built with another TensorRT version); download it again or rebuild it."
            )
        if _VERSION_PATTERN.search(text):
            versions = _LIBRARY_VERSIONS.search(text)
            built = versions.group(2) if versions else None
            origin = f"TensorRT {built}" if built else "another TensorRT version"
            return EngineError(
                f"'{shown}' was built with {origin} but TensorRT {self.trt_version} is "
                f"installed; download engines built for TensorRT {self.trt_version} or rebuild "
                "them."
            )
        reason = f" ({errors[-1].strip().rstrip('.')})" if errors else " (no reason was logged)"
        return EngineError(
            f"TensorRT {self.trt_version} could not load '{shown}'{reason}; download the "
            "engine again or rebuild it."
        )

    def _create_context(self, trt: Any) -> Any:
        # USER_MANAGED: TensorRT allocates nothing; bind_scratch hands it the shared scratch.
        mark = self._mark()
        context = self._engine.create_execution_context(
            trt.ExecutionContextAllocationStrategy.USER_MANAGED
        )
        if context is None:
            raise EngineError(
                f"TensorRT could not create an execution context for '{_short(self.path)}'"
                f"{self._reason(mark)}; close other GPU programs or restart SA3 Studio."
            )
        return context

    def _discover(self, trt: Any) -> dict[str, TensorSpec]:
        engine = self._engine
        shown = _short(self.path)
        specs: dict[str, TensorSpec] = {}
        for index in range(int(engine.num_io_tensors)):
            name = engine.get_tensor_name(index)
            is_input = engine.get_tensor_mode(name) == trt.TensorIOMode.INPUT
            dtype_member = engine.get_tensor_dtype(name)
            dtype_name = getattr(dtype_member, "name", str(dtype_member))
            dtype = _TRT_DTYPES.get(dtype_name)
            if dtype is None:
                raise EngineError(
                    f"'{shown}' has tensor '{name}' of type {dtype_name}, which SA3 Studio does "
                    "not handle; use an engine built with float, half, bf16, fp8 or integer I/O."
                )
            shape = _as_shape(engine.get_tensor_shape(name))
            if shape is None:
                raise EngineError(f"TensorRT gave no shape for '{name}' in '{shown}'; rebuild it.")
            profile = None
            if is_input and any(dim < 0 for dim in shape):
                profile = self._profile(name, shape)
            specs[name] = TensorSpec(name, is_input, dtype, shape, profile)
        if not specs:
            raise EngineError(f"'{shown}' has no inputs or outputs; rebuild it.")
        return specs

    def _profile(self, name: str, shape: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
        shown = _short(self.path)
        if int(self._engine.num_optimization_profiles) < 1:
            raise EngineError(f"'{shown}' has dynamic input '{name}' but no profile; rebuild it.")
        shapes = [_as_shape(dims) for dims in self._engine.get_tensor_profile_shape(name, 0)]
        if len(shapes) != 3 or any(s is None or len(s) != len(shape) for s in shapes):
            raise EngineError(
                f"TensorRT gave no valid profile for input '{name}' of '{shown}'; rebuild it."
            )
        return (shapes[0], shapes[1], shapes[2])  # type: ignore[return-value]

    # -- EngineRunner --

    def _live_context(self) -> Any:
        if self._context is None:
            raise EngineError(f"'{self.name}' was closed; load it again.")
        return self._context

    def _spec(self, name: str) -> TensorSpec:
        spec = self.specs.get(name)
        if spec is None:
            raise EngineError(
                f"'{self.name}' has no tensor '{name}' (it has {', '.join(self.specs)}); "
                "check the engine matches the model."
            )
        return spec

    @property
    def input_names(self) -> list[str]:
        return [name for name, spec in self.specs.items() if spec.is_input]

    @property
    def output_names(self) -> list[str]:
        return [name for name, spec in self.specs.items() if not spec.is_input]

    def bind_scratch(self, ptr: int, size: int) -> None:
        context = self._live_context()
        if size < self.scratch_bytes:
            raise EngineError(
                f"'{self.name}' needs {self.scratch_bytes} bytes of scratch memory but was given "
                f"{size}; allocate the shared scratch for the largest engine."
            )
        if self._scratch == (ptr, size):
            return
        mark = self._mark()
        setter = getattr(context, "set_device_memory", None)
        if setter is not None:
            result = setter(ptr, size)
        else:  # TensorRT before 10.1 has only the size-less property
            context.device_memory = ptr
            result = None
        errors = self._errors(mark)
        if result is False or errors:
            raise EngineError(
                f"TensorRT refused the scratch memory for '{self.name}'{self._reason(mark)}; "
                "the allocation must be 256-byte aligned and large enough."
            )
        self._scratch = (ptr, size)

    def set_input_shape(self, name: str, shape: tuple[int, ...]) -> None:
        context = self._live_context()
        spec = self._spec(name)
        shape = tuple(int(dim) for dim in shape)
        if not spec.is_input:
            raise EngineError(f"'{name}' is an output of '{self.name}'; only inputs take shapes.")
        if len(shape) != len(spec.shape) or any(
            want >= 0 and got != want for want, got in zip(spec.shape, shape, strict=False)
        ):
            raise EngineError(
                f"Input '{name}' of '{self.name}' must have shape {_fmt(spec.shape)} (-1 = any), "
                f"not {_fmt(shape)}; check the engine matches the model."
            )
        if spec.profile is not None:
            low, _, high = spec.profile
            if any(d < lo or d > hi for d, lo, hi in zip(shape, low, high, strict=True)):
                raise EngineError(
                    f"Input '{name}' shape {_fmt(shape)} is outside the profile of "
                    f"'{self.name}' (min {_fmt(low)}, max {_fmt(high)}); use a length within it "
                    "or rebuild the engine with a wider profile."
                )
        if self._input_shapes.get(name) == shape:
            return
        if spec.is_dynamic:
            mark = self._mark()
            if not context.set_input_shape(name, shape):
                raise EngineError(
                    f"TensorRT refused shape {_fmt(shape)} for input '{name}' of "
                    f"'{self.name}'{self._reason(mark)}; check the engine's profile."
                )
            self._shapes_verified = False
        self._input_shapes[name] = shape

    def _unset_inputs(self) -> list[str]:
        return [name for name, spec in self.specs.items()
                if spec.is_input and spec.is_dynamic and name not in self._input_shapes]

    def output_shape(self, name: str) -> tuple[int, ...]:
        context = self._live_context()
        spec = self._spec(name)
        if not spec.is_dynamic:
            return spec.shape
        missing = self._unset_inputs()
        if missing:
            # Never ask TensorRT here: it would answer with -1 dims, or fail under capture.
            raise EngineError(
                f"The shape of '{name}' in '{self.name}' is not known yet; set the input shapes "
                f"first ({', '.join(missing)})."
            )
        shape = _as_shape(context.get_tensor_shape(name))
        if shape is None or any(dim < 0 for dim in shape):
            raise EngineError(
                f"TensorRT could not determine the shape of '{name}' in '{self.name}' "
                f"(got {shape}); set the input shapes first or rebuild the engine."
            )
        return shape

    def set_address(self, name: str, ptr: int) -> bool:
        context = self._live_context()
        self._spec(name)
        ptr = int(ptr)
        if ptr <= 0:
            raise EngineError(
                f"Tensor '{name}' of '{self.name}' was given no device memory (address {ptr}); "
                "allocate its buffer before binding it."
            )
        if self._addresses.get(name) == ptr:
            return False
        mark = self._mark()
        if not context.set_tensor_address(name, ptr):
            raise EngineError(
                f"TensorRT refused address {ptr:#x} for '{name}' of '{self.name}'"
                f"{self._reason(mark)}; buffers must be 256-byte aligned device memory."
            )
        self._addresses[name] = ptr
        return True

    def enqueue(self, stream_handle: int) -> bool:
        context = self._live_context()
        if self._scratch is None and self.scratch_bytes > 0:
            raise EngineError(
                f"'{self.name}' has no scratch memory bound; call bind_scratch before enqueue."
            )
        missing = self._unset_inputs()
        if missing:
            raise EngineError(
                f"'{self.name}' cannot run: input shapes not set for {', '.join(missing)}."
            )
        unbound = [name for name in self.specs if name not in self._addresses]
        if unbound:
            raise EngineError(
                f"'{self.name}' cannot run: no address bound for {', '.join(unbound)}."
            )
        if not self._shapes_verified:
            self._verify_shapes(context)
        return bool(context.execute_async_v3(int(stream_handle)))

    def _verify_shapes(self, context: Any) -> None:
        """Ask TensorRT whether it considers every input specified (once per shape change)."""
        infer = getattr(context, "infer_shapes", None)
        if infer is not None:
            try:
                pending = list(infer())
            except RuntimeError as err:
                raise EngineError(
                    f"TensorRT could not infer the shapes of '{self.name}' ({err}); check the "
                    "input shapes."
                ) from err
        else:  # all_binding_shapes_specified predates name-based shapes; a fallback only
            pending = [] if context.all_binding_shapes_specified else ["(some inputs)"]
        if pending:
            raise EngineError(
                f"'{self.name}' cannot run: TensorRT reports unspecified inputs "
                f"{', '.join(str(name) for name in pending)}."
            )
        self._shapes_verified = True

    def close(self) -> None:
        """Drop the context, then the engine. Safe to call twice."""
        self._context = None  # the context before the engine it was made from
        self._engine = None
        self._addresses.clear()
        self._input_shapes.clear()
        self._scratch = None

    def __enter__(self) -> TrtEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def describe(self) -> str:
        """A few lines naming every tensor, for the log."""
        mode = "capturable" if self.capturable else "eager only (JIT plugin)"
        lines = [f"{self.name}: TensorRT {self.trt_version}, scratch "
                 f"{self.scratch_bytes / 2**20:.1f} MiB, {mode}"]
        for spec in self.specs.values():
            role = "in " if spec.is_input else "out"
            line = f"  {role} {spec.name:<16} {spec.dtype:<8} {_fmt(spec.shape)}"
            if spec.profile is not None:
                line += "  profile " + " / ".join(_fmt(s) for s in spec.profile)
            lines.append(line)
        return "\n".join(lines)
