"""One TensorRT engine file, ready to be driven by the captured pipeline.

`TrtEngine` deserializes a plan, discovers its I/O (names, dtypes, shapes, profile 0), and makes
execution contexts (context.py) whose scratch memory the pipeline owns (several engines that run
one after another share one allocation). What TensorRT would refuse is refused here first with a
sentence a user can act on. The pieces it is built from have modules of their own: the tensor
specs (tensor_spec.py), the runtime and its logger (runtime.py), what a path says
(engine_paths.py), and the protocols the pipeline drives (runners.py).

tensorrt is imported inside `import_tensorrt`, so `engines` imports without it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from engines.backends.tensorrt.context import TrtContext
from engines.backends.tensorrt.engine_error import EngineError
from engines.backends.tensorrt.engine_paths import (
    folder_sm,
    is_jit_codec,
    jit_engine_refusal,
    shown_path,
)
from engines.backends.tensorrt.load_errors import describe_load_failure
from engines.backends.tensorrt.runtime import import_tensorrt, shared_runtime, version_of
from engines.backends.tensorrt.tensor_spec import TensorSpec, as_shape, fmt_shape

log = logging.getLogger(__name__)

# trt.DataType member name -> our name. Looked up by the member's name, so a type TensorRT adds
# later (INT4, FP4, E8M0: not byte-addressable) gives a clear refusal, not a KeyError.
_TRT_DTYPES = {
    "FLOAT": "float32", "HALF": "float16", "BF16": "bfloat16", "INT64": "int64",
    "INT32": "int32", "INT8": "int8", "UINT8": "uint8", "BOOL": "bool", "FP8": "fp8",
}


class TrtEngine:
    """One deserialized engine, its discovered I/O, and the execution contexts made from it
    (EngineRunner). JIT SAME-L plugin engines are refused: SA3 Studio uses the AOT builds."""

    def __init__(self, path: Path, *, gpu_sm: str | None = None, runtime: Any = None,
                 logger: Any = None) -> None:
        self.path = Path(path)
        self.name = self.path.name
        if is_jit_codec(self.path):
            raise EngineError(jit_engine_refusal(self.path))
        trt = import_tensorrt()
        self.gpu_sm = gpu_sm
        self.trt_version = version_of(trt)
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
        shown = shown_path(self.path)
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
            shown_path(self.path), errors, self.trt_version, folder_sm(self.path), self.gpu_sm))

    def _discover(self, trt: Any) -> dict[str, TensorSpec]:
        engine = self._engine
        shown = shown_path(self.path)
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
        shown = shown_path(self.path)
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
        if self._engine is None:
            raise EngineError(f"'{self.name}' was closed; load it again.")
        trt = import_tensorrt()
        mark = self.log_mark()
        context = self._engine.create_execution_context(
            trt.ExecutionContextAllocationStrategy.USER_MANAGED
        )
        if context is None:
            raise EngineError(
                f"TensorRT could not create an execution context for '{shown_path(self.path)}'"
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
