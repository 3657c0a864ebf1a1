"""Size of the Linux bundle and its window-open time against the same code run from a venv.

    python packaging/measure_bundle.py [--runs 5] [--bundle dist/sa3-studio]

Window open = from just before the process is started (this script's clock) to the first frame
of the main window painted (packaging/open_probe.py prints when): interpreter or bootloader
start-up and imports included. Runs alternate (bundle, venv, bundle, ...) so a busy machine
slows both alike; the first run of each is a warm-up (page cache, .pyc files) and not counted.
Prints the figures; add `| tee bench/results/bundle-<date>.log` to keep them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def open_once(command: list[str], home: Path, extra_env: dict[str, str]) -> tuple[float, dict]:
    env = {**os.environ, "SA3_STUDIO_HOME": str(home), "QT_QPA_PLATFORM": "offscreen",
           "SA3_STUDIO_OPEN_PROBE": "1", **extra_env}
    started = time.time()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"{command[0]} did not open the window:\n{done.stderr[-2000:]}")
    report = json.loads(lines[-1])
    return report["shown_at"] - started, report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--bundle", type=Path, default=REPO / "dist" / "sa3-studio")
    args = parser.parse_args()
    executable = args.bundle / "sa3-studio"
    archives = sorted(args.bundle.parent.glob("sa3-studio-*-linux-*.tar.gz"))
    print(f"# {time.strftime('%Y-%m-%d')}, {platform.node()}: {os.cpu_count()} cores, "
          f"{platform.platform()}, Python {platform.python_version()}")
    print(f"bundle folder: {folder_bytes(args.bundle) / 1e6:.0f} MB ({args.bundle})")
    for archive in archives:
        print(f"tar.gz: {archive.stat().st_size / 1e6:.0f} MB ({archive.name})")
    internal = args.bundle / "_internal"
    largest = sorted(((folder_bytes(p) if p.is_dir() else p.stat().st_size), p.name)
                     for p in internal.iterdir())[-8:]
    print("largest parts: " + ", ".join(f"{name} {size / 1e6:.0f} MB"
                                       for size, name in reversed(largest)))
    venv = [sys.executable, str(REPO / "packaging" / "open_probe.py")]
    times: dict[str, list[float]] = {"bundle": [], "venv": []}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        for run in range(args.runs + 1):
            for name, command, env in (("bundle", [str(executable)], {}),
                                       ("venv", venv, {"PYTHONPATH": str(REPO)})):
                seconds, report = open_once(command, home, env)
                assert report["stylesheet_chars"] > 0 and report["icon_renders"], report
                if run:
                    times[name].append(seconds)
    for name, values in times.items():
        print(f"window open from the {name}: median {statistics.median(values):.2f} s, "
              f"min {min(values):.2f} s, max {max(values):.2f} s over {len(values)} runs "
              f"(theme and icons loaded)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
