"""How long a plan will take, for --dry-run, and where the figure comes from (said with it):

- "measured": the takes an earlier run rendered into the same folder (their wall time per second
  of audio, per model), the best guess there is for this machine and these models;
- "per-model constant": a fixed cost per take, per sampler step and per second of audio, known
  only for the demo model (measured on a 2-core CPU; a faster machine beats it);
- otherwise no estimate, and the plan says so: the real models' speed depends too much on the
  GPU and the backend for a constant to mean anything.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from engines.audio_io import audio_info
from engines.batch.plan import DONE, PlannedTake
from engines.catalog import get_model_set
from engines.request import default_seconds

# model -> (ms per take, ms per sampler step, ms per second of audio), rough.
MODEL_COST_MS = {"demo": (60.0, 8.0, 10.0)}


@dataclass(frozen=True)
class Estimate:
    audio_seconds: float
    seconds: float | None  # wall time, None when there is nothing to base it on
    source: str  # which method, in words


def take_seconds(take: PlannedTake) -> float:
    """The audio length a take will have (the init file's, else its model's default length,
    when the row gives none)."""
    spec = take.spec
    if spec.seconds is not None:
        return spec.seconds
    if spec.init_audio is not None:
        info = audio_info(spec.init_audio)
        return min(info.frames / info.samplerate, get_model_set(spec.model).max_seconds)
    return default_seconds(spec.model)


def estimate(takes: list[PlannedTake], earlier: list[dict[str, Any]], jobs: int) -> Estimate:
    lengths = [take_seconds(take) for take in takes]
    total_audio = sum(lengths)
    if not takes:
        return Estimate(0.0, 0.0, "nothing to render")
    measured = _measured_ms_per_second(earlier)
    if all(take.spec.model in measured for take in takes):
        ms = sum(measured[t.spec.model] * s for t, s in zip(takes, lengths, strict=True))
        return Estimate(total_audio, ms / 1e3 / jobs,
                        f"measured: the takes rendered into this folder before, {jobs} "
                        f"worker(s)")
    if all(take.spec.model in MODEL_COST_MS for take in takes):
        ms = sum(_constant_ms(t, s) for t, s in zip(takes, lengths, strict=True))
        return Estimate(total_audio, ms / 1e3 / jobs,
                        f"per-model constant (demo on a 2-core CPU), {jobs} worker(s)")
    unknown = sorted({t.spec.model for t in takes} - set(measured) - set(MODEL_COST_MS))
    return Estimate(total_audio, None,
                    f"no estimate for {', '.join(unknown)}: there is no constant for it; "
                    "after a first run into this folder, dry runs use its timings")


def _constant_ms(take: PlannedTake, seconds: float) -> float:
    per_take, per_step, per_second = MODEL_COST_MS[take.spec.model]
    passes = 2 if take.spec.cfg != 1.0 else 1  # guidance runs the model twice per step
    renders = 2 if take.finishing is not None and take.finishing.loop else 1  # the seam
    return renders * (per_take + per_step * take.spec.steps * passes + per_second * seconds)


def _measured_ms_per_second(earlier: list[dict[str, Any]]) -> dict[str, float]:
    spent: dict[str, float] = defaultdict(float)
    audio: dict[str, float] = defaultdict(float)
    for entry in earlier:
        timings = entry.get("timings_ms")
        wall = timings.get("wall") if isinstance(timings, dict) else None
        seconds, model = entry.get("seconds"), entry.get("model")
        if (entry.get("status") in DONE and isinstance(model, str) and _positive(wall)
                and _positive(seconds)):
            spent[model] += float(wall)
            audio[model] += float(seconds)
    return {model: spent[model] / audio[model] for model in spent}


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
