"""Conformance against a real TensorRT-family library: TensorRT for RTX (`tensorrt_rtx`).

Real TensorRT needs a GPU to build anything, so CI runs our builder against TensorRT-RTX, whose
ONNX parser is TensorRT 10's and whose builder API mirrors TensorRT 10's, and which builds
engines on a CPU-only machine. These tests do four things:

(a) build the demo graphs with the real parser and builder, directly and through our own
    `build_engine` (tensorrt_rtx installed as `tensorrt`);
(b) exercise SA3-shaped graphs: dynamic shapes, optimization profiles (also refused ones), the
    progress monitor (and cancelling through it), parser errors that name the node;
(c) check that every TensorRT name our code uses exists in tensorrt_rtx (where the two APIs
    agree) and in tests/fake_tensorrt.py, with the same kind, and pin down where TensorRT-RTX
    differs from TensorRT 10 (RTX_VS_TENSORRT_10 below) so nobody mistakes one for the other;
(d) run each compared scenario against both the real library and the fake (the `lib` fixture):
    the fake must be at least as strict as the real library on everything compared here.

The whole module is skipped when tensorrt_rtx is not installed (the `dev` extra installs it).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import sys
import threading
import types
from pathlib import Path
from typing import Any

import onnx
import pytest
from onnx import TensorProto, helper

rtx = pytest.importorskip("tensorrt_rtx")

from engines import demo  # noqa: E402  (after the skip: nothing below runs without tensorrt_rtx)
from engines.backends.tensorrt import runtime as runtime_module  # noqa: E402
from engines.backends.tensorrt.runtime import make_logger  # noqa: E402
from engines.demo.graph_builder import OPSET  # noqa: E402
from engines.errors import BackendError  # noqa: E402
from engines.models.build_plan import BuildSpec, default_profiles, plan_builds  # noqa: E402
from engines.models.builder import BuildCancelled, BuildError, build_engine  # noqa: E402
from tests import fake_tensorrt  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
RTX_GPU = (12, 0)  # an RTX 50-series compute capability: build_engine's gpu_cc argument
F32, I32 = TensorProto.FLOAT, TensorProto.INT32

# ---- where TensorRT-RTX differs from TensorRT 10 ------------------------------------------------
# The fake models TensorRT 10.15 (what the app pins); tensorrt_rtx is the real library CI can run.
# The rows are asserted in test_tensorrt_rtx_differs_from_tensorrt_10_as_documented (the
# OnnxParser row is from the pybind source: a segfault cannot be asserted), so a future
# tensorrt_rtx that changes any of it fails loudly instead of quietly changing what CI proves.
#
# | area              | TensorRT 10.15 (and the fake)       | TensorRT-RTX 1.7                   |
# |-------------------|-------------------------------------|------------------------------------|
# | version, plan     | 10.x; plan magic b"ftrt"            | 1.x; plan magic b"vtrt"; both keep |
# | header            |                                     | major.minor.patch in bytes 24..26  |
# | weak typing       | create_network(0) is weakly typed   | none: every network is strongly    |
# |                   |                                     | typed, create_network(0) too       |
# | NetworkDefinition-| EXPLICIT_BATCH 0, STRONGLY_TYPED 1, | STRONGLY_TYPED 0 only (as in       |
# | CreationFlag      | PREFER_JIT/AOT_PYTHON_PLUGINS 2, 3  | TensorRT 11); a flag >= 2 refused  |
# | precision         | FP16 BF16 INT8 FP8 INT4 FP4,        | none of them (types come from the  |
# | BuilderFlags      | OBEY/PREFER_PRECISION_CONSTRAINTS,  | graph); REQUIRE_USER_ALLOCATION is |
# |                   | REJECT_EMPTY_ALGORITHMS             | new                                |
# | BuilderFlag values| VERSION_COMPATIBLE 13, STRIP_PLAN 19| renumbered (12, 18); TF32 6 and    |
# |                   |                                     | DISABLE_TIMING_CACHE 5 agree       |
# | timing cache      | create/set/get_timing_cache work    | still there, but no-ops with a     |
# |                   |                                     | DeprecationWarning; the runtime    |
# |                   |                                     | cache (IRuntimeCache from          |
# |                   |                                     | IRuntimeConfig) replaces it        |
# | ICudaEngine       | device_memory_size and              | only the _v2 forms                 |
# |                   | get_device_memory_size_for_profile  |                                    |
# |                   | (v1, deprecated since 10.1)         |                                    |
# | Builder           | platform_has_fast_fp16 / _tf32      | none                               |
# | IBuilderConfig    | int8_calibrator, quantization flags | none; set_compute_capability with  |
# |                   |                                     | ComputeCapability SM75..SM121 (no  |
# |                   |                                     | SM90: RTX GPUs, not Hopper)        |
# | IExecutionContext | all_shape_inputs_specified          | none; is_stream_capturable is new  |
# | ITensor           | dynamic_range, set_dynamic_range    | none                               |
# | OnnxParser        | keeps no reference to its network   | the same: drop the network and the |
# |                   | (pyOnnx.cpp keep_alive)             | next parse segfaults (the fake     |
# |                   |                                     | keeps it: not worth modelling)     |
# | builds on a CPU   | no (needs a GPU)                    | yes: how CI can run this file      |
#
# Consequences for SA3 Studio: the published recipes need TensorRT 10 (weak typing, FP16/FP8
# flags), so the version policy refuses tensorrt_rtx under its own version
# (test_build_engine_refuses_tensorrt_rtx_by_its_version). To drive our builder through the
# paths the two libraries share, `rtx_as_tensorrt_10` installs tensorrt_rtx as `tensorrt`
# reporting the TensorRT 10 release whose API it mirrors; the fp8 recipes (FP16/FP8 flags) can't
# run there and are not attempted.
#
# Where the fake is deliberately STRICTER than tensorrt_rtx (allowed; tests rely on it; pinned
# by test_where_the_fake_is_stricter_than_tensorrt_rtx):
# - IOptimizationProfile.set_shape raises for min > opt > max or mixed ranks; the real one
#   accepts them and add_optimization_profile refuses the profile (-1). NvInfer.h allows both
#   ("inputs can be validated only partially"); build_engine handles both.
# - non-ONNX bytes (an HTML error page) fail to parse in the fake; the real parser reads them as
#   an empty model and returns True (test_non_onnx_bytes_parse_as_an_empty_model).
# - an empty optimization profile is refused by the fake, accepted (0) by the real library.
# - create_network(True) raises TypeError in the fake; pybind takes a bool as 1.

TRT10_MIRRORED = "10.15.1.29"  # the TensorRT release the fake models and RTX's API mirrors

RTX_PRECISION_FLAGS_ABSENT = ("FP16", "BF16", "INT8", "FP8", "INT4", "FP4",
                              "OBEY_PRECISION_CONSTRAINTS", "PREFER_PRECISION_CONSTRAINTS",
                              "REJECT_EMPTY_ALGORITHMS")
RTX_ABSENT_MEMBERS = {  # TensorRT 10 has them (so does the fake where it models them)
    "Builder": ("platform_has_fast_fp16", "platform_has_tf32"),
    "ICudaEngine": ("device_memory_size", "get_device_memory_size_for_profile"),
    "IExecutionContext": ("all_shape_inputs_specified",),
    "ITensor": ("dynamic_range", "set_dynamic_range"),
    "IBuilderConfig": ("int8_calibrator", "set_quantization_flag"),
}
RTX_ONLY_MEMBERS = {
    "IBuilderConfig": ("set_compute_capability", "num_compute_capabilities"),
    "IExecutionContext": ("is_stream_capturable",),
    "ICudaEngine": ("create_runtime_config",),
    "IRuntimeConfig": ("create_runtime_cache", "set_runtime_cache"),
    "IRuntimeCache": ("serialize", "deserialize"),
}

# ---- the TensorRT API our code uses --------------------------------------------------------------
# engines/backends/tensorrt/*.py and engines/models/*.py: module attributes (trt.X), the methods
# and properties called on what TensorRT returns, and the methods we override in subclasses.
# test_the_api_table_covers_every_trt_name_in_engines keeps the module part honest.
METHOD, PROPERTY = "method", "property"
USED_API: dict[str, dict[str, str]] = {
    "Builder": {"create_network": METHOD, "create_builder_config": METHOD,
                "create_optimization_profile": METHOD, "build_serialized_network": METHOD},
    "INetworkDefinition": {"num_inputs": PROPERTY, "get_input": METHOD},
    "ITensor": {"name": PROPERTY, "shape": PROPERTY},
    "OnnxParser": {"parse_from_file": METHOD, "num_errors": PROPERTY, "get_error": METHOD},
    "ParserError": {"desc": METHOD, "node": METHOD, "node_name": METHOD,
                    "node_operator": METHOD},
    "IBuilderConfig": {"set_flag": METHOD, "clear_flag": METHOD,
                       "set_memory_pool_limit": METHOD, "add_optimization_profile": METHOD,
                       "create_timing_cache": METHOD, "set_timing_cache": METHOD,
                       "get_timing_cache": METHOD, "progress_monitor": PROPERTY},
    "IOptimizationProfile": {"set_shape": METHOD},
    "ITimingCache": {"serialize": METHOD},
    "IHostMemory": {"nbytes": PROPERTY},  # and the buffer protocol (memoryview)
    "IProgressMonitor": {"phase_start": METHOD, "step_complete": METHOD,
                         "phase_finish": METHOD},
    "ILogger": {"log": METHOD},
    "Runtime": {"deserialize_cuda_engine": METHOD},
    "ICudaEngine": {"num_io_tensors": PROPERTY, "num_optimization_profiles": PROPERTY,
                    "device_memory_size_v2": PROPERTY, "get_tensor_name": METHOD,
                    "get_tensor_mode": METHOD, "get_tensor_dtype": METHOD,
                    "get_tensor_shape": METHOD, "get_tensor_profile_shape": METHOD,
                    "create_execution_context": METHOD,
                    "device_memory_size": PROPERTY},  # pre-10.1 fallback only
    "IExecutionContext": {"set_device_memory": METHOD, "device_memory": PROPERTY,
                          "set_input_shape": METHOD, "get_tensor_shape": METHOD,
                          "set_tensor_address": METHOD, "execute_async_v3": METHOD,
                          "infer_shapes": METHOD, "all_binding_shapes_specified": PROPERTY},
    "Dims": {"__len__": METHOD, "__getitem__": METHOD},
}
USED_ENUMS: dict[str, tuple[str, ...]] = {
    "NetworkDefinitionCreationFlag": ("STRONGLY_TYPED",),
    "MemoryPoolType": ("WORKSPACE",),
    "ExecutionContextAllocationStrategy": ("USER_MANAGED",),
    "TensorIOMode": ("INPUT",),
    # engine.py maps I/O types by member name
    "DataType": ("FLOAT", "HALF", "BF16", "INT64", "INT32", "INT8", "UINT8", "BOOL", "FP8"),
    "ILogger.Severity": ("INTERNAL_ERROR", "ERROR", "WARNING"),  # the collector reads .name
    "BuilderFlag": (),  # the recipes' flags: filled in from engines.models.build_recipe below
}


def _recipe_flags() -> tuple[str, ...]:
    """Every BuilderFlag name a build recipe sets or clears (build_recipe.recipe_for)."""
    try:
        from engines.models import build_recipe
    except ImportError:  # before the recipe module: the flags builder.py names itself
        return ("FP16", "FP8", "TF32")
    names: set[str] = set()
    for role in ("text", "dit", "encoder", "decoder"):
        for precision in ("fp16", "fp32", "fp8"):
            for folder in ("same-s", "same-l", "sa3-m"):
                recipe = build_recipe.recipe_for(role, precision, folder)
                names.update(recipe.set_flags, recipe.cleared_flags)
    return tuple(sorted(names))


USED_ENUMS["BuilderFlag"] = _recipe_flags()
# Used names TensorRT-RTX lacks, and why our code still works with TensorRT 10 there.
USED_BUT_ABSENT_IN_RTX = {
    "BuilderFlag.FP16": "fp8 DiT recipe only; TensorRT-RTX (like TensorRT 11) has no weak typing",
    "BuilderFlag.FP8": "fp8 recipes only; same reason",
    "ICudaEngine.device_memory_size": "engine.py reads device_memory_size_v2 first",
}


# ---- fixtures and helpers ------------------------------------------------------------------------

@pytest.fixture(params=["tensorrt_rtx", "fake"])
def lib(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The real library or the fake, for a scenario whose outcome must be the same in both."""
    if request.param == "fake":
        return fake_tensorrt.install(monkeypatch)
    return rtx


