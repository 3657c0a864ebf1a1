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
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from engines.backends.tensorrt.load_errors import describe_load_failure
from engines.backends.tensorrt.version import require_supported
from engines.errors import BackendError

if TYPE_CHECKING:
    from engines.backends.tensorrt.context import TrtContext

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


_ARCH_FOLDER = re.compile(r"^sm_\d+$")


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
class ContextRunner(Protocol):
    """One execution context as the captured pipeline drives it: TrtContext over TensorRT, and
    the GPU tests' doubles. Each captured graph owns its own contexts."""

    name: str
    specs: dict[str, TensorSpec]

    def bind_scratch(self, ptr: int, size: int) -> None: ...

    def set_input_shape(self, name: str, shape: tuple[int, ...]) -> None: ...

    def output_shape(self, name: str) -> tuple[int, ...]: ...

    def set_address(self, name: str, ptr: int) -> bool: ...

    def enqueue(self, stream_handle: int) -> bool: ...

    def close(self) -> None: ...


@runtime_checkable
class EngineRunner(Protocol):
    """One loaded engine: its I/O, the scratch memory its contexts need, and a factory of
    contexts. TrtEngine implements it over TensorRT; GPU tests implement doubles."""

    name: str
    specs: dict[str, TensorSpec]
    scratch_bytes: int  # device memory needed from the shared scratch allocation

    def create_context(self) -> ContextRunner: ...

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
    require_supported(trt)  # TensorRT 11 and others: one sentence, not an AttributeError later
    return trt


def _version(trt: Any) -> str:
    return str(getattr(trt, "__version__", "unknown"))


def as_shape(dims: Any) -> tuple[int, ...] | None:
    """A TensorRT Dims as a tuple, or None for the invalid Dims{-1} TensorRT returns on error
    (its len() raises, because __len__ gives -1)."""
    try:
        count = len(dims)
    except (TypeError, ValueError):
        return None
    return tuple(int(dims[i]) for i in range(count))


def is_jit_codec(path: Path) -> bool:
    """A JIT SAME-L engine: its name carries the plugin mark, or it is one of the JIT file
    names in a same-l folder (dec_dynamic_fp32 is built from the JIT graph too)."""
    # JIT engines call back into Python on every enqueue and need the official Triton plugin
    # registered through tensorrt.plugin before they even deserialize.
    from engines.catalog import JIT_CODEC_FILES, JIT_PLUGIN_MARKER

    if JIT_PLUGIN_MARKER in path.name:
        return True
    tier = JIT_CODEC_FILES["same-l"]
    return path.parent.name == "same-l" and path.stem in (*tier.decoder, *tier.encoder)


def jit_engine_refusal(path: Path) -> str:
    """The sentence for a JIT SAME-L engine: which AOT files replace it, and how to get them."""
    from engines.catalog import aot_codec_remedy

    return (f"'{_short(Path(path))}' is a JIT SAME-L engine, which needs its Triton plugin "
            f"registered from Python and cannot run in SA3 Studio; {aot_codec_remedy()}.")


def _short(path: Path) -> str:
    """The part of an engine path a user recognises: <sm_XX>/<subdir>/<file>."""
    return "/".join(path.parts[-3:]) if len(path.parts) >= 3 else str(path)


def _folder_sm(path: Path) -> str | None:
    for part in reversed(path.parent.parts):
        if _ARCH_FOLDER.match(part):
            return part
    return None


def fmt_shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(dim) for dim in shape) + ")"


# ---- the engine --------------------------------------------------------------------------------

