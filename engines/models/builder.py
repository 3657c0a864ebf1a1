"""Build TensorRT engines from the SA3 ONNX graphs, for GPUs without published engines.

What to build is planned in `build_plan` (`plan_builds` gives `BuildSpec`s);
`build_engine` builds one of them with the typing and flags of its recipe (`build_recipe`: the
published recipes of SA3_CONTRACTS section 3, which need TensorRT 10), and refuses an fp8 build
of a graph that carries no fp8 quantization.

A build takes minutes: progress goes to a callback, a threading.Event cancels it through the
progress monitor (`build_progress`), a persistent timing cache makes rebuilds faster
(`timing_cache`), and the engine appears atomically or not at all. tensorrt is imported inside
`build_engine` only, and anything but TensorRT 10 is refused there with one sentence.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engines.backends.tensorrt.engine_paths import shown_path
from engines.backends.tensorrt.runtime import make_logger
from engines.catalog import tensorrt_version as trt_version
from engines.errors import BackendError, CancelledError
from engines.lazy import lazy_import, real_module
from engines.models.build_plan import BuildSpec, Shape
from engines.models.build_progress import Progress, monitor_class
from engines.models.build_recipe import apply_recipe, onnx_has_fp8, recipe_for
from engines.models.timing_cache import load_timing_cache, serialized_timing_cache

log = logging.getLogger(__name__)
tensorrt = lazy_import("tensorrt")

FP8_MIN_CC = (8, 9)  # FP8 tensor cores arrived with Ada
MAX_LISTED_ERRORS = 3  # parser errors quoted in a BuildError


class BuildError(BackendError):
    """An engine could not be built; the text says what happened and what to do."""


class BuildCancelled(CancelledError):
    """The user cancelled a build; no engine file was written."""

    def __init__(self, message: str = "Build cancelled; no engine file was written.") -> None:
        super().__init__(message)


# ---- building ---------------------------------------------------------------------------------

def build_engine(spec: BuildSpec, *, gpu_cc: tuple[int, int], progress: Progress | None = None,
                 cancel: threading.Event | None = None, timing_cache: Path | None = None) -> Path:
    """Build `spec` into `spec.engine_path` (written atomically) and return that path.

    `progress(phase, step, steps)` is called from TensorRT's threads; `cancel` stops the build
    at its next step (BuildCancelled, no file). `timing_cache` is read before and written back
    after a successful build. Raises BuildError with one actionable sentence otherwise.
    """
    major, minor = (int(part) for part in gpu_cc)
    if spec.precision == "fp8" and (major, minor) < FP8_MIN_CC:
        raise BuildError(
            f"'{spec.label}' is an fp8 engine, which needs FP8 tensor cores (compute capability "
            f"8.9 or newer) but this GPU is {major}.{minor}; build the fp16 engines instead.")
    _check_cancel(cancel)
    if not spec.onnx_path.is_file():
        raise BuildError(f"The ONNX file '{spec.onnx_path}' does not exist; download the ONNX "
                         "files again.")
    recipe = recipe_for(spec.role, spec.precision, spec.engine_path.parent.name)
    if recipe.needs_fp8_graph and onnx_has_fp8(spec.onnx_path) is False:
        raise BuildError(
            f"'{spec.onnx_path.name}' has no fp8 quantization (no fp8 Q/DQ nodes or fp8 weights), "
            f"so it cannot make the fp8 engine '{spec.label}'; download the fp8 ONNX files "
            "again, or build the fp16 engines instead.")
    trt = _import_tensorrt()
    logger = make_logger(trt)
    started = time.monotonic()
    builder = _checked(trt.Builder, logger, what="start the TensorRT builder", logger=logger)
    strong = 1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED)
    network = builder.create_network(strong if recipe.strongly_typed else 0)
    if network is None:
        raise BuildError(f"TensorRT could not create a network{_last_error(logger)}; check the "
                         "TensorRT installation.")
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(str(spec.onnx_path)):
        raise _parse_error(spec, parser, logger)
    if int(network.num_inputs) == 0 or int(network.num_outputs) == 0:
        # TensorRT's parser reads bytes that are no ONNX (an HTML error page, an empty file)
        # as an empty model and says True; the build would then blame VRAM or disk.
        raise BuildError(f"TensorRT could not parse '{spec.onnx_path.name}': it holds no graph "
                         "(not an ONNX file, or an empty one). Download the ONNX file again.")
    inputs = _network_inputs(network)
    _check_profiles(spec, inputs)
    _check_cancel(cancel)

    config = builder.create_builder_config()
    apply_recipe(trt, config, recipe)
    if spec.workspace_bytes is not None:
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(spec.workspace_bytes))
    dynamic = [name for name, shape in inputs.items() if -1 in shape]
    if dynamic:
        profile = builder.create_optimization_profile()
        for name in dynamic:
            low, opt, high = spec.profiles[name]
            try:
                profile.set_shape(name, low, opt, high)
            except (RuntimeError, TypeError) as err:
                raise BuildError(f"TensorRT refused the profile of '{name}' for "
                                 f"'{spec.label}' ({err}); check the build profiles.") from err
        if config.add_optimization_profile(profile) < 0:
            raise BuildError(f"TensorRT refused the optimization profile of '{spec.label}'"
                             f"{_last_error(logger)}; check the build profiles.")
    if timing_cache is not None:
        load_timing_cache(config, Path(timing_cache))
    monitor = monitor_class(trt.IProgressMonitor)(progress, cancel)
    config.progress_monitor = monitor  # keep `monitor` referenced until the build returns

    _check_cancel(cancel)
    mark = logger.error_count
    serialized = builder.build_serialized_network(network, config)
    if monitor.cancelled or (cancel is not None and cancel.is_set()):
        raise BuildCancelled()
    if serialized is None:
        errors = logger.errors_since(mark)
        reason = f" ({errors[-1].strip().rstrip('.')})" if errors else ""
        raise BuildError(f"TensorRT could not build '{spec.label}' from "
                         f"'{spec.onnx_path.name}'{reason}; close other GPU programs, free VRAM "
                         "or disk space, and try again.")
    size = _write_engine(spec.engine_path, serialized)
    if spec.companion is not None:  # the map a branch DiT is driven with lies beside it
        _write_engine(spec.engine_path.with_name(spec.companion.name),
                      spec.companion.read_bytes())
    if timing_cache is not None:
        _save_timing_cache(config, Path(timing_cache))
    _check_plan_header(serialized, str(trt.__version__))
    log.info("Built %s from %s: %s %s, %d profiled input(s), %.1f MiB in %.0f s", spec.label,
             spec.onnx_path.name, spec.precision, recipe.typing, len(dynamic), size / 2**20,
             time.monotonic() - started)
    return spec.engine_path


def _import_tensorrt() -> Any:
    try:
        trt = real_module(tensorrt)
    except ImportError as err:
        raise BuildError(f"TensorRT is not installed ({err}); install it with "
                         f"`{trt_version.install_command()}` to build engines.") from err
    trt_version.require_supported(trt)  # TensorRT 11 has none of the flags the recipes need
    return trt


def _check_plan_header(plan: Any, installed: str) -> None:
    """`models list` reads which TensorRT built an engine from its header, an undocumented
    layout: say so in the log if a plan we just built does not carry our version there."""
    matches = trt_version.header_matches(plan, installed)
    if matches is False:
        log.warning("The engine header does not name TensorRT %s, which built it; `models list` "
                    "may misreport which TensorRT the engines need.", installed)
    elif matches is None:
        log.debug("No readable TensorRT version in the header of the plan just built")


def _check_cancel(cancel: threading.Event | None) -> None:
    if cancel is not None and cancel.is_set():
        raise BuildCancelled()


def _last_error(logger: Any) -> str:
    errors = logger.errors_since(0)
    return f" ({errors[-1].strip().rstrip('.')})" if errors else ""


def _checked(factory: Callable[..., Any], *args: Any, what: str, logger: Any) -> Any:
    try:
        made = factory(*args)
    except Exception as err:  # pybind raises when the C++ factory returns null
        raise BuildError(f"TensorRT could not {what} ({err}); check the NVIDIA driver and the "
                         "CUDA installation.") from err
    if made is None:
        raise BuildError(f"TensorRT could not {what}{_last_error(logger)}; check the NVIDIA "
                         "driver and the CUDA installation.")
    return made


def _parse_error(spec: BuildSpec, parser: Any, logger: Any) -> BuildError:
    quoted = []
    count = int(parser.num_errors)
    for index in range(min(count, MAX_LISTED_ERRORS)):
        quoted.append(_describe_parser_error(parser.get_error(index)))
    if count > MAX_LISTED_ERRORS:
        quoted.append(f"and {count - MAX_LISTED_ERRORS} more")
    if not quoted:
        quoted = [_last_error(logger).strip(" ()") or "no reason was given"]
    return BuildError(
        f"TensorRT could not parse '{spec.onnx_path.name}': {'; '.join(quoted)}. Download the "
        "ONNX file again (with its .onnx.data) or update TensorRT if an operator is unsupported.")


def _describe_parser_error(error: Any) -> str:
    desc = str(error.desc()).strip().rstrip(".")
    node = int(error.node())
    if node < 0:
        return desc
    name = _call(error, "node_name")
    operator = _call(error, "node_operator")
    where = f"node {node}"
    if name:
        where += f" '{name}'"
    if operator:
        where += f" ({operator})"
    return f"{where}: {desc}"


def _call(obj: Any, method: str) -> str:
    """An optional accessor (node_name/node_operator arrived in TensorRT 10.x)."""
    getter = getattr(obj, method, None)
    return str(getter()) if callable(getter) else ""


def _network_inputs(network: Any) -> dict[str, Shape]:
    inputs = {}
    for index in range(int(network.num_inputs)):
        tensor = network.get_input(index)
        dims = tensor.shape
        inputs[str(tensor.name)] = tuple(int(dims[i]) for i in range(len(dims)))
    return inputs


def _fmt(shape: Shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


def _check_profiles(spec: BuildSpec, inputs: dict[str, Shape]) -> None:
    """Every dynamic input has a profile that fits its static dims, and every profile names a
    real input: caught here with names, before TensorRT's terse build failure."""
    source = spec.onnx_path.name
    for name, shape in inputs.items():
        if -1 in shape and name not in spec.profiles:
            raise BuildError(
                f"Input '{name}' of '{source}' has dynamic shape {_fmt(shape)} but the "
                f"{spec.role} build has no profile for it; check that this is the {spec.role} "
                "ONNX file of the SA3 contract.")
    for name, shapes in spec.profiles.items():
        if name not in inputs:
            raise BuildError(
                f"The {spec.role} profile names input '{name}' but '{source}' has no such input "
                f"(it has {', '.join(inputs) or 'none'}); check that this is the {spec.role} "
                "ONNX file of the SA3 contract.")
        network_shape = inputs[name]
        for shape in shapes:
            if len(shape) != len(network_shape) or any(
                want >= 0 and got != want for want, got in zip(network_shape, shape, strict=True)
            ):
                raise BuildError(
                    f"The {spec.role} profile shape {_fmt(shape)} does not fit input '{name}' "
                    f"{_fmt(network_shape)} of '{source}'; check that this is the {spec.role} "
                    "ONNX file of the SA3 contract.")


def _save_timing_cache(config: Any, path: Path) -> None:
    data = serialized_timing_cache(config)
    if data is None:
        return
    try:
        _write_atomic(path, data)
    except OSError as err:  # the engine is built; a lost cache only costs time next build
        log.warning("Could not save the timing cache %s (%s).", path, err)


# ---- writing ----------------------------------------------------------------------------------

def _write_atomic(path: Path, data: memoryview) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; engines are shared, non-secret files
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return data.nbytes


def _write_engine(path: Path, serialized: Any) -> int:
    try:
        return _write_atomic(path, memoryview(serialized))
    except OSError as err:
        raise BuildError(f"Could not write the engine '{shown_path(path)}' "
                         f"({err.strerror or err}); free disk space or check write access to "
                         f"{path.parent}.") from err