class _RtxAsTensorRT10(types.ModuleType):
    """tensorrt_rtx under the name `tensorrt`, reporting the TensorRT 10 release whose API it
    mirrors, so build_engine gets past the version policy and runs the shared paths for real."""

    def __init__(self) -> None:
        super().__init__("tensorrt")
        self.__version__ = TRT10_MIRRORED

    def __getattr__(self, name: str) -> Any:
        return getattr(rtx, name)


def _install_rtx_as_tensorrt_10(monkeypatch: pytest.MonkeyPatch) -> Any:
    module = _RtxAsTensorRT10()
    monkeypatch.setitem(sys.modules, "tensorrt", module)
    monkeypatch.setattr(runtime_module, "_shared", None)  # no runtime of another module
    return module


@pytest.fixture
def rtx_as_tensorrt_10(monkeypatch: pytest.MonkeyPatch) -> Any:
    return _install_rtx_as_tensorrt_10(monkeypatch)


@pytest.fixture(scope="module")
def demo_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models root holding the demo ONNX set (onnx/demo/...), built once for this module."""
    root = tmp_path_factory.mktemp("conformance-models")
    demo.ensure_demo_models(root)
    return root


def _strong(lib: Any) -> int:
    return 1 << int(lib.NetworkDefinitionCreationFlag.STRONGLY_TYPED)


@dataclasses.dataclass
class Parsed:
    """What parsing one ONNX file into a fresh strongly typed network left behind."""

    ok: bool
    logger: Any
    builder: Any
    network: Any
    parser: Any

    def build(self, profiles: dict, monitor: Any = None) -> Any:
        config = _config(self.builder, profiles, monitor)
        return self.builder.build_serialized_network(self.network, config)


def _parsed(lib: Any, path: Path) -> Parsed:
    logger = make_logger(lib)
    builder = lib.Builder(logger)
    network = builder.create_network(_strong(lib))
    parser = lib.OnnxParser(network, logger)
    return Parsed(parser.parse_from_file(str(path)), logger, builder, network, parser)


def _config(builder: Any, profiles: dict, monitor: Any = None) -> Any:
    config = builder.create_builder_config()
    if profiles:
        profile = builder.create_optimization_profile()
        for name, (low, opt, high) in profiles.items():
            profile.set_shape(name, low, opt, high)
        assert config.add_optimization_profile(profile) == 0
    if monitor is not None:
        config.progress_monitor = monitor
    return config


def _io(network: Any) -> tuple[list, list]:
    """Network inputs and outputs as (name, DataType name, shape with -1 where dynamic)."""
    def row(tensor: Any) -> tuple[str, str, tuple[int, ...]]:
        dims = tensor.shape
        return str(tensor.name), tensor.dtype.name, tuple(int(dims[i]) for i in range(len(dims)))

    return ([row(network.get_input(i)) for i in range(network.num_inputs)],
            [row(network.get_output(i)) for i in range(network.num_outputs)])


def _save(path: Path, nodes: list, inputs: list, outputs: list, *, initializers: tuple = (),
          rules: dict | None = None, domains: tuple[str, ...] = ()) -> Path:
    """An ONNX file pinned the way engines/demo/graph_builder.py pins them (ir_version 8, opset 17),
    checked by onnx when it uses standard ops only (so a parser refusal is TensorRT's)."""
    graph = helper.make_graph(nodes, path.stem, inputs, outputs, list(initializers))
    opsets = [helper.make_opsetid("", OPSET)]
    opsets += [helper.make_opsetid(domain, 1) for domain in domains]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    if rules:  # how the fake derives a dynamic output dim (pcm N = L * 4096)
        helper.set_model_props(model, {fake_tensorrt.RULES_METADATA_KEY: json.dumps(rules)})
    if not domains and all(onnx.defs.has(node.op_type) for node in nodes):
        onnx.checker.check_model(model, full_check=True)
    path.write_bytes(model.SerializeToString())
    return path


def _ints(name: str, *values: int) -> onnx.TensorProto:
    return helper.make_tensor(name, TensorProto.INT64, [len(values)], list(values))


def _floats(name: str, value: float) -> onnx.TensorProto:
    return helper.make_tensor(name, F32, [], [value])


def dit_onnx(path: Path) -> Path:
    """A tiny graph with the DiT contract: velocity = x*t + cond*seconds + mean(masked text)."""
    f = helper.make_tensor_value_info
    inputs = [f("x", F32, [1, 256, "L"]), f("t", F32, [1]), f("t5_hidden", F32, [1, 256, 768]),
              f("t5_mask", F32, [1, 256]), f("seconds_total", F32, [1]),
              f("local_add_cond", F32, [1, 257, "L"])]
    node = helper.make_node
    nodes = [
        node("Slice", ["local_add_cond", "one", "end", "one"], ["cond"], name="keep_latents"),
        node("Unsqueeze", ["t5_mask", "two"], ["mask3"], name="mask_axis"),
        node("Mul", ["t5_hidden", "mask3"], ["masked"], name="mask_text"),
        node("ReduceMean", ["masked"], ["text"], axes=[1, 2], keepdims=1, name="pool_text"),
        node("Mul", ["x", "t"], ["xt"], name="scale_x"),
        node("Mul", ["cond", "seconds_total"], ["cs"], name="scale_cond"),
        node("Add", ["xt", "cs"], ["sum"], name="mix"),
        node("Add", ["sum", "text"], ["velocity"], name="velocity_out"),
    ]
    return _save(path, nodes, inputs, [f("velocity", F32, [1, 256, "L"])],
                 initializers=(_ints("one", 1), _ints("end", 257), _ints("two", 2)))


def decoder_onnx(path: Path) -> Path:
    """A tiny graph with the decoder contract: latent (1,256,L) and a scalar limiter_ceiling ->
    pcm (1, L*4096, 2) int32, clipped to the ceiling and scaled to 16 bits."""
    f = helper.make_tensor_value_info
    inputs = [f("latent", F32, [1, 256, "L"]), f("limiter_ceiling", F32, [])]
    node = helper.make_node
    nodes = [
        node("Slice", ["latent", "zero", "two", "one"], ["stereo"], name="two_channels"),
        node("Transpose", ["stereo"], ["frames"], perm=[0, 2, 1], name="channels_last"),
        node("Unsqueeze", ["frames", "two"], ["frames4"], name="sample_axis"),
        node("Expand", ["frames4", "hold"], ["held"], name="hold_4096"),
        node("Reshape", ["held", "pcm_shape"], ["wave"], name="flatten"),
        node("Neg", ["limiter_ceiling"], ["floor"], name="floor"),
        node("Max", ["wave", "floor"], ["above"], name="clip_low"),
        node("Min", ["above", "limiter_ceiling"], ["clipped"], name="clip_high"),
        node("Mul", ["clipped", "full_scale"], ["scaled"], name="to_16_bit"),
        node("Cast", ["scaled"], ["pcm"], to=I32, name="pcm_out"),
    ]
    initializers = (_ints("zero", 0), _ints("one", 1), _ints("two", 2),
                    _ints("hold", 1, 1, 4096, 1), _ints("pcm_shape", 1, -1, 2),
                    _floats("full_scale", 32767.0))
    return _save(path, nodes, inputs, [f("pcm", I32, [1, "N", 2])], initializers=initializers,
                 rules={"pcm": {"1": ["latent", 2, 4096, 1]}})


SA3_GRAPHS = {"dit": dit_onnx, "decoder": decoder_onnx}
SA3_IO = {
    "dit": ([("x", "FLOAT", (1, 256, -1)), ("t", "FLOAT", (1,)),
             ("t5_hidden", "FLOAT", (1, 256, 768)), ("t5_mask", "FLOAT", (1, 256)),
             ("seconds_total", "FLOAT", (1,)), ("local_add_cond", "FLOAT", (1, 257, -1))],
            [("velocity", "FLOAT", (1, 256, -1))]),
    "decoder": ([("latent", "FLOAT", (1, 256, -1)), ("limiter_ceiling", "FLOAT", ())],
                [("pcm", "INT32", (1, -1, 2))]),
}


def _recorder(lib: Any, *, cancel_after: int | None = None, raise_after: int | None = None):
    """A progress monitor recording ("start", phase, parent, steps), ("step", phase, step) and
    ("finish", phase); it cancels (or raises) after `cancel_after` (`raise_after`) steps."""

    class Recorder(lib.IProgressMonitor):
        def __init__(self) -> None:
            lib.IProgressMonitor.__init__(self)
            self.events: list[tuple] = []

        def phase_start(self, phase_name: str, parent_phase: str | None, num_steps: int) -> None:
            self.events.append(("start", phase_name, parent_phase, int(num_steps)))

        def step_complete(self, phase_name: str, step: int) -> bool:
            self.events.append(("step", phase_name, int(step)))
            done = sum(1 for event in self.events if event[0] == "step")
            if raise_after is not None and done > raise_after:
                raise ValueError("a broken progress display")
            return cancel_after is None or done <= cancel_after

        def phase_finish(self, phase_name: str) -> None:
            self.events.append(("finish", phase_name))

    return Recorder()


def _check_phases(events: list[tuple]) -> None:
    """Phases nest (a parent is open when a child starts), steps belong to an open phase and
    count below its step total, and every started phase is finished."""
    open_phases: dict[str, int] = {}
    for event in events:
        kind, phase = event[0], event[1]
        if kind == "start":
            assert phase not in open_phases, f"{phase!r} started twice"  # BuildProgress keys
            assert event[2] is None or event[2] in open_phases, event  # phases by name
            open_phases[phase] = event[3]
        elif kind == "step":
            assert phase in open_phases and 0 <= event[2] < open_phases[phase], event
        else:
            assert open_phases.pop(phase, None) is not None, event
    assert not open_phases, f"never finished: {sorted(open_phases)}"


# ---- (a) the demo graphs with the real parser and builder ----------------------------------------

DEMO_ROLES = {"text": demo.TEXT_ENCODER_FILE, "dit": demo.DIT_FILE,
              "encoder": demo.ENCODER_FILE, "decoder": demo.DECODER_FILE}
DEMO_INPUTS = {"text": ["input_ids", "attention_mask"],
               "dit": ["x", "t", "t5_hidden", "t5_mask", "seconds_total", "local_add_cond"],
               "encoder": ["audio"], "decoder": ["latent", "limiter_ceiling"]}
DEMO_OUTPUTS = {"text": ["hidden_states"], "dit": ["velocity"], "encoder": ["latent"],
                "decoder": ["pcm"]}


@pytest.mark.parametrize("role", list(DEMO_ROLES))
def test_demo_graph_parses_strongly_typed_and_builds_with_the_app_profiles(
        demo_models: Path, role: str) -> None:
    path = demo.demo_dir(demo_models) / DEMO_ROLES[role]
    parsed = _parsed(rtx, path)
    errors = [parsed.parser.get_error(i).desc() for i in range(parsed.parser.num_errors)]
    assert parsed.ok and not errors, errors  # e.g. an ONNX op TensorRT has no importer for
    inputs, outputs = _io(parsed.network)
    assert [name for name, _, _ in inputs] == DEMO_INPUTS[role]
    assert [name for name, _, _ in outputs] == DEMO_OUTPUTS[role]
    dynamic = {name for name, _, shape in inputs if -1 in shape}
    assert dynamic == set(default_profiles(role))  # the app's profiles cover exactly these
    plan = parsed.build(default_profiles(role))
    assert plan is not None, parsed.logger.errors_since(0)
    assert isinstance(plan, rtx.IHostMemory) and plan.nbytes == memoryview(plan).nbytes > 0


def test_build_engine_builds_the_planned_demo_set(demo_models: Path, tmp_path: Path,
                                                  rtx_as_tensorrt_10: Any) -> None:
    # The plan asks for fp32 ("weakly typed, TF32 cleared"): TensorRT-RTX builds every network
    # strongly typed, so this runs the app's fp32 path with RTX's only typing.
    specs = plan_builds(demo_models, ["demo"], "sm_120", "fp32")
    assert [spec.role for spec in specs] == list(DEMO_ROLES)
    for spec in specs:
        spec = dataclasses.replace(spec, engine_path=tmp_path / "sm_120/demo" /
                                   spec.engine_path.name)
        assert build_engine(spec, gpu_cc=RTX_GPU) == spec.engine_path
        assert spec.engine_path.read_bytes()[:4] == b"vtrt"  # a TensorRT-RTX plan, complete
    assert sorted(p.name for p in (tmp_path / "sm_120/demo").iterdir()) == [
        "dec.trt", "dit_fp32.trt", "enc.trt", "t5gemma.trt"]  # no temp file left behind


def test_build_engine_strongly_typed_fp16_path_reports_progress(
        demo_models: Path, tmp_path: Path, rtx_as_tensorrt_10: Any) -> None:
    decoder = next(s for s in plan_builds(demo_models, ["demo"], "sm_120", "fp32")
                   if s.role == "decoder")  # the smallest dynamic graph: the path is the same
    spec = dataclasses.replace(decoder, precision="fp16", engine_path=tmp_path / "dec_fp16.trt")
    seen: list[tuple[str, int, int]] = []
    assert build_engine(spec, gpu_cc=RTX_GPU, progress=lambda *a: seen.append(a)).is_file()
    assert seen[0] == ("Building engine", 0, seen[0][2]) and seen[0][2] > 0
    assert seen[-1] == ("Building engine", seen[0][2], seen[0][2])  # finished: steps of steps
    assert all(0 <= step <= steps for _, step, steps in seen)


def test_build_engine_cancel_through_the_real_monitor(demo_models: Path, tmp_path: Path,
                                                      rtx_as_tensorrt_10: Any) -> None:
    cancel = threading.Event()

    def progress(phase: str, step: int, steps: int) -> None:
        if step >= 1:
            cancel.set()  # the user presses Cancel once the build is under way

    text = next(s for s in plan_builds(demo_models, ["demo"], "sm_120", "fp32")
                if s.role == "text")
    spec = dataclasses.replace(text, engine_path=tmp_path / "t5gemma.trt")
    with pytest.raises(BuildCancelled):
        build_engine(spec, gpu_cc=RTX_GPU, progress=progress, cancel=cancel)
    assert list(tmp_path.iterdir()) == []


def test_build_engine_timing_cache_is_a_deprecated_no_op_on_rtx(
        demo_models: Path, tmp_path: Path, rtx_as_tensorrt_10: Any) -> None:
    text = next(s for s in plan_builds(demo_models, ["demo"], "sm_120", "fp32")
                if s.role == "text")
    spec = dataclasses.replace(text, engine_path=tmp_path / "t5gemma.trt")
    cache = tmp_path / "timing.cache"
    with pytest.warns(DeprecationWarning, match="no-ops in TensorRT-RTX"):
        assert build_engine(spec, gpu_cc=RTX_GPU, timing_cache=cache).is_file()
    assert cache.is_file()  # still written: the TensorRT 10 path runs unchanged


def test_build_engine_refuses_tensorrt_rtx_by_its_version(demo_models: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # Under its own version (1.x) tensorrt_rtx must be refused in one sentence before any flag
    # is touched: the recipes need TensorRT 10 (a bare AttributeError on BuilderFlag.FP16 was
    # the failure before the version policy).
    monkeypatch.setitem(sys.modules, "tensorrt", rtx)
    text = next(s for s in plan_builds(demo_models, ["demo"], "sm_120", "fp32")
                if s.role == "text")
    spec = dataclasses.replace(text, engine_path=tmp_path / "t5gemma.trt")
    with pytest.raises(BackendError) as caught:
        build_engine(spec, gpu_cc=RTX_GPU)
    message = str(caught.value)
    assert rtx.__version__ in message and "TensorRT 10" in message and "\n" not in message
    assert not spec.engine_path.exists()


def test_build_engine_names_a_file_that_is_not_onnx(tmp_path: Path,
                                                    rtx_as_tensorrt_10: Any) -> None:
    onnx_path = tmp_path / "models/onnx/demo" / demo.TEXT_ENCODER_FILE
    onnx_path.parent.mkdir(parents=True)
    onnx_path.write_bytes(b"<html>rate limited</html>")  # what a failed download may leave
    spec = BuildSpec(onnx_path, tmp_path / "sm_120/demo/t5gemma.trt", "text", "fp32")
    with pytest.raises(BuildError, match="could not parse"):
        build_engine(spec, gpu_cc=RTX_GPU)


# ---- (b) + (d) SA3-shaped graphs: the same scenario against the real library and the fake --------

@pytest.mark.parametrize("role", list(SA3_GRAPHS))
def test_sa3_graph_parses_to_the_contract_io_and_builds(lib: Any, tmp_path: Path,
                                                        role: str) -> None:
    parsed = _parsed(lib, SA3_GRAPHS[role](tmp_path / f"{role}.onnx"))
    assert parsed.ok and parsed.parser.num_errors == 0
    assert _io(parsed.network) == SA3_IO[role]  # names, types, -1 where dynamic, scalar ()
    assert parsed.network.get_flag(lib.NetworkDefinitionCreationFlag.STRONGLY_TYPED)
    plan = parsed.build(default_profiles(role))
    assert isinstance(plan, lib.IHostMemory), parsed.logger.errors_since(0)
    view = memoryview(plan)  # how the builder writes it
    assert plan.nbytes == view.nbytes == len(view.tobytes()) > 0
    with pytest.raises(TypeError):
        len(plan)  # no len() on the binding: code must use nbytes or a memoryview


BAD_PROFILES = {
    "min above max": ((1, 256, 64), (1, 256, 32), (1, 256, 16)),
    "min above opt": ((1, 256, 64), (1, 256, 32), (1, 256, 4096)),
    "opt above max": ((1, 256, 1), (1, 256, 1292), (1, 256, 512)),
    "mixed ranks": ((1, 256, 1), (1, 1292), (1, 256, 4096)),
}


@pytest.mark.parametrize("case", list(BAD_PROFILES))
def test_an_inconsistent_profile_never_reaches_a_build(lib: Any, tmp_path: Path,
                                                       case: str) -> None:
    parsed = _parsed(lib, dit_onnx(tmp_path / "dit.onnx"))
    config = parsed.builder.create_builder_config()
    profile = parsed.builder.create_optimization_profile()
    profile.set_shape("local_add_cond", *default_profiles("dit")["local_add_cond"])
    try:
        profile.set_shape("x", *BAD_PROFILES[case])
    except RuntimeError as err:  # refused at once: allowed by NvInfer.h, done by the fake
        assert lib is not rtx, "tensorrt_rtx now checks profiles in set_shape: update the table"
        assert "inconsistent with other shapes" in str(err)
    else:  # validated when added (tensorrt_rtx): the profile is refused there
        assert config.add_optimization_profile(profile) == -1
        assert any("isValid" in e for e in parsed.logger.errors_since(0))
    assert parsed.builder.build_serialized_network(parsed.network, config) is None


def test_profile_shapes_must_be_complete_and_not_negative(lib: Any) -> None:
    profile = lib.Builder(make_logger(lib)).create_optimization_profile()
    with pytest.raises(RuntimeError, match="min is inconsistent"):
        profile.set_shape("x", (1, 256, -1), (1, 256, 4), (1, 256, 5))
    with pytest.raises(TypeError):
        profile.set_shape("x", (1, 256, 1), (1, 256, 2))  # min, opt and max are all required


def test_a_build_without_a_fitting_profile_returns_none(lib: Any, tmp_path: Path) -> None:
    parsed = _parsed(lib, dit_onnx(tmp_path / "dit.onnx"))
    builder, network = parsed.builder, parsed.network
    assert builder.build_serialized_network(network, builder.create_builder_config()) is None
    assert any("no optimization profile" in e for e in parsed.logger.errors_since(0))
    assert parsed.build({"x": default_profiles("dit")["x"]}) is None  # local_add_cond missing
    wrong = {name: tuple((1, 255, shape[2]) for shape in shapes)  # 255 is not the static 256
             for name, shapes in default_profiles("dit").items()}
    assert parsed.build(wrong) is None  # added fine (0), refused by the build


def test_the_progress_monitor_sees_nested_phases(lib: Any, tmp_path: Path) -> None:
    parsed = _parsed(lib, decoder_onnx(tmp_path / "dec.onnx"))
    monitor = _recorder(lib)
    assert parsed.build(default_profiles("decoder"), monitor) is not None
    events = monitor.events
    assert events[0][:3] == ("start", "Building engine", None) and events[0][3] > 0
    assert events[-1] == ("finish", "Building engine")
    assert any(event[0] == "step" for event in events)
    _check_phases(events)


@pytest.mark.parametrize("how", ["returns False", "raises"])
def test_the_progress_monitor_cancels_the_build(lib: Any, tmp_path: Path, how: str) -> None:
    parsed = _parsed(lib, decoder_onnx(tmp_path / "dec.onnx"))
    if how == "returns False":
        monitor = _recorder(lib, cancel_after=0)
    else:  # the binding's trampoline prints the exception and treats it as a cancel
        monitor = _recorder(lib, raise_after=0)
    assert parsed.build(default_profiles("decoder"), monitor) is None
    assert [event[0] for event in monitor.events].count("step") == 1  # nothing after it
    _check_phases(monitor.events)  # every started phase is still finished
    assert any("cancel" in e.lower() for e in parsed.logger.errors_since(0))


def test_subclasses_must_call_the_base_init(lib: Any) -> None:
    class ForgetfulMonitor(lib.IProgressMonitor):
        def __init__(self) -> None:
            self.events: list = []

    class ForgetfulLogger(lib.ILogger):
        def __init__(self) -> None:
            pass

        def log(self, severity: Any, msg: str) -> None:
            pass

    config = lib.Builder(make_logger(lib)).create_builder_config()
    with pytest.raises(TypeError, match="__init__"):
        config.progress_monitor = ForgetfulMonitor()
    config.progress_monitor = None  # clearing the monitor is fine
    assert config.progress_monitor is None
    with pytest.raises(TypeError, match="__init__"):
        lib.Builder(ForgetfulLogger())


BAD_OPS = {"made-up op": ("Frobnicate", ""), "plugin of another domain": ("diff_attn_swa", "samel"),
           "ONNX DFT": ("DFT", "")}


def _bad_op_onnx(path: Path, op: str, domain: str) -> Path:
    f = helper.make_tensor_value_info
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="first"),
             helper.make_node(op, ["a"], ["b"], name="bad_node", domain=domain),
             helper.make_node("Identity", ["b"], ["y"], name="last")]
    return _save(path, nodes, [f("x", F32, [1, 8, 2])], [f("y", F32, [1, 8, 2])],
                 domains=(domain,) if domain else ())


