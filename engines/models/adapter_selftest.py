"""The self-test of adapters on this graphics card: the demo set and its branch DiT built into
TensorRT engines here, then takes with a demo adapter: a strength change must be one replay of
the graph captured before it (a buffer write, nothing captured again), must change the audio,
and strength 0 must give the plain DiT's take.

`python main.py models selftest --adapters` runs it; it words the figures it returns.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engines import demo
from engines.adapters.choice import AdapterChoice
from engines.backends.tensorrt import backend as trt_backend
from engines.catalog import EngineFiles
from engines.demo import demo_adapters
from engines.errors import BackendError
from engines.models import branch_build, build_plan, builder
from engines.request import GenerationRequest, ValidatedRequest, validate_request

if TYPE_CHECKING:
    from engines.catalog import Catalog

PROMPT = "self test: coin pickup"
SECONDS = 2.0
MAX_SECONDS = 380.0
ZERO_TOLERANCE = 1e-4  # of the latents' scale: the branch graph at zero strength vs the plain one


def run_adapter_selftest(models: Path, catalog: Catalog,
                         on_build: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Build the demo set and its branch DiT for `catalog.gpu` under `models`, then generate
    without adapters, with the demo adapter at 1.0 and 0.5 (the second must be a replay) and at
    0 (must equal the plain take). Returns the figures; raises StudioError on failure."""
    gpu = catalog.gpu
    demo.ensure_demo_models(models)
    specs = [*build_plan.plan_builds(models, ["demo"], gpu.sm, "fp32"),
             *branch_build.plan_branch(models, ["demo"], gpu.sm)]
    for spec in specs:
        if on_build is not None:
            on_build(spec.engine_path.name)
        builder.build_engine(spec, gpu_cc=(gpu.major, gpu.minor))
    plain = {spec.role: spec.engine_path for spec in specs if spec.companion is None}
    branch = next(spec for spec in specs if spec.companion is not None)
    folder = demo.demo_dir(models)
    files = EngineFiles(format="trt", text_encoder=plain["text"],
                        tokenizer=folder / demo.TOKENIZER_FILE, dit=plain["dit"],
                        decoder=plain["decoder"], encoder=plain.get("encoder"),
                        codec_tier="canonical", branch_dit=branch.engine_path,
                        branch_map=branch.engine_path.with_name(branch.companion.name))
    adapter = demo_adapters.demo_adapter_path(demo_adapters.BRIGHT)
    backend = trt_backend.TensorRTBackend(files, gpu_sm=gpu.sm)
    try:
        without = backend.generate(_request(()))
        full = backend.generate(_request((AdapterChoice(adapter, 1.0),)))
        half = backend.generate(_request((AdapterChoice(adapter, 0.5),)))
        zero = backend.generate(_request((AdapterChoice(adapter, 0.0),)))
    finally:
        backend.close()
    if half.details.get("path") != "replay":
        raise BackendError("The self-test's strength change did not run as one CUDA-graph "
                           "replay (" + "; ".join(half.warnings or ["no reason given"]) + ").")
    if np.array_equal(half.pcm, full.pcm):
        raise BackendError("The self-test's strength change did not change the audio, so the "
                           "adapter operands did not reach the branch engine.")
    scale = float(np.max(np.abs(without.latents))) or 1.0
    gap = float(np.max(np.abs(zero.latents - without.latents))) / scale
    if gap > ZERO_TOLERANCE:
        raise BackendError(f"The branch engine at strength 0 differs from the plain DiT by "
                           f"{gap:.2g} of the latents' scale; rebuild the demo engines.")
    return {"adapter_first_ms": round(full.timings_ms["total"], 1),
            "adapter_replay_ms": round(half.timings_ms["total"], 1),
            "zero_strength_gap": gap, "path": half.details["path"]}


def _request(adapters: tuple[AdapterChoice, ...]) -> ValidatedRequest:
    return validate_request(GenerationRequest(prompt=PROMPT, seed=1, seconds=SECONDS,
                                              model="demo", adapters=adapters), MAX_SECONDS)


__all__ = ["run_adapter_selftest"]
