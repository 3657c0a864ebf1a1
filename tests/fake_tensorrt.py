"""A strict fake of the TensorRT 10 Python API surface SA3 Studio uses, for CI without a GPU.

Tests install it as sys.modules["tensorrt"] (see `install`). It refuses what TensorRT refuses,
with TensorRT's own return values (False, None, Dims{-1}) and error log lines, and it records
every call so a test can assert what reached "TensorRT" and what did not.

The fake engine file is JSON (see `make_engine_bytes`): the I/O table, profile 0, the device
memory size, the arch and TensorRT version it was "built" for, and rules that derive dynamic
output dims from input dims.
"""

from __future__ import annotations

import enum
import json
import sys
import types
from typing import Any

__version__ = "10.15.1.29"
FAKE_GPU_SM = "sm_90"  # the arch of the fake GPU the runtime runs on
PLUGINS_REGISTERED: set[str] = set()  # plugin names "registered" (e.g. "diff_attn_swa")
FAIL_ENQUEUE = False  # default of every new context's `fail_enqueue` switch

_MAGIC = "FAKE-TRT-PLAN"
_PLUGIN = ("diff_attn_swa", "1", "samel")  # name, version, namespace of the SAME-L plugin


class _State:
    """Everything the fake created, so tests can reach it; reset by `install`."""

    def __init__(self) -> None:
        self.runtimes: list[Runtime] = []
        self.engines: list[ICudaEngine] = []
        self.contexts: list[IExecutionContext] = []


STATE = _State()


# ---- enums --------------------------------------------------------------------------------------

class DataType(enum.Enum):
    FLOAT = 0
    HALF = 1
    INT8 = 2
    INT32 = 3
    BOOL = 4
    UINT8 = 5
    FP8 = 6
    BF16 = 7
    INT64 = 8
    INT4 = 9
    FP4 = 10
    E8M0 = 11


class TensorIOMode(enum.Enum):
    NONE = 0
    INPUT = 1
    OUTPUT = 2


class ExecutionContextAllocationStrategy(enum.Enum):
    STATIC = 0
    ON_PROFILE_CHANGE = 1
    USER_MANAGED = 2


class _Severity(enum.Enum):
    INTERNAL_ERROR = 0
    ERROR = 1
    WARNING = 2
    INFO = 3
    VERBOSE = 4


# ---- Dims ---------------------------------------------------------------------------------------

class Dims:
    """Like trt.Dims: sequence-like via __len__/__getitem__ (no __iter__), compares equal to
    tuples and lists. The invalid Dims{-1} TensorRT returns on error has __len__ == -1, so
    len() and tuple() raise ValueError, exactly as they do on the real binding."""

    def __init__(self, shape: Any = ()) -> None:
        self._d = tuple(int(dim) for dim in shape)
        self._nb = len(self._d)

    @classmethod
    def invalid(cls) -> Dims:
        dims = cls()
        dims._nb = -1
        return dims

    def __len__(self) -> int:
        return self._nb

    def __getitem__(self, index: int) -> int:
        if isinstance(index, slice):
            raise TypeError("the fake Dims takes integer indices only")
        if index < 0:
            index += self._nb
        if not 0 <= index < self._nb:
            raise IndexError("Out of bounds")
        return self._d[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Dims):
            return self._nb == other._nb and self._d == other._d
        if isinstance(other, (tuple, list)):
            return self._nb == len(other) and list(self._d) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        if self._nb < 0:
            return "(-1 dims: invalid)"
        return "(" + ", ".join(str(d) for d in self._d) + ("," if self._nb == 1 else "") + ")"


def _dims_arg(shape: Any) -> tuple[int, ...]:
    """What the binding accepts as a shape: Dims, tuple or list of ints."""
    if isinstance(shape, Dims):
        return shape._d
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"set_input_shape(): incompatible function arguments: shape={shape!r}")
    if not all(isinstance(dim, int) and not isinstance(dim, bool) for dim in shape):
        raise TypeError(f"set_input_shape(): incompatible function arguments: shape={shape!r}")
    return tuple(shape)