@pytest.mark.parametrize("case", list(BAD_OPS))
def test_the_parser_names_an_unsupported_node(lib: Any, tmp_path: Path, case: str) -> None:
    op, domain = BAD_OPS[case]
    parsed = _parsed(lib, _bad_op_onnx(tmp_path / "bad.onnx", op, domain))
    parser = parsed.parser
    assert parsed.ok is False and parser.num_errors >= 1
    error = parser.get_error(0)
    assert (error.node(), error.node_name(), error.node_operator()) == (1, "bad_node", op)
    assert error.code() == lib.ErrorCode.INVALID_NODE  # the plugin fallback found nothing
    assert isinstance(error.desc(), str) and error.desc()
    assert parser.get_error(parser.num_errors) is None


@pytest.fixture
def tensorrt_module(lib: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """`lib` installed as `tensorrt` for build_engine (tensorrt_rtx as TensorRT 10)."""
    if lib is rtx:
        return _install_rtx_as_tensorrt_10(monkeypatch)
    return lib  # the fake is installed already


@pytest.mark.parametrize("case", list(BAD_OPS))
def test_build_engine_names_the_unsupported_node(tensorrt_module: Any, tmp_path: Path,
                                                 case: str) -> None:
    op, domain = BAD_OPS[case]
    spec = BuildSpec(_bad_op_onnx(tmp_path / "t5gemma.onnx", op, domain),
                     tmp_path / "sm_120/t5gemma/t5gemma_fp16.trt", "text", "fp16")
    with pytest.raises(BuildError, match=rf"could not parse 't5gemma.onnx': node 1 'bad_node' "
                                         rf"\({op}\): "):
        build_engine(spec, gpu_cc=RTX_GPU)
    assert not spec.engine_path.parent.exists()


def test_unreadable_models_and_wrong_arguments(lib: Any, tmp_path: Path) -> None:
    logger = make_logger(lib)
    builder = lib.Builder(logger)

    networks = []  # the binding's parser does not keep its network alive: we must

    def parser() -> Any:
        networks.append(builder.create_network(_strong(lib)))
        return lib.OnnxParser(networks[-1], logger)

    garbage = parser()
    assert garbage.parse(b"garbage") is False
    error = garbage.get_error(0)
    assert error.code() == lib.ErrorCode.MODEL_DESERIALIZE_FAILED and error.node() == -1
    missing = parser()
    assert missing.parse_from_file(str(tmp_path / "missing.onnx")) is False
    error = missing.get_error(0)
    assert error.code() == lib.ErrorCode.INVALID_VALUE and error.node() == -1
    assert "missing.onnx" in error.desc()
    with pytest.raises(TypeError):
        parser().parse_from_file(tmp_path / "dit.onnx")  # a Path: the binding wants a str
    with pytest.raises(TypeError):
        parser().parse(str(tmp_path / "dit.onnx"))  # parse() takes the model's bytes


def test_non_onnx_bytes_parse_as_an_empty_model(lib: Any) -> None:
    # The real parser reads an HTML error page (or nothing at all) as an empty ModelProto and
    # says True; the fake refuses it (stricter). build_engine therefore checks that the parsed
    # network has inputs and outputs (test_build_engine_names_a_file_that_is_not_onnx).
    logger = make_logger(lib)
    network = lib.Builder(logger).create_network(_strong(lib))
    ok = lib.OnnxParser(network, logger).parse(b"<html>rate limited</html>")
    assert ok is (lib is rtx)
    assert (network.num_inputs, network.num_outputs) == (0, 0)


def test_flag_and_enum_semantics(lib: Any) -> None:
    logger = make_logger(lib)
    builder = lib.Builder(logger)
    strong = lib.NetworkDefinitionCreationFlag.STRONGLY_TYPED
    assert builder.create_network(1 << int(strong)).get_flag(strong)  # flags are bit positions
    unknown_bit = 1 << len(lib.NetworkDefinitionCreationFlag.__members__)
    assert builder.create_network(unknown_bit) is None
    assert any("createNetworkV2" in e for e in logger.errors_since(0))

    config = builder.create_builder_config()
    assert config.get_flag(lib.BuilderFlag.TF32) and config.flags == 1 << 6  # TF32 by default
    config.clear_flag(lib.BuilderFlag.TF32)
    assert not config.get_flag(lib.BuilderFlag.TF32) and config.flags == 0
    config.set_flag(lib.BuilderFlag.DISABLE_TIMING_CACHE)
    assert config.flags == 1 << int(lib.BuilderFlag.DISABLE_TIMING_CACHE)
    with pytest.raises(TypeError):
        config.set_flag(6)  # an int is not a BuilderFlag
    config.set_memory_pool_limit(lib.MemoryPoolType.WORKSPACE, 1 << 20)
    assert config.get_memory_pool_limit(lib.MemoryPoolType.WORKSPACE) == 1 << 20
    with pytest.raises(TypeError):
        config.set_memory_pool_limit(lib.MemoryPoolType.WORKSPACE, 1.5)
    names = {member.name for member in lib.DataType.__members__.values()}
    assert set(USED_ENUMS["DataType"]) <= names


# ---- (c) the API surface -------------------------------------------------------------------------

def _kind(cls: type, name: str, instance: Any = None) -> str | None:
    """METHOD, PROPERTY (a property, descriptor or plain attribute) or None when absent."""
    try:
        attr = inspect.getattr_static(cls, name)
    except AttributeError:
        if instance is not None and name in getattr(instance, "__dict__", {}):
            return PROPERTY  # a plain instance attribute (the fake) reads like a property
        return None
    if isinstance(attr, property) or inspect.isdatadescriptor(attr):
        return PROPERTY
    return METHOD if callable(attr) else PROPERTY


def _enum(lib: Any, dotted: str) -> Any:
    owner = lib
    for part in dotted.split("."):
        owner = getattr(owner, part, None)
    return owner


def test_every_tensorrt_name_we_use_exists_with_the_same_kind(lib: Any, tmp_path: Path) -> None:
    parsed = _parsed(lib, dit_onnx(tmp_path / "dit.onnx"))
    instances = {"ITensor": parsed.network.get_input(0)}  # the fake keeps `name` per instance
    problems = []
    for cls_name, members in USED_API.items():
        cls = getattr(lib, cls_name, None)
        if not isinstance(cls, type):
            problems.append(f"{cls_name} is not a class")
            continue
        for name, kind in members.items():
            key = f"{cls_name}.{name}"
            got = _kind(cls, name, instances.get(cls_name))
            if lib is rtx and key in USED_BUT_ABSENT_IN_RTX:
                if got is not None:
                    problems.append(f"{key} is back in tensorrt_rtx: update the table")
            elif got != kind:
                problems.append(f"{key}: {got or 'missing'}, expected {kind}")
    for dotted, names in USED_ENUMS.items():
        enum_type = _enum(lib, dotted)
        members = getattr(enum_type, "__members__", None)
        if not isinstance(enum_type, type) or members is None:
            problems.append(f"{dotted} is not an enum")
            continue
        for name in names:
            key = f"{dotted}.{name}"
            if lib is rtx and key in USED_BUT_ABSENT_IN_RTX:
                if name in members:
                    problems.append(f"{key} is back in tensorrt_rtx: update the table")
            elif name not in members or not isinstance(getattr(enum_type, name), enum_type):
                problems.append(f"{key} is not a member")
    assert isinstance(lib.__version__, str)
    assert problems == []


def _engine_sources() -> list[Path]:
    return sorted((REPO_ROOT / "engines/backends/tensorrt").glob("*.py")) + sorted(
        (REPO_ROOT / "engines/models").glob("*.py"))


def test_the_api_table_covers_every_trt_name_in_engines() -> None:
    used: set[str] = set()
    text = ""
    for path in _engine_sources():
        source = path.read_text(encoding="utf-8")
        text += source
        for match in re.finditer(r"\btrt\.([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?", source):
            first, second = match.groups()
            used.add(first if second is None or not second[0].isupper() else f"{first}.{second}")
    known = {"__version__", *USED_API, *USED_ENUMS}
    known |= {f"{name}.{member}" for name, members in USED_ENUMS.items() for member in members}
    assert sorted(used - known) == []  # a new TensorRT name in engines/: add it to the tables
    # ... and the tables name nothing engines/ has stopped using.
    stale = [f"{cls}.{name}" for cls, members in USED_API.items() for name in members
             if not name.startswith("__") and not re.search(rf"\b{name}\b", text)]
    assert stale == []


def test_tensorrt_rtx_differs_from_tensorrt_10_as_documented(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = fake_tensorrt.install(monkeypatch)  # the TensorRT 10.15 model
    assert rtx.__version__.split(".")[0] == "1" and fake.__version__.split(".")[0] == "10"

    # Typing: no weak typing in TensorRT-RTX, and its flag has bit 0 (TensorRT 10: bit 1).
    def members(enum_type: Any) -> dict[str, int]:
        return {name: int(value) for name, value in enum_type.__members__.items()}

    assert members(rtx.NetworkDefinitionCreationFlag) == {"STRONGLY_TYPED": 0}
    assert members(fake.NetworkDefinitionCreationFlag) == {
        "EXPLICIT_BATCH": 0, "STRONGLY_TYPED": 1, "PREFER_JIT_PYTHON_PLUGINS": 2,
        "PREFER_AOT_PYTHON_PLUGINS": 3}
    builder = rtx.Builder(make_logger(rtx))
    assert builder.create_network(0).get_flag(rtx.NetworkDefinitionCreationFlag.STRONGLY_TYPED)
    fake_network = fake.Builder(make_logger(fake)).create_network(0)
    assert not fake_network.get_flag(fake.NetworkDefinitionCreationFlag.STRONGLY_TYPED)

    # Builder flags: no precision flags, other numbering.
    assert [n for n in RTX_PRECISION_FLAGS_ABSENT if hasattr(rtx.BuilderFlag, n)] == []
    assert all(hasattr(fake.BuilderFlag, n) for n in ("FP16", "BF16", "INT8", "FP8", "FP4"))
    assert hasattr(rtx.BuilderFlag, "REQUIRE_USER_ALLOCATION")
    for same in ("DISABLE_TIMING_CACHE", "TF32"):
        assert int(getattr(rtx.BuilderFlag, same)) == int(getattr(fake.BuilderFlag, same))
    assert (int(rtx.BuilderFlag.VERSION_COMPATIBLE), int(fake.BuilderFlag.VERSION_COMPATIBLE),
            int(rtx.BuilderFlag.STRIP_PLAN), int(fake.BuilderFlag.STRIP_PLAN)) == (12, 13, 18, 19)

    # Members TensorRT 10 has and TensorRT-RTX lacks, and the other way round.
    absent = [f"{cls}.{name}" for cls, names in RTX_ABSENT_MEMBERS.items() for name in names
              if hasattr(getattr(rtx, cls), name)]
    assert absent == []
    assert (hasattr(fake.ICudaEngine, "device_memory_size")
            and hasattr(fake.Builder, "platform_has_fast_fp16"))  # modelled where we touch them
    only = [f"{cls}.{name}" for cls, names in RTX_ONLY_MEMBERS.items() for name in names
            if not hasattr(getattr(rtx, cls), name)]
    assert only == []
    assert "SM90" not in rtx.ComputeCapability.__members__  # RTX GPUs only, no Hopper
    assert {"SM89", "SM120"} <= set(rtx.ComputeCapability.__members__)

    # Timing cache: present, but a deprecated no-op.
    config = builder.create_builder_config()
    with pytest.warns(DeprecationWarning, match="no-ops in TensorRT-RTX"):
        assert config.set_timing_cache(config.create_timing_cache(b""), False)

    # Plan header: magic b"vtrt", with the builder's version at the offset TensorRT uses.
    parsed = _parsed(rtx, _bad_op_onnx(tmp_path / "relu.onnx", "Relu", ""))
    plan = memoryview(parsed.build({})).tobytes()
    version = bytes(int(part) for part in rtx.__version__.split(".")[:3])
    assert plan[:4] == b"vtrt" and plan[24:27] == version


def test_where_the_fake_is_stricter_than_tensorrt_rtx(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = fake_tensorrt.install(monkeypatch)
    outcomes = {}
    for name, lib in (("real", rtx), ("fake", fake)):
        builder = lib.Builder(make_logger(lib))
        try:
            builder.create_optimization_profile().set_shape(
                "x", (1, 256, 64), (1, 256, 32), (1, 256, 4096))
            inverted = "accepted"
        except RuntimeError:
            inverted = "raised"
        empty = builder.create_builder_config().add_optimization_profile(
            builder.create_optimization_profile())
        try:
            as_bool = "network" if builder.create_network(True) is not None else "None"
        except TypeError:
            as_bool = "TypeError"
        outcomes[name] = (inverted, empty, as_bool)
    assert outcomes == {"real": ("accepted", 0, "network"), "fake": ("raised", -1, "TypeError")}
