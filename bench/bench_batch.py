"""Batch rendering against one process per clip, and the batch's memory over long lists.

    python bench/bench_batch.py [--clips 100] [--seconds 1] [--steps 8] [--jobs 1 [N ...]]
                                [--thousand] [--root DIR]

1. `batch` renders N one-second demo clips from a list in one process; N `generate` processes
   render the same clips one by one (same prompts, seeds and steps; both keep every take in the
   library, as they do by default). Prints wall times, clips per second and the speed-up
   (goal: >= 5x), and how much of the batch's wall time was engine time; once per --jobs value.
2. Peak RSS of the batch process (os.wait4's rusage of that child) at 100 items and, with
   --thousand, at 1,000 items: it should stay flat, since nothing of a take is kept after it is
   written.

The demo models are built in a fresh models folder before anything is timed; the data folder
(library, logs) is a fresh one too, so nothing of the user's is touched.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BATCH = "import sys; from engines.cli.batch import main; sys.exit(main(sys.argv[1:]))"
GOAL_SPEEDUP = 5.0
SOUNDS = ["door creak", "footstep on gravel", "ui click", "coin pickup", "laser shot",
          "glass break", "wind gust", "metal hit", "water drop", "fire crackle"]


def write_list(path: Path, count: int, seconds: float, steps: int) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["name", "prompt", "seconds", "seed", "steps"])
        for i in range(count):
            writer.writerow([f"clip{i:04}", f"{SOUNDS[i % len(SOUNDS)]} {i}", seconds, i,
                             steps])
    return path


def run_child(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(wall seconds, peak RSS in MB, exit code) of one child process."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        sys.stderr.write(process.stderr.read().decode("utf-8", "replace"))
    process.stderr.close()
    return wall, usage.ru_maxrss / 1024.0, process.returncode  # ru_maxrss is in KiB on Linux


def run_batch(list_path: Path, out: Path, models: Path, env: dict[str, str],
              jobs: int) -> tuple[float, float, dict]:
    argv = [sys.executable, "-c", BATCH, str(list_path), "--out", str(out), "--models-dir",
            str(models), "--jobs", str(jobs)]
    wall, rss, code = run_child(argv, env)
    if code != 0:
        raise SystemExit(f"batch exited {code}")
    return wall, rss, json.loads((out / "manifest.json").read_text(encoding="utf-8"))


def run_generates(count: int, seconds: float, steps: int, out: Path, models: Path,
                  env: dict[str, str]) -> float:
    out.mkdir()
    started = time.perf_counter()
    for i in range(count):
        argv = [sys.executable, "main.py", "generate", "--prompt", f"{SOUNDS[i % len(SOUNDS)]} "
                f"{i}", "--seconds", str(seconds), "--seed", str(i), "--steps", str(steps),
                "--models-dir", str(models), "--out", str(out / f"clip{i:04}.wav")]
        _, _, code = run_child(argv, env)
        if code != 0:
            raise SystemExit(f"generate {i} exited {code}")
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1],
                        help="batch worker processes (several values: a batch run each)")
    parser.add_argument("--thousand", action="store_true",
                        help="also time a 1,000-item batch for its peak RSS (minutes)")
    parser.add_argument("--root", type=Path, help="work folder (default: a temporary one)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-batch-") as temp:
        root = args.root or Path(temp)
        models, home = root / "models", root / "home"
        models.mkdir(parents=True, exist_ok=True)
        home.mkdir(exist_ok=True)
        env = {**os.environ, "SA3_STUDIO_HOME": str(home)}
        warm = write_list(root / "warm.csv", 1, args.seconds, args.steps)
        run_batch(warm, root / "warm", models, env, 1)  # builds the demo set; not timed

        clips = write_list(root / "clips.csv", args.clips, args.seconds, args.steps)
        batches = []
        for jobs in args.jobs:
            wall, rss, data = run_batch(clips, root / f"batch-{jobs}", models, env, jobs)
            engine_s = sum(item["timings_ms"].get("total", 0.0) for item in data["items"]) / 1e3
            batches.append((jobs, wall, rss, engine_s))
        processes_s = run_generates(args.clips, args.seconds, args.steps, root / "generate",
                                    models, env)
        print(f"{args.clips} demo clips of {args.seconds:g} s, {args.steps} steps, on "
              f"{os.cpu_count()} CPU(s):")
        print(f"  {args.clips} generate processes: {processes_s:7.1f} s wall, "
              f"{args.clips / processes_s:6.2f} clips/s")
        for jobs, wall, _, engine_s in batches:
            speedup = processes_s / wall
            verdict = "meets" if speedup >= GOAL_SPEEDUP else "misses"
            print(f"  batch --jobs {jobs}: {wall:7.1f} s wall, {args.clips / wall:6.2f} clips/s, "
                  f"speed-up {speedup:.1f}x ({verdict} the goal of >= {GOAL_SPEEDUP:g}x); "
                  f"engine time {engine_s:.1f} s ({engine_s / wall:.0%} of the wall time)")
        rss_small = batches[0][2]
        jobs = batches[0][0]
        print(f"peak RSS of the batch process (--jobs {jobs}): {args.clips} items "
              f"{rss_small:.0f} MB", end="")
        if args.thousand:
            big = write_list(root / "big.csv", 1000, args.seconds, args.steps)
            big_wall, rss_big, _ = run_batch(big, root / "big", models, env, jobs)
            print(f"; 1000 items {rss_big:.0f} MB ({rss_big / rss_small - 1:+.1%}, "
                  f"{1000 / big_wall:.2f} clips/s)")
        else:
            print(" (add --thousand for the 1,000-item figure)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
