"""A strict fake of the TensorRT 10 Python API surface SA3 Studio uses, for CI without a GPU.

Tests install it as sys.modules["tensorrt"] (see `install`). It refuses what TensorRT refuses,
with TensorRT's own return values (False, None, Dims{-1}) and error log lines, and it records
every call so a test can assert what reached "TensorRT" and what did not.

The fake engine file is JSON (see `make_engine_bytes`): the I/O table, profile 0, the device
memory size, the arch and TensorRT version it was "built" for, and rules that derive dynamic
output dims from input dims.

The builder side (Builder, OnnxParser, IBuilderConfig, ...) parses real ONNX graphs through the
onnx package and "builds" that plan format, so an engine built here loads through Runtime.
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
        self.builders: list[Builder] = []
        self.networks: list[INetworkDefinition] = []
        self.parsers: list[OnnxParser] = []
        self.configs: list[IBuilderConfig] = []
        self.builds: list[dict] = []  # {"network", "config", "result"} per build call


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


# ---- the builder side ---------------------------------------------------------------------------
# Builder, network, ONNX parser, builder config, optimization profiles, timing cache and progress
# monitor of TensorRT 10. The parser reads real ONNX files (graph only, through the onnx package)
# and the build writes a plan in the `make_engine_bytes` format, so a built engine loads through
# Runtime above. Every object is recorded in STATE for tests.

FAIL_BUILD: str | None = None  # when set, a build logs it as its error and returns None
BUILD_STEPS = 4  # steps of the fake "tactic timing" phase, one step_complete call each

_TIMING_MAGIC = "FAKE-TRT-TIMING"
_ONNX_FIRST_BYTE = b"\x08"  # field 1 (ir_version, varint): every serialized ModelProto starts so
_PRECISION_FLAGS = ("FP16", "BF16", "INT8", "FP8", "INT4", "FP4")
# Deprecated in TensorRT 10.12 ("superseded by strong typing") but still there in every 10.x, and
# gone from TensorRT 11.0 (release/10.15 and release/11.0 include/NvInfer.h). A fake whose
# __version__ is 11 or later refuses them as the missing attribute they are there.
_REMOVED_IN_11 = ("FP16", "INT8", "OBEY_PRECISION_CONSTRAINTS", "PREFER_PRECISION_CONSTRAINTS",
                  "REJECT_EMPTY_ALGORITHMS", "FP8", "BF16", "INT4", "FP4")


def _check_flag_exists(flag: Any) -> None:
    major = int(str(sys.modules[__name__].__version__).split(".")[0])
    if flag.name in _REMOVED_IN_11 and major >= 11:
        raise AttributeError(f"type object 'tensorrt.BuilderFlag' has no attribute '{flag.name}'")


class BuilderFlag(enum.IntEnum):
    """TensorRT 10's flags; FP16, INT8, FP8, BF16, INT4, FP4 and the precision-constraint flags
    are deprecated (10.12) but present, see _REMOVED_IN_11."""

    FP16 = 0
    INT8 = 1
    DEBUG = 2
    GPU_FALLBACK = 3
    REFIT = 4
    DISABLE_TIMING_CACHE = 5
    TF32 = 6
    SPARSE_WEIGHTS = 7
    SAFETY_SCOPE = 8
    OBEY_PRECISION_CONSTRAINTS = 9
    PREFER_PRECISION_CONSTRAINTS = 10
    DIRECT_IO = 11
    REJECT_EMPTY_ALGORITHMS = 12
    VERSION_COMPATIBLE = 13
    EXCLUDE_LEAN_RUNTIME = 14
    FP8 = 15
    ERROR_ON_TIMING_CACHE_MISS = 16
    BF16 = 17
    DISABLE_COMPILATION_CACHE = 18
    STRIP_PLAN = 19
    REFIT_IDENTICAL = 20
    WEIGHT_STREAMING = 21
    INT4 = 22
    REFIT_INDIVIDUAL = 23
    STRICT_NANS = 24
    MONITOR_MEMORY = 25
    FP4 = 26
    EDITABLE_TIMING_CACHE = 27


class NetworkDefinitionCreationFlag(enum.IntEnum):
    """Bit positions: create_network takes `1 << int(flag)`, as in TensorRT."""

    EXPLICIT_BATCH = 0  # deprecated and ignored in TensorRT 10
    STRONGLY_TYPED = 1
    PREFER_JIT_PYTHON_PLUGINS = 2
    PREFER_AOT_PYTHON_PLUGINS = 3


class MemoryPoolType(enum.IntEnum):
    WORKSPACE = 0
    DLA_MANAGED_SRAM = 1
    DLA_LOCAL_DRAM = 2
    DLA_GLOBAL_DRAM = 3
    TACTIC_DRAM = 4
    TACTIC_SHARED_MEMORY = 5


class ErrorCode(enum.Enum):
    SUCCESS = 0
    INTERNAL_ERROR = 1
    MEM_ALLOC_FAILED = 2
    MODEL_DESERIALIZE_FAILED = 3
    INVALID_VALUE = 4
    INVALID_GRAPH = 5
    INVALID_NODE = 6
    UNSUPPORTED_GRAPH = 7
    UNSUPPORTED_NODE = 8
    UNSUPPORTED_NODE_ATTR = 9
    UNSUPPORTED_NODE_INPUT = 10
    UNSUPPORTED_NODE_DATATYPE = 11
    UNSUPPORTED_NODE_DYNAMIC = 12
    UNSUPPORTED_NODE_SHAPE = 13
    REFIT_FAILED = 14


class IHostMemory(bytes):
    """Serialized data TensorRT hands back (a plan, a timing cache): a buffer, like the binding.
    The binding has the buffer protocol and `nbytes` but no len() (conformance-tested)."""

    def __len__(self) -> int:
        raise TypeError("object of type 'IHostMemory' has no len(); use nbytes or memoryview")

    def __bool__(self) -> bool:  # a plain object: always true, even when empty
        return True

    @property
    def nbytes(self) -> int:
        return memoryview(self).nbytes

    @property
    def dtype(self) -> DataType:
        return DataType.UINT8


class ITensor:
    def __init__(self, name: str, dtype: DataType, shape: tuple[int, ...], is_input: bool,
                 rule: dict | None = None) -> None:
        self.name = name
        self.dtype = dtype
        self._shape = shape
        self.is_network_input = is_input
        self.is_network_output = not is_input
        self.is_shape_tensor = False
        self.rule = rule or {}

    @property
    def shape(self) -> Dims:
        return Dims(self._shape)


class INetworkDefinition:
    def __init__(self, builder: Builder, flags: int) -> None:
        self.builder = builder
        self.flags = flags
        self.name = "Unnamed Network 0"
        self._inputs: list[ITensor] = []
        self._outputs: list[ITensor] = []
        self.num_layers = 0
        self.plugin_nodes: list[str] = []

    def get_flag(self, flag: NetworkDefinitionCreationFlag) -> bool:
        return bool(self.flags & (1 << int(flag)))

    @property
    def strongly_typed(self) -> bool:  # a fake-only shortcut for tests
        return self.get_flag(NetworkDefinitionCreationFlag.STRONGLY_TYPED)

    @property
    def num_inputs(self) -> int:
        return len(self._inputs)

    @property
    def num_outputs(self) -> int:
        return len(self._outputs)

    def get_input(self, index: int) -> ITensor | None:
        return self._inputs[index] if 0 <= index < len(self._inputs) else None

    def get_output(self, index: int) -> ITensor | None:
        return self._outputs[index] if 0 <= index < len(self._outputs) else None


class ParserError:
    def __init__(self, code: ErrorCode, desc: str, node: int = -1, node_name: str = "",
                 node_operator: str = "", func: str = "parseFromFile") -> None:
        self._code, self._desc, self._node = code, desc, node
        self._node_name, self._node_operator, self._func = node_name, node_operator, func

    def code(self) -> ErrorCode:
        return self._code

    def desc(self) -> str:
        return self._desc

    def file(self) -> str:
        return "ModelImporter.cpp"

    def line(self) -> int:
        return 0

    def func(self) -> str:
        return self._func

    def node(self) -> int:
        return self._node

    def node_name(self) -> str:
        return self._node_name

    def node_operator(self) -> str:
        return self._node_operator

    def __str__(self) -> str:
        return f"In node {self._node} ({self._func}): {self._code.name}: {self._desc}"


# ONNX TensorProto element type -> DataType; others make the parser fail, as TensorRT's does.
_ONNX_DTYPES = {1: DataType.FLOAT, 10: DataType.HALF, 16: DataType.BF16, 7: DataType.INT64,
                6: DataType.INT32, 3: DataType.INT8, 2: DataType.UINT8, 9: DataType.BOOL,
                17: DataType.FP8}
_ONNX_DOMAINS = ("", "ai.onnx")
# Standard ONNX ops the TensorRT ONNX parser has no importer for (OnnxParser.supports_operator
# is False in TensorRT-RTX 1.7's parser, which is TensorRT 10's): refused like made-up ops.
_TRT_UNSUPPORTED_ONNX_OPS = frozenset((
    "AffineGrid Bernoulli BitCast BitShift BitwiseAnd BitwiseNot BitwiseOr BitwiseXor "
    "CenterCropPad Col2Im Compress ConcatFromSequence ConvInteger CumProd DFT DeformConv Det "
    "DynamicQuantizeLinear ImageDecoder MatMulInteger MaxRoiPool MaxUnpool MelWeightMatrix "
    "Multinomial NegativeLogLikelihoodLoss Optional OptionalGetElement OptionalHasElement "
    "QLinearConv QLinearMatMul RegexFullMatch SequenceAt SequenceConstruct SequenceEmpty "
    "SequenceErase SequenceInsert SequenceLength SequenceMap SoftmaxCrossEntropyLoss "
    "SplitToSequence StringConcat StringNormalizer StringSplit SwiGLU TfIdfVectorizer Unique"
).split())
RULES_METADATA_KEY = "fake_trt.rules"
"""ONNX metadata_props key of a JSON {output: {dim: [input, input dim, mul, div]}} that tells the
fake how a dynamic output dim follows the inputs when the symbols differ (pcm N = L * 4096)."""


class OnnxParser:
    def __init__(self, network: INetworkDefinition, logger: ILogger) -> None:
        if not isinstance(network, INetworkDefinition):
            raise TypeError("__init__(): incompatible constructor arguments: network")
        _check_logger(logger)
        self.network = network
        self.logger = logger
        self._errors: list[ParserError] = []
        self.parsed: list[str] = []  # what parse_from_file / parse was given
        STATE.parsers.append(self)

    @property
    def num_errors(self) -> int:
        return len(self._errors)

    def get_error(self, index: int) -> ParserError | None:
        return self._errors[index] if 0 <= index < len(self._errors) else None

    def clear_errors(self) -> None:
        self._errors.clear()

    def _fail(self, error: ParserError) -> bool:
        self._errors.append(error)
        self.logger.log(ILogger.ERROR, f"ModelImporter.cpp:0: {error}")
        return False

    def parse_from_file(self, model: str) -> bool:
        if not isinstance(model, str):
            raise TypeError("parse_from_file(): incompatible function arguments")
        self.parsed.append(model)
        try:
            with open(model, "rb") as handle:
                data = handle.read()
        except OSError:
            return self._fail(ParserError(ErrorCode.INVALID_VALUE,  # the real parser's code
                                          "Input file cannot be found, or is not a regular "
                                          f"file: {model}"))
        return self._parse(data, "parseFromFile")

    def parse(self, model: Any, path: str | None = None) -> bool:
        if isinstance(model, str):
            raise TypeError("parse(): incompatible function arguments")
        self.parsed.append(path or "<buffer>")
        return self._parse(bytes(memoryview(model)), "parse")

    def _parse(self, data: bytes, func: str) -> bool:
        import onnx

        model = None
        if data[:1] == _ONNX_FIRST_BYTE:
            try:
                model = onnx.load_model_from_string(data)
            except Exception:  # DecodeError and friends: not a ModelProto
                model = None
        if model is None or not model.HasField("graph"):
            return self._fail(ParserError(ErrorCode.MODEL_DESERIALIZE_FAILED,
                                          "Failed to parse ONNX model. Please check that the "
                                          "file is a valid ONNX model.", func=func))
        graph = model.graph
        local = {(f.domain, f.name) for f in model.functions}
        for index, node in enumerate(graph.node):
            if (node.domain, node.op_type) in local or (
                node.domain in _ONNX_DOMAINS and node.op_type not in _TRT_UNSUPPORTED_ONNX_OPS
                and onnx.defs.has(node.op_type)
            ):
                continue
            if node.op_type in sys.modules[__name__].PLUGINS_REGISTERED:
                self.network.plugin_nodes.append(node.op_type)
                continue
            # The real parser falls back to a plugin lookup and reports kINVALID_NODE.
            return self._fail(ParserError(
                ErrorCode.INVALID_NODE,
                f"No importer registered for op: {node.op_type}. Attempting to import as plugin. "
                f"Plugin not found: {node.op_type}, version: 1, namespace: {node.domain}.",
                node=index, node_name=node.name, node_operator=node.op_type, func=func))
        rules = {}
        for prop in model.metadata_props:
            if prop.key == RULES_METADATA_KEY:
                rules = json.loads(prop.value)
        initializers = {init.name for init in graph.initializer}
        symbols: dict[str, tuple[str, int]] = {}
        inputs: list[ITensor] = []
        for value in graph.input:
            if value.name in initializers:
                continue
            tensor = self._tensor(value, True, func, symbols, {})
            if tensor is None:
                return False
            inputs.append(tensor)
        outputs: list[ITensor] = []
        for value in graph.output:
            tensor = self._tensor(value, False, func, symbols, rules.get(value.name, {}))
            if tensor is None:
                return False
            outputs.append(tensor)
        self.network._inputs, self.network._outputs = inputs, outputs
        self.network.num_layers = len(graph.node)
        self.network.name = graph.name or self.network.name
        return True

    def _tensor(self, value: Any, is_input: bool, func: str, symbols: dict,
                rules: dict) -> ITensor | None:
        kind = value.type.tensor_type
        dtype = _ONNX_DTYPES.get(kind.elem_type)
        if dtype is None:
            self._fail(ParserError(ErrorCode.UNSUPPORTED_GRAPH, f"{value.name}: ONNX element "
                                   f"type {kind.elem_type} is not supported.", func=func))
            return None
        shape = []
        rule = {str(k): v for k, v in rules.items()}
        for axis, dim in enumerate(kind.shape.dim):
            if dim.HasField("dim_value"):
                shape.append(int(dim.dim_value))
                continue
            shape.append(-1)
            if is_input and dim.dim_param:
                symbols.setdefault(dim.dim_param, (value.name, axis))
            elif not is_input and dim.dim_param in symbols and str(axis) not in rule:
                source, source_axis = symbols[dim.dim_param]
                rule[str(axis)] = [source, source_axis, 1, 1]
        return ITensor(value.name, dtype, tuple(shape), is_input, rule)


class IOptimizationProfile:
    def __init__(self) -> None:
        self.shapes: dict[str, tuple[tuple[int, ...], ...]] = {}

    def set_shape(self, input: str, min: Any, opt: Any, max: Any) -> None:
        low, mid, high = _dims_arg(min), _dims_arg(opt), _dims_arg(max)
        if len(mid) != len(low) or any(o < lo for o, lo in zip(mid, low, strict=False)):
            raise RuntimeError("Shape provided for opt is inconsistent with other shapes.")
        if len(high) != len(mid) or any(h < o for h, o in zip(high, mid, strict=False)):
            raise RuntimeError("Shape provided for max is inconsistent with other shapes.")
        if any(d < 0 for d in low):
            raise RuntimeError("Shape provided for min is inconsistent with other shapes.")
        self.shapes[input] = (low, mid, high)

    def get_shape(self, input: str) -> list[Dims]:
        shapes = self.shapes.get(input)
        return [Dims(s) for s in shapes] if shapes else []


class ITimingCache:
    def __init__(self, device: str, trt_version: str, entries: list[str],
                 loaded_from: bytes) -> None:
        self.device = device
        self.trt_version = trt_version
        self.entries = list(entries)
        self.loaded_from = loaded_from  # the bytes create_timing_cache was given (tests)

    def serialize(self) -> IHostMemory:
        return IHostMemory(json.dumps({"magic": _TIMING_MAGIC, "device": self.device,
                                       "trt_version": self.trt_version,
                                       "entries": self.entries}).encode())

    def combine(self, input_cache: ITimingCache, ignore_mismatch: bool) -> bool:
        if input_cache.device != self.device and not ignore_mismatch:
            return False
        self.entries += [e for e in input_cache.entries if e not in self.entries]
        return True

    def reset(self) -> bool:
        self.entries.clear()
        return True


class IProgressMonitor:
    """Abstract base: subclasses must call IProgressMonitor.__init__ and override all three."""

    def __init__(self) -> None:
        self._fake_initialized = True

    def phase_start(self, phase_name: str, parent_phase: str | None, num_steps: int) -> None:
        raise RuntimeError('Tried to call pure virtual function "IProgressMonitor::phaseStart"')

    def step_complete(self, phase_name: str, step: int) -> bool:
        raise RuntimeError('Tried to call pure virtual function "IProgressMonitor::stepComplete"')

    def phase_finish(self, phase_name: str) -> None:
        raise RuntimeError('Tried to call pure virtual function "IProgressMonitor::phaseFinish"')


class IBuilderConfig:
    def __init__(self, builder: Builder) -> None:
        self.builder = builder
        self._flags = 1 << int(BuilderFlag.TF32)  # TensorRT's default
        self.pool_limits: dict[MemoryPoolType, int] = {}
        self.profiles: list[IOptimizationProfile] = []
        self._timing_cache: ITimingCache | None = None
        self.timing_cache_calls: list[tuple[ITimingCache, bool]] = []
        self._progress_monitor: IProgressMonitor | None = None
        self.builder_optimization_level = 3

    def _error(self, msg: str) -> None:
        self.builder.logger.log(ILogger.ERROR, msg)

    # flags

    @property
    def flags(self) -> int:
        return self._flags

    @flags.setter
    def flags(self, value: int) -> None:
        self._flags = int(value)

    def set_flag(self, flag: BuilderFlag) -> None:
        if not isinstance(flag, BuilderFlag):
            raise TypeError("set_flag(): incompatible function arguments")
        _check_flag_exists(flag)
        self._flags |= 1 << int(flag)

    def clear_flag(self, flag: BuilderFlag) -> None:
        if not isinstance(flag, BuilderFlag):
            raise TypeError("clear_flag(): incompatible function arguments")
        _check_flag_exists(flag)
        self._flags &= ~(1 << int(flag))

    def get_flag(self, flag: BuilderFlag) -> bool:
        return bool(self._flags & (1 << int(flag)))

    @property
    def flag_names(self) -> set[str]:  # a fake-only shortcut for tests
        return {flag.name for flag in BuilderFlag if self.get_flag(flag)}

    # memory and profiles

    def set_memory_pool_limit(self, pool: MemoryPoolType, pool_size: int) -> None:
        if not isinstance(pool, MemoryPoolType) or not isinstance(pool_size, int):
            raise TypeError("set_memory_pool_limit(): incompatible function arguments")
        self.pool_limits[pool] = pool_size

    def get_memory_pool_limit(self, pool: MemoryPoolType) -> int:
        return self.pool_limits.get(pool, 80 << 30)

    def add_optimization_profile(self, profile: IOptimizationProfile) -> int:
        if not isinstance(profile, IOptimizationProfile):
            raise TypeError("add_optimization_profile(): incompatible function arguments")
        if not profile.shapes:
            self._error("IBuilderConfig::addOptimizationProfile: Error Code 3: API Usage Error "
                        "(Parameter check failed, condition: profile->isValid().)")
            return -1
        self.profiles.append(profile)
        return len(self.profiles) - 1

    @property
    def num_optimization_profiles(self) -> int:
        return len(self.profiles)

    # timing cache

    def create_timing_cache(self, serialized_timing_cache: Any) -> ITimingCache | None:
        if isinstance(serialized_timing_cache, str):
            raise TypeError("create_timing_cache(): incompatible function arguments")
        data = bytes(memoryview(serialized_timing_cache))
        module = sys.modules[__name__]
        if not data:
            return ITimingCache(module.FAKE_GPU_SM, module.__version__, [], data)
        try:
            blob = json.loads(data.decode())
            if not isinstance(blob, dict) or blob.get("magic") != _TIMING_MAGIC:
                raise ValueError("no magic")
            if blob["trt_version"] != module.__version__:
                raise ValueError("another TensorRT version")
        except (UnicodeDecodeError, ValueError):
            # TensorRT never returns None here: it drops the blob and hands back an EMPTY cache
            # (seen with the TensorRT-RTX 1.7 builder; TensorRT 8.6 logged the same first line).
            warn = self.builder.logger.log
            warn(ILogger.WARNING, "The timing cache will not be used!")
            warn(ILogger.WARNING, "Failed to deserialize timing cache. Returning an empty timing "
                                  "cache.")
            return ITimingCache(module.FAKE_GPU_SM, module.__version__, [], data)
        return ITimingCache(blob["device"], blob["trt_version"], blob["entries"], data)

    def set_timing_cache(self, cache: ITimingCache, ignore_mismatch: bool) -> bool:
        if not isinstance(cache, ITimingCache) or not isinstance(ignore_mismatch, bool):
            raise TypeError("set_timing_cache(): incompatible function arguments")
        self.timing_cache_calls.append((cache, ignore_mismatch))
        if cache.device != sys.modules[__name__].FAKE_GPU_SM and not ignore_mismatch:
            self._error("IBuilderConfig::setTimingCache: Error Code 3: API Usage Error (The "
                        "timing cache was created on a different device.)")
            return False
        self._timing_cache = cache
        return True

    def get_timing_cache(self) -> ITimingCache | None:
        return self._timing_cache

    # progress

    @property
    def progress_monitor(self) -> IProgressMonitor | None:
        return self._progress_monitor

    @progress_monitor.setter
    def progress_monitor(self, monitor: IProgressMonitor | None) -> None:
        if monitor is not None:
            if not isinstance(monitor, IProgressMonitor):
                raise TypeError("progress_monitor: incompatible function arguments")
            if not getattr(monitor, "_fake_initialized", False):
                raise TypeError(f"{type(monitor).__name__}.__init__() must be called when "
                                "overriding __init__")
        self._progress_monitor = monitor


class Builder:
    def __init__(self, logger: ILogger) -> None:
        _check_logger(logger)
        self.logger = logger
        self.max_threads = 16
        self.builds = 0
        STATE.builders.append(self)

    @property
    def platform_has_fast_fp16(self) -> bool:
        return True

    @property
    def platform_has_tf32(self) -> bool:
        return True

    def _error(self, msg: str) -> None:
        self.logger.log(ILogger.ERROR, msg)

    def create_network(self, flags: int = 0) -> INetworkDefinition | None:
        if not isinstance(flags, int) or isinstance(flags, bool):
            raise TypeError("create_network(): incompatible function arguments")
        if flags < 0 or flags >= 1 << len(NetworkDefinitionCreationFlag):
            self._error("IBuilder::createNetworkV2: Error Code 3: API Usage Error (Parameter "
                        f"check failed, condition: flags are valid NetworkDefinitionCreationFlags, "
                        f"got {flags}.)")
            return None
        network = INetworkDefinition(self, flags)
        STATE.networks.append(network)
        return network

    def create_builder_config(self) -> IBuilderConfig:
        config = IBuilderConfig(self)
        STATE.configs.append(config)
        return config

    def create_optimization_profile(self) -> IOptimizationProfile:
        return IOptimizationProfile()

    def build_serialized_network(self, network: INetworkDefinition,
                                 config: IBuilderConfig) -> IHostMemory | None:
        if not isinstance(network, INetworkDefinition) or not isinstance(config, IBuilderConfig):
            raise TypeError("build_serialized_network(): incompatible function arguments")
        self.builds += 1
        record = {"network": network, "config": config, "result": None}
        STATE.builds.append(record)
        module = sys.modules[__name__]
        where = "IBuilder::buildSerializedNetwork"
        if module.FAIL_BUILD:
            self._error(f"{where}: Error Code 2: Internal Error ({module.FAIL_BUILD})")
            return None
        if network.num_outputs == 0:
            self._error(f"{where}: Error Code 4: API Usage Error (Network must have at least one "
                        "output.)")
            return None
        set_precision = [n for n in _PRECISION_FLAGS if config.get_flag(BuilderFlag[n])]
        if network.strongly_typed and set_precision:
            self._error(f"{where}: Error Code 4: API Usage Error (Builder flags "
                        f"{', '.join('k' + n for n in set_precision)} are not allowed with a "
                        "strongly typed network: types come from the network.)")
            return None
        if config.get_flag(BuilderFlag.FP8) and int(module.FAKE_GPU_SM.removeprefix("sm_")) < 89:
            self._error(f"{where}: Error Code 9: API Usage Error (FP8 requires compute capability "
                        f"8.9 or newer, this device is {_compute(module.FAKE_GPU_SM)}.)")
            return None
        if not self._check_profiles(network, config):
            return None
        if not self._run_monitor(config.progress_monitor):
            self._error(f"{where}: Error Code 2: Internal Error (Engine build was cancelled by "
                        "the progress monitor.)")
            return None
        cache = config.get_timing_cache()
        if cache is not None and not config.get_flag(BuilderFlag.DISABLE_TIMING_CACHE):
            entry = f"{network.name}:{len(network._inputs)}x{len(network._outputs)}"
            if entry not in cache.entries:
                cache.entries.append(entry)
        io = []
        for tensor in network._inputs:
            entry = {"name": tensor.name, "mode": "INPUT", "dtype": tensor.dtype.name,
                     "shape": list(tensor._shape)}
            if -1 in tensor._shape:
                entry["profile"] = [list(s) for s in config.profiles[0].shapes[tensor.name]]
            io.append(entry)
        for tensor in network._outputs:
            io.append({"name": tensor.name, "mode": "OUTPUT", "dtype": tensor.dtype.name,
                       "shape": list(tensor._shape), "rule": tensor.rule})
        plan = IHostMemory(make_engine_bytes(
            io, device_memory=32 << 20, sm=module.FAKE_GPU_SM, trt_version=module.__version__,
            plugin=bool(network.plugin_nodes), num_profiles=max(1, len(config.profiles))))
        record["result"] = plan
        return plan

    def _check_profiles(self, network: INetworkDefinition, config: IBuilderConfig) -> bool:
        where = "IBuilder::buildSerializedNetwork: Error Code 4: API Usage Error"
        dynamic = [t for t in network._inputs if -1 in t._shape]
        if dynamic and not config.profiles:
            self._error(f"{where} (Network has dynamic or shape inputs, but no optimization "
                        "profile has been defined.)")
            return False
        names = {t.name: t for t in network._inputs}
        for index, profile in enumerate(config.profiles):
            for name in profile.shapes:
                if name not in names:
                    self._error(f"{where} ({name}: profile {index} names a tensor that is not a "
                                "network input.)")
                    return False
            for tensor in network._inputs:
                shapes = profile.shapes.get(tensor.name)
                if shapes is None:
                    if -1 in tensor._shape:
                        self._error(f"{where} ({tensor.name}: dynamic input is missing "
                                    f"dimensions in profile {index}.)")
                        return False
                    continue
                for shape in shapes:
                    if len(shape) != len(tensor._shape) or any(
                        want >= 0 and got != want
                        for want, got in zip(tensor._shape, shape, strict=True)
                    ):
                        self._error(f"{where} ({tensor.name}: profile {index} dimensions "
                                    f"{list(shape)} do not match the network dimensions "
                                    f"{list(tensor._shape)}.)")
                        return False
        return True

    @staticmethod
    def _run_monitor(monitor: IProgressMonitor | None) -> bool:
        """Drive the monitor as TensorRT does; False when step_complete asked to cancel (an
        exception in the callback counts as a cancel, like the binding's trampoline)."""
        if monitor is None:
            return True
        outer, inner = "Building engine", "Tactic timing"

        def call(method: str, *args: Any) -> Any:
            try:
                return getattr(monitor, method)(*args)
            except Exception as err:  # the trampoline prints and carries on
                print(f"[ERROR] Exception caught in {method}(): {err}", file=sys.stderr)
                return False

        call("phase_start", outer, None, 2)
        call("phase_start", inner, outer, BUILD_STEPS)
        for step in range(BUILD_STEPS):
            if not call("step_complete", inner, step):
                call("phase_finish", inner)
                call("phase_finish", outer)
                return False
        call("phase_finish", inner)
        for step in range(2):
            if not call("step_complete", outer, step):
                call("phase_finish", outer)
                return False
        call("phase_finish", outer)
        return True


# ---- installing -----------------------------------------------------------------------------

def install(monkeypatch: Any) -> types.ModuleType:
    """Make `import tensorrt` give this fake for one test, with default settings and a fresh
    process-wide runtime in engines.backends.tensorrt.runtime."""
    from engines.backends.tensorrt import runtime as runtime_module

    module = sys.modules[__name__]
    monkeypatch.setitem(sys.modules, "tensorrt", module)
    monkeypatch.setattr(module, "__version__", "10.15.1.29")
    monkeypatch.setattr(module, "FAKE_GPU_SM", "sm_90")
    monkeypatch.setattr(module, "PLUGINS_REGISTERED", set())
    monkeypatch.setattr(module, "FAIL_ENQUEUE", False)
    monkeypatch.setattr(module, "FAIL_BUILD", None)
    monkeypatch.setattr(module, "STATE", _State())
    monkeypatch.setattr(runtime_module, "_shared", None)
    return module