# ---- loggers ------------------------------------------------------------------------------------

class ILogger:
    """Abstract base: subclasses must call ILogger.__init__ and override log."""

    Severity = _Severity
    INTERNAL_ERROR = _Severity.INTERNAL_ERROR
    ERROR = _Severity.ERROR
    WARNING = _Severity.WARNING
    INFO = _Severity.INFO
    VERBOSE = _Severity.VERBOSE

    def __init__(self) -> None:
        self._fake_initialized = True

    def log(self, severity: _Severity, msg: str) -> None:
        raise RuntimeError('Tried to call pure virtual function "ILogger::log"')


class Logger(ILogger):
    """The default logger; keeps what it would print."""

    def __init__(self, min_severity: _Severity = _Severity.WARNING) -> None:
        super().__init__()
        self.min_severity = min_severity
        self.messages: list[tuple[_Severity, str]] = []

    def log(self, severity: _Severity, msg: str) -> None:
        if severity.value <= self.min_severity.value:
            self.messages.append((severity, msg))


def _check_logger(logger: Any) -> None:
    if not isinstance(logger, ILogger):
        raise TypeError("__init__(): incompatible constructor arguments: logger must be ILogger")
    if not getattr(logger, "_fake_initialized", False):
        raise TypeError(f"{type(logger).__name__}.__init__() must be called when overriding "
                        "__init__")


# ---- the engine file ----------------------------------------------------------------------------

def make_engine_bytes(io: list[dict], device_memory: int = 64 << 20, sm: str = "sm_90",
                      trt_version: str = "10.15.1.29", plugin: bool = False,
                      num_profiles: int = 1) -> bytes:
    """A fake plan. Each io entry: {"name", "mode": "INPUT"|"OUTPUT", "dtype": DataType name,
    "shape": [..., -1 where dynamic], "profile": [min, opt, max] (dynamic inputs),
    "rule": {"<dim>": [input name, input dim, multiplier, divisor]} (dynamic outputs)}."""
    plan = {"magic": _MAGIC, "trt_version": trt_version, "sm": sm, "plugin": plugin,
            "device_memory": device_memory, "num_profiles": num_profiles, "io": io}
    return json.dumps(plan).encode()


def _compute(sm: str) -> str:
    digits = sm.removeprefix("sm_")
    return f"{digits[:-1]}.{digits[-1]}"


class Runtime:
    def __init__(self, logger: ILogger) -> None:
        _check_logger(logger)
        self.logger = logger
        self.deserialize_calls = 0
        STATE.runtimes.append(self)

    def _error(self, msg: str) -> None:
        self.logger.log(ILogger.ERROR, msg)

    def deserialize_cuda_engine(self, serialized_engine: Any) -> ICudaEngine | None:
        if isinstance(serialized_engine, str):
            raise TypeError("deserialize_cuda_engine(): incompatible function arguments")
        data = bytes(memoryview(serialized_engine))
        self.deserialize_calls += 1
        try:
            plan = json.loads(data.decode())
            if not isinstance(plan, dict) or plan.get("magic") != _MAGIC:
                raise ValueError("no magic")
        except (UnicodeDecodeError, ValueError):
            self._error("IRuntime::deserializeCudaEngine: Error Code 1: Serialization "
                        "(Serialization assertion plan->header.magicTag == rt::kPLAN_MAGIC_TAG "
                        "failed.)")
            return None
        module = sys.modules[__name__]
        if plan["trt_version"] != module.__version__:
            self._error("IRuntime::deserializeCudaEngine: Error Code 6: API Usage Error (The "
                        "engine plan file is not compatible with this version of TensorRT, "
                        f"expecting library version {module.__version__} got "
                        f"{plan['trt_version']}, please rebuild.)")
            return None
        if plan["sm"] != module.FAKE_GPU_SM:
            self._error("IRuntime::deserializeCudaEngine: Error Code 6: API Usage Error (The "
                        "engine plan file is generated on an incompatible device, expecting "
                        f"compute {_compute(module.FAKE_GPU_SM)} got compute "
                        f"{_compute(plan['sm'])}, please rebuild.)")
            return None
        if plan["plugin"] and _PLUGIN[0] not in module.PLUGINS_REGISTERED:
            name, version, namespace = _PLUGIN
            self._error("IPluginRegistry::getCreator: Error Code 4: API Usage Error (Cannot find "
                        f"plugin: {name}, version: {version}, namespace:{namespace}.)")
            self._error("IRuntime::deserializeCudaEngine: Error Code 1: Serialization "
                        "(Serialization assertion creator failed.Cannot deserialize plugin since "
                        "corresponding IPluginCreator not found in Plugin Registry)")
            return None
        engine = ICudaEngine(plan, self)
        STATE.engines.append(engine)
        return engine


