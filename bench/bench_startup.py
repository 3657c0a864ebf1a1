"""Start-up where a designer waits (issue 32), each row as a ratio against its reference, all in
one run: whole processes, several runs each (interleaved with their reference), medians.

    python bench/bench_startup.py [--runs 5] [--no-save]

Rows:
  generate     `main.py generate --prompt coin --seconds 2 --seed 1 --no-library --out x.wav`
               on the installed demo set, against the import floor
               `python -c "import numpy, onnxruntime, soundfile, sqlite3"`; goal <= 3x.
  window       the window's first paint (build_main_window, show, processEvents), from the
               process's start, against a bare QMainWindow + `import pyqtgraph`; goal <= 1.5x.
  first take   the first take in a new data folder, in the window (the demo set is built then,
               in the background from the first paint): the longest gap between ticks of a
               10 ms QTimer, from the first paint through what the window loads after it, the
               click on Generate half a second later, until the take is in the list and one
               more second; goal <= 100 ms.
Peak RSS is each child's own (os.wait4's rusage). Writes bench/results/startup-<date>.json and
prints a table. The children are this file run with --child KIND.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
FLOOR = "import numpy, onnxruntime, soundfile, sqlite3"
GENERATE = ["generate", "--prompt", "coin", "--seconds", "2", "--seed", "1", "--no-library"]
GOALS = {"generate": 3.0, "window": 1.5, "first take": 100.0}
TICK_MS = 10
TAIL_S = 1.0
CLICK_AFTER_S = 0.5  # first take: Generate is clicked this long after the first paint


def run_child(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(seconds from start to the end, or to the child's "ready <time.time()>" line; its own
    peak RSS in MB; its stdout): a whole process, timed from outside. Output goes to files and
    the child is reaped with os.wait4, which gives that child's own resource usage."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.time()
        process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=out, stderr=err)
        _pid, status, usage = os.wait4(process.pid, 0)
        end = time.time()
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = out.read()
        if process.returncode != 0:
            raise SystemExit(f"{' '.join(argv[:4])}... failed ({process.returncode}):\n"
                             f"{err.read()[-3000:]}")
    for line in text.splitlines():
        if line.startswith("ready "):
            end = float(line.split()[1])
    return end - start, usage.ru_maxrss / 1024, text


def median_row(name: str, measured: list[tuple[float, float]],
               reference: list[tuple[float, float]]) -> dict:
    times = [m[0] for m in measured]
    ref = [r[0] for r in reference]
    return {"row": name, "median_s": statistics.median(times), "runs_s": times,
            "peak_rss_mb": max(m[1] for m in measured),
            "reference_median_s": statistics.median(ref), "reference_runs_s": ref,
            "reference_peak_rss_mb": max(r[1] for r in reference),
            "ratio": statistics.median(times) / statistics.median(ref), "goal": GOALS[name]}


def bench(runs: int) -> dict:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(REPO)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed app has its .pyc files
    python = sys.executable
    home = Path(tempfile.mkdtemp(prefix="sa3-startup-"))
    take_env = {**env, "SA3_STUDIO_HOME": str(home)}
    run_child([python, "main.py", *GENERATE, "--out", str(home / "warm.wav")], take_env)
    rows = []
    floor, generate = [], []
    window, bare = [], []
    for _ in range(runs):  # interleaved: a busy moment of the machine hits both sides
        floor.append(run_child([python, "-c", FLOOR], env)[:2])
        generate.append(run_child([python, "main.py", *GENERATE, "--out",
                                   str(home / "x.wav")], take_env)[:2])
        bare.append(run_child([python, __file__, "--child", "bare"], take_env)[:2])
        window.append(run_child([python, __file__, "--child", "window"], take_env)[:2])
    rows.append(median_row("generate", generate, floor))
    rows.append(median_row("window", window, bare))
    stalls, rss = [], []
    for _ in range(runs):
        fresh = {**env, "SA3_STUDIO_HOME": tempfile.mkdtemp(prefix="sa3-first-take-")}
        _seconds, peak, out = run_child([python, __file__, "--child", "first-take"], fresh)
        stalls.append(json.loads(out.strip().splitlines()[-1])["longest_stall_ms"])
        rss.append(peak)
    rows.append({"row": "first take", "median_ms": statistics.median(stalls),
                 "runs_ms": stalls, "worst_ms": max(stalls), "peak_rss_mb": max(rss),
                 "goal": GOALS["first take"]})
    return {"date": datetime.date.today().isoformat(), "cpus": os.cpu_count(),
            "load": os.getloadavg(), "runs": runs, "python": sys.version.split()[0],
            "rows": rows}


def print_table(result: dict) -> None:
    print(f"{'row':<12} {'median':>9} {'reference':>10} {'ratio':>6} {'goal':>7} "
          f"{'peak RSS':>9}  ok")
    for row in result["rows"]:
        if row["row"] == "first take":
            ok = row["worst_ms"] <= row["goal"]
            print(f"{row['row']:<12} {row['median_ms']:>7.0f}ms {'-':>10} {'-':>6} "
                  f"{row['goal']:>5.0f}ms {row['peak_rss_mb']:>7.0f}MB  {'yes' if ok else 'NO'}"
                  f"  (longest stall; worst run {row['worst_ms']:.0f} ms)")
            continue
        ok = row["ratio"] <= row["goal"]
        print(f"{row['row']:<12} {row['median_s']:>8.2f}s {row['reference_median_s']:>9.2f}s "
              f"{row['ratio']:>5.2f}x {row['goal']:>6.1f}x {row['peak_rss_mb']:>7.0f}MB  "
              f"{'yes' if ok else 'NO'}  (reference {row['reference_peak_rss_mb']:.0f} MB)")


# ------------------------------------------------------------------ the children


def child_paint(kind: str) -> None:
    """Build the window (or the bare reference), show it, process events; print the time."""
    from PySide6.QtWidgets import QApplication, QMainWindow

    app = QApplication([])
    if kind == "bare":
        import pyqtgraph  # noqa: F401 - the reference: Qt plus the plotting library

        window = QMainWindow()
    else:
        from app import build_main_window

        window = build_main_window()
    window.show()
    app.processEvents()
    print(f"ready {time.time()!r}", flush=True)
    if kind != "bare":
        window.studio.shutdown()


def child_first_take() -> None:
    """A new data folder: open the window, click Generate, record the event loop's gaps."""
    sys.path.insert(0, str(REPO / "bench"))
    from bench_gui_stall import NullStream, open_window, wait
    from PySide6.QtCore import QElapsedTimer, Qt, QTimer

    app, window, _open_ms = open_window()  # shown and painted once
    takes = window.findChild(object, "takesList")
    gaps: list[float] = []
    clock = QElapsedTimer()
    last = [0.0]

    def tick() -> None:
        now = clock.nsecsElapsed() / 1e6
        gaps.append(now - last[0])
        last[0] = now

    timer = QTimer()
    timer.setTimerType(Qt.TimerType.PreciseTimer)
    timer.setInterval(TICK_MS)
    timer.timeout.connect(tick)
    # from the first paint: what the window loads after it (app.shell.after_paint) counts too
    clock.start()
    timer.start()
    wait(app, lambda: False, CLICK_AFTER_S)  # a designer types a prompt meanwhile
    window.findChild(object, "promptEdit").setPlainText("coin")
    window.findChild(object, "secondsSpin").setValue(2.0)
    window.findChild(object, "generateButton").click()
    done = wait(app, lambda: takes.count() > 0 and not window.studio.gpu.running, 300)
    wait(app, lambda: False, TAIL_S)
    timer.stop()
    window.studio.shutdown()
    assert NullStream  # the window's player pulls blocks in real time (bench_gui_stall)
    if not done:
        raise SystemExit("the first take never arrived")
    print(json.dumps({"longest_stall_ms": max(gaps), "ticks": len(gaps)}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-save", action="store_true", help="print only")
    parser.add_argument("--child", choices=["bare", "window", "first-take"],
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "first-take":
        child_first_take()
        return 0
    if args.child:
        child_paint(args.child)
        return 0
    result = bench(args.runs)
    print_table(result)
    if not args.no_save:
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / f"startup-{result['date'].replace('-', '')}.json"
        path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(f"written {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
