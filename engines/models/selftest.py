"""The self-test of a graphics card: the demo set built into TensorRT engines for this GPU, and
two takes through the captured path, the second of which must be one CUDA-graph replay.

Both front ends run it (`python main.py models selftest`, the Models window's Self-test button);
each checks first that the machine has an NVIDIA GPU and a usable TensorRT, and words the
figures it returns.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engines import demo
from engines.backends.tensorrt import backend as trt_backend
from engines.catalog import EngineFiles
from engines.errors import BackendError
from engines.models import build_plan, builder
from engines.request import GenerationRequest, ValidatedRequest, validate_request

if TYPE_CHECKING:
    from engines.catalog import Catalog

PROMPT = "self test: coin pickup"
SECONDS = 2.0
MAX_SECONDS = 380.0  # the length the requests are validated against


def run_selftest(models: Path, catalog: Catalog,
                 on_build: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Build the demo set into engines for `catalog.gpu` under `models` and generate twice.
    `on_build(file name)` is told as each engine starts building. Returns the figures:
    build_s, first_ms, replay_ms and path ("replay"); raises StudioError on failure
    (BackendError when the second take was not a replay)."""
    gpu = catalog.gpu
    demo.ensure_demo_models(models)
    specs = build_plan.plan_builds(models, ["demo"], gpu.sm, "fp32")
    start = time.perf_counter()
    for spec in specs:
        if on_build is not None:
            on_build(spec.engine_path.name)
        builder.build_engine(spec, gpu_cc=(gpu.major, gpu.minor))
    figures: dict[str, Any] = {"build_s": round(time.perf_counter() - start, 2)}
    by_role = {spec.role: spec.engine_path for spec in specs}
    folder = demo.demo_dir(models)
    files = EngineFiles(format="trt", text_encoder=by_role["text"],
                        tokenizer=folder / demo.TOKENIZER_FILE, dit=by_role["dit"],
                        decoder=by_role["decoder"], encoder=by_role.get("encoder"),
                        codec_tier="canonical", jit_plugin=False)
    backend = trt_backend.TensorRTBackend(files, gpu_sm=gpu.sm)
    try:
        first = backend.generate(_request(seed=1))
        second = backend.generate(_request(seed=2))
    finally:
        backend.close()
    if second.details.get("path") != "replay":
        raise BackendError("The self-test generation did not run as one CUDA-graph replay ("
                           + "; ".join(second.warnings or ["no reason given"]) + ").")
    figures.update(first_ms=round(first.timings_ms["total"], 1),
                   replay_ms=round(second.timings_ms["total"], 1), path=second.details["path"])
    return figures


def _request(seed: int) -> ValidatedRequest:
    return validate_request(GenerationRequest(prompt=PROMPT, seed=seed, seconds=SECONDS,
                                              model="demo"), MAX_SECONDS)


__all__ = ["run_selftest"]
