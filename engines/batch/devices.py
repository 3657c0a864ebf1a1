"""How many worker processes a batch gets and on which GPUs, and which engine combinations of
a list can run here at all (checked once, before any take, so a missing model fails its takes
with the reason instead of loading nothing in every worker).

GPU counting goes through engines.gpu's driver probe, so it is lazy (no cuda-python import
until asked) and the tests' fake driver answers it too.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from engines import gpu
from engines.errors import StudioError

if TYPE_CHECKING:
    from engines.batch.items import RowSpec
    from engines.catalog import Catalog


def visible_gpu_count() -> int:
    """CUDA devices this process may use (0 without a GPU, a driver or cuda-python)."""
    if gpu.probe_gpu() is None:
        return 0
    driver = gpu._driver_module()  # probe_gpu has initialised it
    try:
        return max(1, int(gpu._checked(driver, driver.cuDeviceGetCount())))
    except (RuntimeError, AttributeError, TypeError, ValueError):
        return 1  # probe_gpu found one; how many more is unknown


def cuda_devices_per_worker(jobs: int, gpu_count: int) -> list[str | None]:
    """CUDA_VISIBLE_DEVICES for each worker: the visible GPUs in turn (ids as this process
    sees them, so an outer CUDA_VISIBLE_DEVICES is honoured); None leaves it as it is."""
    if gpu_count < 1:
        return [None]
    outer = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [part.strip() for part in outer.split(",")] if outer else []
    ids = [i for i in ids if i][:gpu_count] or [str(i) for i in range(gpu_count)]
    return [ids[slot % len(ids)] for slot in range(jobs)]


def uses_tensorrt(catalog: Catalog, specs: list[RowSpec]) -> bool:
    """Whether any of these rows would run on TensorRT."""
    seen = set()
    for spec in specs:
        key = (spec.model, spec.decoder, spec.precision, spec.backend, spec.codec_tier)
        if key in seen:
            continue
        seen.add(key)
        try:
            if catalog.resolve(*key[:4], codec_tier=spec.codec_tier).backend == "tensorrt":
                return True
        except StudioError:
            continue  # the take reports it when it runs
    return False


def unavailable(catalog: Catalog, specs: list[RowSpec]) -> dict[tuple, str]:
    """For each engine combination these rows need that cannot run here, the reason. Also
    builds the demo models once, here, rather than in several workers at the same time."""
    reasons: dict[tuple, str] = {}
    checked: set[tuple] = set()
    for spec in specs:
        key = engine_key(spec)
        if key in checked:
            continue
        checked.add(key)
        try:
            catalog.require(spec.model, spec.decoder, spec.precision, spec.backend,
                            need_encoder=spec.init_audio is not None, codec_tier=spec.codec_tier)
        except StudioError as exc:
            reasons[key] = str(exc)
    return reasons


def engine_key(spec: RowSpec) -> tuple:
    return (spec.model, spec.decoder, spec.precision, spec.backend, spec.init_audio is not None,
            spec.codec_tier)