class TrtEngine:
    """One deserialized engine, its discovered I/O, and the execution contexts made from it
    (EngineRunner). JIT SAME-L plugin engines are refused: SA3 Studio uses the AOT builds."""

    def __init__(self, path: Path, *, gpu_sm: str | None = None, runtime: Any = None,
                 logger: Any = None) -> None:
        self.path = Path(path)
        self.name = self.path.name
        if is_jit_codec(self.path):
            raise EngineError(jit_engine_refusal(self.path))
        trt = _import_tensorrt()
        self.gpu_sm = gpu_sm
        self.trt_version = _version(trt)
        if runtime is None:
            if logger is None:
                runtime, logger = shared_runtime(trt)
            else:
                runtime = trt.Runtime(logger)  # the caller's logger, so its errors stay theirs
        self._logger = logger
        self._engine: Any = None
        self._contexts: list[TrtContext] = []
        self.specs: dict[str, TensorSpec] = {}
        self.scratch_bytes = 0
        self._engine = self._deserialize(trt, runtime)
        try:
            self.specs = self._discover(trt)
            memory = getattr(self._engine, "device_memory_size_v2", None)
            if memory is None:  # TensorRT before 10.1
                memory = self._engine.device_memory_size
            self.scratch_bytes = int(memory)
        except BaseException:
            self.close()
            raise
        log.info("Loaded %s", self.describe())

    # -- the logger's errors, for sentences that name TensorRT's reason --

    def log_mark(self) -> int:
        """A mark for `errors_since`: how many errors TensorRT logged so far."""
        return self._logger.error_count if hasattr(self._logger, "error_count") else 0

    def errors_since(self, mark: int) -> list[str]:
        if hasattr(self._logger, "errors_since"):
            return list(self._logger.errors_since(mark))
        return []

    def reason_since(self, mark: int) -> str:
        """' (last TensorRT error)' since `mark`, or '' when TensorRT logged none."""
        errors = self.errors_since(mark)
        return f" ({errors[-1].strip().rstrip('.')})" if errors else ""

    # -- loading --

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
        mark = self.log_mark()
        try:
            engine = runtime.deserialize_cuda_engine(data)
        except Exception as err:  # TensorRT reports through the logger, but be safe
            log.exception("deserialize_cuda_engine raised for %s", self.path)
            engine, extra = None, [str(err)]
        else:
            extra = []
        if engine is None:
            raise self._load_error(self.errors_since(mark) + extra)
        return engine

    def _load_error(self, errors: list[str]) -> EngineError:
        """Turn TensorRT's log of a failed deserialize into one actionable sentence."""
        return EngineError(describe_load_failure(
            _short(self.path), errors, self.trt_version, _folder_sm(self.path), self.gpu_sm))

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
            shape = as_shape(engine.get_tensor_shape(name))
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
        shapes = [as_shape(dims) for dims in self._engine.get_tensor_profile_shape(name, 0)]
        if len(shapes) != 3 or any(s is None or len(s) != len(shape) for s in shapes):
            raise EngineError(
                f"TensorRT gave no valid profile for input '{name}' of '{shown}'; rebuild it."
            )
        return (shapes[0], shapes[1], shapes[2])  # type: ignore[return-value]

    @property
    def input_names(self) -> list[str]:
        return [name for name, spec in self.specs.items() if spec.is_input]

    @property
    def output_names(self) -> list[str]:
        return [name for name, spec in self.specs.items() if not spec.is_input]

    @property
    def closed(self) -> bool:
        return self._engine is None

    def create_context(self) -> TrtContext:
        """A new USER_MANAGED execution context: TensorRT allocates nothing for it, the caller
        binds the shared scratch with `bind_scratch`. One per captured graph (see context.py)."""
        from engines.backends.tensorrt.context import TrtContext

        if self._engine is None:
            raise EngineError(f"'{self.name}' was closed; load it again.")
        trt = _import_tensorrt()
        mark = self.log_mark()
        context = self._engine.create_execution_context(
            trt.ExecutionContextAllocationStrategy.USER_MANAGED
        )
        if context is None:
            raise EngineError(
                f"TensorRT could not create an execution context for '{_short(self.path)}'"
                f"{self.reason_since(mark)}; close other GPU programs or restart SA3 Studio."
            )
        made = TrtContext(self, context)
        self._contexts.append(made)
        return made

    def close(self) -> None:
        """Drop every context, then the engine they were made from. Safe to call twice."""
        for context in self._contexts:
            context.close()
        self._contexts.clear()
        self._engine = None

    def __enter__(self) -> TrtEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def describe(self) -> str:
        """A few lines naming every tensor, for the log."""
        lines = [f"{self.name}: TensorRT {self.trt_version}, scratch "
                 f"{self.scratch_bytes / 2**20:.1f} MiB"]
        for spec in self.specs.values():
            role = "in " if spec.is_input else "out"
            line = f"  {role} {spec.name:<16} {spec.dtype:<8} {fmt_shape(spec.shape)}"
            if spec.profile is not None:
                line += "  profile " + " / ".join(fmt_shape(s) for s in spec.profile)
            lines.append(line)
        return "\n".join(lines)