class _Tensor:
    def __init__(self, entry: dict) -> None:
        self.name: str = entry["name"]
        self.mode = TensorIOMode[entry["mode"]]
        self.dtype = DataType[entry["dtype"]]
        self.shape = tuple(int(d) for d in entry["shape"])
        profile = entry.get("profile")
        self.profile = tuple(tuple(int(d) for d in s) for s in profile) if profile else None
        self.rule = {int(k): v for k, v in entry.get("rule", {}).items()}

    @property
    def dynamic(self) -> bool:
        return -1 in self.shape


class ICudaEngine:
    def __init__(self, plan: dict, runtime: Runtime) -> None:
        self._runtime = runtime
        self._tensors = [_Tensor(entry) for entry in plan["io"]]
        self._by_name = {t.name: t for t in self._tensors}
        self._device_memory = int(plan["device_memory"])
        self._num_profiles = int(plan.get("num_profiles", 1))
        self.profile_queries: list[tuple[str, int]] = []
        self.plugin = bool(plan["plugin"])

    def _error(self, msg: str) -> None:
        self._runtime._error(msg)

    @property
    def num_io_tensors(self) -> int:
        return len(self._tensors)

    @property
    def num_optimization_profiles(self) -> int:
        return self._num_profiles

    @property
    def device_memory_size_v2(self) -> int:
        return self._device_memory

    @property
    def device_memory_size(self) -> int:  # deprecated in 10.1, still there
        return self._device_memory

    def get_tensor_name(self, index: int) -> str | None:
        if not 0 <= index < len(self._tensors):
            self._error(f"ICudaEngine::getIOTensorName: Error Code 3: API Usage Error (Parameter "
                        f"check failed, condition: (index >= 0) && (index < "
                        f"{len(self._tensors)}).)")
            return None
        return self._tensors[index].name

    def get_tensor_mode(self, name: str) -> TensorIOMode:
        tensor = self._by_name.get(name)
        return tensor.mode if tensor else TensorIOMode.NONE

    def get_tensor_dtype(self, name: str) -> DataType:
        tensor = self._by_name.get(name)
        return tensor.dtype if tensor else DataType.FLOAT  # what TensorRT returns for unknowns

    def get_tensor_shape(self, name: str) -> Dims:
        tensor = self._by_name.get(name)
        return Dims(tensor.shape) if tensor else Dims.invalid()

    def get_tensor_profile_shape(self, name: str, profile_index: int) -> list[Dims]:
        self.profile_queries.append((name, profile_index))
        tensor = self._by_name.get(name)
        if tensor is None or tensor.mode != TensorIOMode.INPUT:
            self._error(f"ICudaEngine::getProfileShape: Error Code 3: API Usage Error (Parameter "
                        f"check failed, condition: {name} is an input tensor.)")
            return [Dims.invalid()] * 3
        if not 0 <= profile_index < self._num_profiles:
            self._error("ICudaEngine::getProfileShape: Error Code 3: API Usage Error (Parameter "
                        "check failed, condition: profileIndex >= 0 && profileIndex < "
                        f"{self._num_profiles}.)")
            return [Dims.invalid()] * 3
        if tensor.profile is None:  # static input: min = opt = max = its shape
            return [Dims(tensor.shape)] * 3
        return [Dims(s) for s in tensor.profile]

    def create_execution_context(
        self,
        strategy: ExecutionContextAllocationStrategy = ExecutionContextAllocationStrategy.STATIC,
    ) -> IExecutionContext:
        if not isinstance(strategy, ExecutionContextAllocationStrategy):
            raise TypeError("create_execution_context(): incompatible function arguments")
        context = IExecutionContext(self, strategy)
        STATE.contexts.append(context)
        return context


