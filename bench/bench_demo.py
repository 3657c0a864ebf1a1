"""Per-stage timings of demo generations on this machine (CPU, ONNX Runtime).

    python bench/bench_demo.py [--repeats N] [--steps N]

Prints one line per clip length: median ms per stage over the repeats (warm engines), plus the
cold first generation (building the demo set if needed and loading the sessions). Goal from the
engine-core issue: a 5 s demo clip in under 1 s wall time on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engines.catalog import Catalog  # noqa: E402
from engines.generator import Generator  # noqa: E402
from engines.request import GenerationRequest  # noqa: E402

MODES = {
    "t2a": {},
    "a2a": {"init_noise_level": 0.6},
    "inpaint": {},
    "cfg": {"negative_prompt": "wind", "cfg": 3.0},
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--models-dir", type=Path, default=None)
    args = parser.parse_args()
    models = args.models_dir or Path(tempfile.mkdtemp(prefix="sa3-bench-"))
    print(f"machine: {os.cpu_count()} cores; models in {models}; {args.steps} steps; "
          f"median of {args.repeats} warm runs")

    start = time.perf_counter()
    generator = Generator(Catalog(models))
    first = generator.generate(GenerationRequest(prompt="coin pickup", seconds=5.0, seed=1,
                                                 steps=args.steps, backend="onnxruntime"))
    cold = (time.perf_counter() - start) * 1e3
    print(f"cold first 5 s clip (build demo set + load engines + generate): {cold:.0f} ms "
          f"(generation itself {first.timings_ms['total']:.0f} ms)")

    for mode, extra in MODES.items():
        for seconds in (1.0, 5.0, 30.0):
            walls: list[float] = []
            stages: dict[str, list[float]] = {}
            if mode in ("a2a", "inpaint"):
                take = generator.generate(GenerationRequest(
                    prompt="footsteps", seconds=seconds, seed=99, backend="onnxruntime"))
                extra = {**extra, "init_audio": take.pcm.astype("float32") / 32767}
                if mode == "inpaint":
                    extra["inpaint_spans"] = [(0.25 * seconds, 0.5 * seconds)]
            for i in range(args.repeats):
                request = GenerationRequest(prompt="rain and thunder, distant", seconds=seconds,
                                            seed=i, steps=args.steps, backend="onnxruntime",
                                            **extra)
                t0 = time.perf_counter()
                result = generator.generate(request)
                walls.append((time.perf_counter() - t0) * 1e3)
                for stage, ms in result.timings_ms.items():
                    stages.setdefault(stage, []).append(ms)
            wall = statistics.median(walls)
            parts = ", ".join(f"{k} {statistics.median(v):.0f}" for k, v in stages.items()
                              if k != "total")
            print(f"{mode:7s} {seconds:5.1f} s clip: wall {wall:6.0f} ms | {parts} ms | "
                  f"{seconds * 1e3 / wall:6.1f}x realtime")
    generator.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