class IExecutionContext:
    """Records every call in `calls` as (method, args...)."""

    def __init__(self, engine: ICudaEngine, strategy: ExecutionContextAllocationStrategy) -> None:
        self.engine = engine
        self.strategy = strategy
        self.calls: list[tuple] = []
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.addresses: dict[str, int] = {}
        self.scratch: tuple[int, int | None] | None = None
        self.fail_enqueue = sys.modules[__name__].FAIL_ENQUEUE
        self.premature_output_queries = 0  # output shape asked before every input shape was set

    def _error(self, msg: str) -> None:
        self.engine._error(msg)

    def count(self, method: str) -> int:
        return sum(1 for call in self.calls if call[0] == method)

    def _unset_inputs(self) -> list[str]:
        return [t.name for t in self.engine._tensors
                if t.mode == TensorIOMode.INPUT and t.dynamic and t.name not in self.shapes]

    # -- memory --

    def set_device_memory(self, memory: int, size: int) -> None:
        self.calls.append(("set_device_memory", memory, size))
        if size < self.engine._device_memory:
            self._error("IExecutionContext::setDeviceMemoryV2: Error Code 3: API Usage Error "
                        "(Parameter check failed, condition: size >= "
                        f"mEngine.getDeviceMemorySizeV2(). size = {size}.)")
            return None
        if memory % 256:
            self._error("IExecutionContext::setDeviceMemoryV2: Error Code 3: API Usage Error "
                        "(Parameter check failed, condition: memory is 256-byte aligned.)")
            return None
        self.scratch = (memory, size)
        return None

    def _set_device_memory_v1(self, memory: int) -> None:
        self.calls.append(("device_memory", memory))
        self.scratch = (memory, None)

    device_memory = property(None, _set_device_memory_v1)  # write-only, as in TensorRT

    # -- shapes --

    def set_input_shape(self, name: str, shape: Any) -> bool:
        dims = _dims_arg(shape)
        self.calls.append(("set_input_shape", name, dims))
        tensor = self.engine._by_name.get(name)
        if tensor is None or tensor.mode != TensorIOMode.INPUT:
            self._error(f"IExecutionContext::setInputShape: Error Code 3: API Usage Error "
                        f"(Parameter check failed, condition: {name} is an input tensor.)")
            return False
        if len(dims) != len(tensor.shape) or any(
            want >= 0 and got != want for want, got in zip(tensor.shape, dims, strict=False)
        ):
            self._error(f"IExecutionContext::setInputShape: Error Code 3: API Usage Error "
                        f"(Parameter check failed, condition: dimensions of {name} match the "
                        f"network, {list(dims)} vs {list(tensor.shape)}.)")
            return False
        if tensor.profile is not None:
            low, _, high = tensor.profile
            if any(d < lo or d > hi for d, lo, hi in zip(dims, low, high, strict=True)):
                self._error(f"IExecutionContext::setInputShape: Error Code 3: API Usage Error "
                            f"(Parameter check failed, condition: satisfyProfile. Set dimension "
                            f"{list(dims)} for tensor {name} does not satisfy any optimization "
                            f"profile. Valid range for profile 0: {list(low)}..{list(high)}.)")
                return False
        self.shapes[name] = dims
        return True

    def get_tensor_shape(self, name: str) -> Dims:
        self.calls.append(("get_tensor_shape", name))
        tensor = self.engine._by_name.get(name)
        if tensor is None:
            return Dims.invalid()
        if tensor.mode == TensorIOMode.INPUT:
            return Dims(self.shapes.get(name, tensor.shape))
        if not tensor.dynamic:
            return Dims(tensor.shape)
        if self._unset_inputs():
            self.premature_output_queries += 1
            return Dims(tensor.shape)
        shape = list(tensor.shape)
        for dim, (source, axis, mul, div) in tensor.rule.items():
            shape[dim] = self.shapes[source][axis] * mul // div
        return Dims(shape)

    def infer_shapes(self) -> list[str]:
        self.calls.append(("infer_shapes",))
        return self._unset_inputs()

    @property
    def all_binding_shapes_specified(self) -> bool:
        return not self._unset_inputs()

    # -- addresses and execution --

    def set_tensor_address(self, name: str, memory: int) -> bool:
        self.calls.append(("set_tensor_address", name, memory))
        if name not in self.engine._by_name:
            self._error(f"IExecutionContext::setTensorAddress: Error Code 3: API Usage Error "
                        f"(Parameter check failed, condition: {name} is an I/O tensor.)")
            return False
        if memory % 256:
            self._error(f"IExecutionContext::setTensorAddress: Error Code 3: API Usage Error "
                        f"(Parameter check failed, condition: address of {name} is 256-byte "
                        "aligned.)")
            return False
        self.addresses[name] = memory
        return True

    def get_tensor_address(self, name: str) -> int:
        return self.addresses.get(name, 0)

    def execute_async_v3(self, stream_handle: int) -> bool:
        if not isinstance(stream_handle, int):
            raise TypeError("execute_async_v3(): incompatible function arguments")
        self.calls.append(("execute_async_v3", stream_handle))
        unset = self._unset_inputs()
        if unset:
            self._error(f"IExecutionContext::enqueueV3: Error Code 3: API Usage Error (Parameter "
                        f"check failed, condition: input shape of {unset[0]} is specified.)")
            return False
        for tensor in self.engine._tensors:
            if tensor.name not in self.addresses:
                self._error(f"IExecutionContext::enqueueV3: Error Code 3: API Usage Error "
                            f"(Parameter check failed, condition: address of {tensor.name} "
                            "is set.)")
                return False
        if (self.strategy == ExecutionContextAllocationStrategy.USER_MANAGED
                and self.engine._device_memory > 0 and self.scratch is None):
            self._error("IExecutionContext::enqueueV3: Error Code 1: Cuda Runtime (device "
                        "memory for a USER_MANAGED context is not set)")
            return False
        if self.fail_enqueue:
            self._error("IExecutionContext::enqueueV3: Error Code 1: Cuda Runtime (operation "
                        "not permitted when stream is capturing)")
            return False
        return True


# ---- installing -----------------------------------------------------------------------------

def install(monkeypatch: Any) -> types.ModuleType:
    """Make `import tensorrt` give this fake for one test, with default settings and a fresh
    process-wide runtime in engines.backends.tensorrt.engine."""
    from engines.backends.tensorrt import engine as engine_module

    module = sys.modules[__name__]
    monkeypatch.setitem(sys.modules, "tensorrt", module)
    monkeypatch.setattr(module, "__version__", "10.15.1.29")
    monkeypatch.setattr(module, "FAKE_GPU_SM", "sm_90")
    monkeypatch.setattr(module, "PLUGINS_REGISTERED", set())
    monkeypatch.setattr(module, "FAIL_ENQUEUE", False)
    monkeypatch.setattr(module, "STATE", _State())
    monkeypatch.setattr(engine_module, "_shared", None)
    return module
