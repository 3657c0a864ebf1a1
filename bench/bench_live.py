"""Live audition through the real window (issue 23): scripted typing and knob sweeps, each change
measured to the first sample heard.

    QT_QPA_PLATFORM=offscreen python bench/bench_live.py [--prompts 10] [--debounce-ms 150,200,250]

The real window on the demo set, 2 s clips. 10 prompts are typed into the prompt box with QTest
key clicks at about 8 characters a second (gaps drawn from a gamma distribution: typists are
regular inside words, with longer gaps now and then), each followed by knob sweeps (CFG dragged
through five values 40 ms apart, steps clicked down and up with pauses). Every prompt is typed
once under each condition - each typing debounce asked for, and live off (the stalls of the
machine and the window without live renders) - the conditions rotated from prompt to prompt,
so that other agents' load on this shared machine falls on all of them alike. There is no sound
card here: the player gets a null output stream whose thread pulls blocks at the real rate, as
PortAudio would, and its callback records when the first block of each render was played
(Player.first_sample_at) - that is "heard".

Printed for each debounce: changes, and what became of each (superseded before it started,
rendered and dropped as stale, played) for typing and for knobs; p50/p95 from the end of the
debounce to the first sample heard and from the last keystroke or knob change; where the time
goes (waiting for the render in flight, rendering, reaching the GUI thread, reaching the
speakers); the longest GUI stall (a 5 ms precise QTimer heartbeat, as bench/bench_gui_stall.py)
with the GUI thread's own CPU time in it (the rest it waited for a core or the GIL); and the
most renders ever in flight at once (counted in the Generator's generate). Goals on this 2-core
machine: p95 debounce end -> first sample <= 120 ms, p95 last keystroke -> first sample <= 400
ms, longest stall < 50 ms, never more than one render in flight. The load average is printed
before and after.

Then (issue 35) a strength change heard live: the two demo adapters in the Adapters panel and
--strength-gestures slider gestures, each measured from the moment the slider stops to the
first sample of the render at that strength (bench/live_strength.py); goal p95 <= 150 ms.
--strength-only measures that alone.

Results go to bench/results/live-YYYYMMDD.log and .json unless --no-record.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from bench_gui_stall import LONG_EVENTS, GapRecorder, NullStream, timed_application  # noqa: E402
from live_strength import measure_strength  # noqa: E402
from PySide6.QtCore import QEventLoop, Qt, QTimer  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from app.common.gpu_service import make_generator  # noqa: E402
from app.common.playback import Player  # noqa: E402
from app.shell.main_window import MainWindow  # noqa: E402
from app.shell.studio import Studio  # noqa: E402

RESULTS = BENCH / "results"
SECONDS = 2.0
PROMPTS = ["rain on a tin roof", "laser sweep, rising", "glass shatter, close",
           "footsteps on gravel", "distant thunder rumble", "coin pickup, bright",
           "wooden door creak", "sci-fi door whoosh", "campfire crackle", "heavy metal impact"]
CHARS_PER_S = 8.0
GAP_SHAPE = 4.0  # gamma shape of the gaps between keys (coefficient of variation 0.5)
GOAL_SUBMIT_P95_MS = 120.0
GOAL_KEYSTROKE_P95_MS = 400.0
GOAL_STALL_MS = 50.0


class CountingGenerator:
    """The window's Generator, counting the renders under way at once."""

    def __init__(self, real) -> None:
        self._real = real
        self._lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0
        self.renders = 0

    def generate(self, *args, **kwargs):
        with self._lock:
            self.in_flight += 1
            self.renders += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            return self._real.generate(*args, **kwargs)
        finally:
            with self._lock:
                self.in_flight -= 1

    def __getattr__(self, name):
        return getattr(self._real, name)


class BusyGapRecorder(GapRecorder):
    """GapRecorder that also notes the GUI thread's own CPU time in each gap: a long gap with
    little CPU was waiting (for a core taken by other processes, or for the GIL), not working."""

    def __init__(self) -> None:
        super().__init__()
        self.cpu_ms: list[float] = []
        self.times: list[float] = []  # perf_counter at each tick
        self._cpu = time.thread_time()

    def _tick(self) -> None:
        now = time.thread_time()
        self.cpu_ms.append((now - self._cpu) * 1e3)
        self.times.append(time.perf_counter())
        self._cpu = now
        super()._tick()

    def start(self) -> None:
        self.cpu_ms.clear()
        self.times.clear()
        self._cpu = time.thread_time()
        super().start()


class ChangeLog:
    """Every change the window submitted (serial -> when the user made it) and what became of
    it: superseded (never started), dropped (went stale while it ran), played or failed."""

    def __init__(self, live, worker) -> None:
        self.changed_at: dict[int, float] = {}
        self.fate: dict[int, str] = {}
        submit = live.scheduler.submit

        def logged(change, changed_at=None):
            serial = submit(change, changed_at)
            self.changed_at[serial] = changed_at
            return serial

        live.scheduler.submit = logged
        worker.progress.connect(self._outcome)  # direct: on the worker thread

    def _outcome(self, progress) -> None:
        outcome = progress.value
        if progress.key.kind == "live" and hasattr(outcome, "job"):
            self.fate[outcome.job.serial] = outcome.kind

    def clear(self) -> None:
        self.changed_at.clear()
        self.fate.clear()


def idle(seconds: float) -> None:
    """Run the event loop for `seconds` (timers, queued signals, the heartbeat)."""
    loop = QEventLoop()
    timer = QTimer()
    timer.setSingleShot(True)
    timer.setTimerType(Qt.TimerType.PreciseTimer)
    timer.timeout.connect(loop.quit)
    timer.start(max(0, round(seconds * 1000)))
    loop.exec()


def wait_for(condition, timeout_s: float) -> bool:
    end = time.perf_counter() + timeout_s
    while not condition() and time.perf_counter() < end:
        idle(0.01)
    return condition()


def p50_p95(values: list[float]) -> tuple[float, float]:
    if not values:
        return float("nan"), float("nan")
    a = np.asarray(values, dtype=np.float64)
    return float(np.percentile(a, 50)), float(np.percentile(a, 95))


def open_window(counting: list) -> MainWindow:
    def make():
        counting.append(CountingGenerator(make_generator()))
        return counting[-1]

    window = MainWindow()
    window.studio = Studio(window, player=Player(stream_factory=NullStream),
                           make_generator=make)
    window.show()
    return window


def settle(live) -> bool:
    """Nothing pending, nothing in flight, the newest render heard."""
    def done() -> bool:
        stats = live.scheduler.stats()
        return not stats.pending and not stats.in_flight and (
            not live.history or live.history[-1].serial == live.current_serial)
    return wait_for(done, 30)


def type_prompt(prompt_edit, text: str, rng: random.Random) -> None:
    """Select all and type `text` over it, a key at a time, at about CHARS_PER_S, then pause
    to listen."""
    prompt_edit.selectAll()
    for char in text:
        QTest.keyClicks(prompt_edit, char)
        idle(rng.gammavariate(GAP_SHAPE, 1.0 / CHARS_PER_S / GAP_SHAPE))
    idle(0.6)


def sweep_knobs(panel) -> None:
    for cfg in (1.5, 2.0, 2.5, 3.0, 3.5):  # dragged: each value supersedes the one before
        panel.cfg_spin.setValue(cfg)
        idle(0.04)
    idle(0.5)
    for steps in (6, 8):  # clicked, with a pause to listen
        panel.steps_spin.setValue(steps)
        idle(0.4)
    panel.cfg_spin.setValue(1.0)
    idle(0.5)


class Phases:
    """What was being done when: (condition, kind) from each start to the next one's."""

    def __init__(self) -> None:
        self.starts: list[tuple[float, str, str]] = []

    def begin(self, condition: str, kind: str) -> None:
        self.starts.append((time.perf_counter(), condition, kind))

    def at(self, moment: float | None) -> tuple[str, str]:
        found = ("", "other")
        for start, condition, kind in self.starts:
            if moment is not None and start <= moment:
                found = (condition, kind)
        return found


def measure(window, counting: CountingGenerator, changes: ChangeLog, conditions: list[str],
            prompts: int, rng: random.Random) -> tuple[dict, list, list]:
    """Each prompt and knob sweep once under every condition ("off": live off; else a typing
    debounce in ms), the conditions rotated from prompt to prompt so that other agents' load
    falls on all of them alike. Returns (phases, heard renders, (tick time, gap ms, cpu ms))."""
    live = window.studio.live_controller
    panel = window.generation_panel
    heard_before = len(live.history)
    counting.most_in_flight = counting.in_flight
    changes.clear()
    phases = Phases()
    recorder = BusyGapRecorder()
    recorder.start()
    for index, prompt in enumerate(PROMPTS[:prompts]):
        turn = index % len(conditions)
        for condition in conditions[turn:] + conditions[:turn]:
            off = condition == "off"
            if off == live.live:
                panel.live_toggle.click()
                settle(live)
            if not off:
                live.typing_debounce_ms = float(condition)
            phases.begin(condition, "typing")
            type_prompt(panel.prompt_edit, prompt, rng)
            phases.begin(condition, "knobs")
            sweep_knobs(panel)
            phases.begin(condition, "between")
    settle(live)
    recorder.stop()
    if not live.live:
        panel.live_toggle.click()
    ticks = list(zip(recorder.times, recorder.gaps, recorder.cpu_ms, strict=True))
    return phases, list(live.history)[heard_before:], ticks


def summarise(condition: str, phases: Phases, heard: list, ticks: list, changes: ChangeLog,
              most_in_flight: int, say) -> dict:
    gaps = [(gap, cpu) for at, gap, cpu in ticks
            if phases.at(at)[0] == condition and phases.at(at)[1] != "between"]
    longest, busy = max(gaps) if gaps else (0.0, 0.0)
    p99 = float(np.percentile([g for g, _ in gaps], 99)) if gaps else 0.0
    if condition == "off":
        say(f"live off: longest GUI stall {longest:.1f} ms (the GUI thread ran {busy:.1f} ms "
            f"of it), p99 {p99:.1f} ms over {len(gaps)} ticks")
        return {"condition": "off", "longest_stall_ms": longest, "longest_stall_cpu_ms": busy,
                "stall_p99_ms": p99, "heartbeat_ticks": len(gaps)}
    rows = []
    for h in heard:
        cond, kind = phases.at(h.changed_at)
        if cond != condition or kind not in ("typing", "knobs"):
            continue
        rows.append({"serial": h.serial, "kind": kind, "heard_ms": h.heard_ms,
                     "since_submit_ms": h.since_submit_ms,
                     "wait_ms": (h.finished_at - h.submitted_at) * 1e3 - h.render_ms,
                     "render_ms": h.render_ms,
                     "to_gui_ms": (h.delivered_at - h.finished_at) * 1e3,
                     "to_sound_ms": (h.heard_at - h.delivered_at) * 1e3 if h.heard_at
                     else None})
    by_serial = {row["serial"]: row for row in rows}
    per_change = []
    for serial, at in sorted(changes.changed_at.items()):
        cond, kind = phases.at(at)
        if cond == condition and kind in ("typing", "knobs"):
            per_change.append({"serial": serial, "kind": kind,
                               "fate": changes.fate.get(serial, "superseded"),
                               "heard_ms": by_serial.get(serial, {}).get("heard_ms")})
    fates = {kind: {fate: sum(1 for c in per_change if c["kind"] == kind and c["fate"] == fate)
                    for fate in ("superseded", "dropped", "played", "failed")}
             for kind in ("typing", "knobs")}

    def stat(key: str, kind: str | None = None) -> tuple[float, float]:
        return p50_p95([r[key] for r in rows if r[key] is not None
                        and (kind is None or r["kind"] == kind)])

    figures: dict = {"condition": condition, "debounce_ms": float(condition),
                     "changes": len(per_change), "heard": len(rows), "fates": fates,
                     "most_in_flight": most_in_flight, "longest_stall_ms": longest,
                     "longest_stall_cpu_ms": busy, "stall_p99_ms": p99,
                     "heartbeat_ticks": len(gaps)}
    for key in ("since_submit_ms", "heard_ms", "wait_ms", "render_ms", "to_gui_ms",
                "to_sound_ms"):
        figures[f"{key[:-3]}_p50_ms"], figures[f"{key[:-3]}_p95_ms"] = stat(key)
    for kind in ("typing", "knobs"):
        figures[f"{kind}_heard_p50_ms"], figures[f"{kind}_heard_p95_ms"] = stat("heard_ms", kind)
    submit_p95, key_p95 = figures["since_submit_p95_ms"], figures["heard_p95_ms"]
    verdict = {"submit": submit_p95 <= GOAL_SUBMIT_P95_MS,
               "keystroke": key_p95 <= GOAL_KEYSTROKE_P95_MS,
               "stall": longest < GOAL_STALL_MS, "in_flight": most_in_flight <= 1}
    figures["goals_met"] = verdict
    figures["per_change"] = per_change
    figures["renders"] = rows

    def met(ok: bool) -> str:
        return "met" if ok else "NOT met"

    totals = {fate: sum(f[fate] for f in fates.values()) for fate in fates["typing"]}
    say(f"debounce {condition} ms: {len(per_change)} changes; superseded {totals['superseded']} "
        f"(never started), renders dropped {totals['dropped']} (went stale), played "
        f"{totals['played']}, failed {totals['failed']}")
    for kind, counted in fates.items():
        say(f"  {kind}: " + ", ".join(f"{fate} {n}" for fate, n in counted.items()))
    say(f"  debounce end -> first sample  p50 {figures['since_submit_p50_ms']:6.1f}  p95 "
        f"{submit_p95:6.1f} ms (goal <= {GOAL_SUBMIT_P95_MS:.0f}: {met(verdict['submit'])})")
    say(f"  last change  -> first sample  p50 {figures['heard_p50_ms']:6.1f}  p95 "
        f"{key_p95:6.1f} ms (goal <= {GOAL_KEYSTROKE_P95_MS:.0f}: {met(verdict['keystroke'])});"
        f" typing p95 {figures['typing_heard_p95_ms']:.1f}, knobs p95 "
        f"{figures['knobs_heard_p95_ms']:.1f}")
    say(f"  where the time goes, p50 / p95 ms: waiting for the render in flight "
        f"{figures['wait_p50_ms']:.1f} / {figures['wait_p95_ms']:.1f}, render "
        f"{figures['render_p50_ms']:.1f} / {figures['render_p95_ms']:.1f}, to the GUI thread "
        f"{figures['to_gui_p50_ms']:.1f} / {figures['to_gui_p95_ms']:.1f}, to the first sample "
        f"{figures['to_sound_p50_ms']:.1f} / {figures['to_sound_p95_ms']:.1f}")
    say(f"  longest GUI stall {longest:.1f} ms (the GUI thread ran {busy:.1f} ms of it), p99 "
        f"{p99:.1f} ms over {len(gaps)} ticks (goal < {GOAL_STALL_MS:.0f}: "
        f"{met(verdict['stall'])}); most renders in flight at once {most_in_flight} (goal 1: "
        f"{met(verdict['in_flight'])})")
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=len(PROMPTS))
    parser.add_argument("--debounce-ms", default="200",
                        help="comma-separated typing debounces to measure side by side")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-baseline", action="store_true",
                        help="leave out the same typing with live off (the machine's stalls)")
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--strength-gestures", type=int, default=30,
                        help="adapter strength slider gestures to measure (0: none)")
    parser.add_argument("--strength-only", action="store_true",
                        help="measure the adapter strength changes alone (no typing runs)")
    parser.add_argument("--events", action="store_true",
                        help="list the GUI-thread events that took over 15 ms")
    args = parser.parse_args()
    conditions = [f"{float(x):g}" for x in args.debounce_ms.split(",") if x.strip()]
    conditions += [] if args.no_baseline else ["off"]
    os.environ.setdefault("SA3_STUDIO_HOME", tempfile.mkdtemp(prefix="sa3-live-bench-"))
    log = io.StringIO()

    def say(line: str) -> None:
        print(line, flush=True)
        log.write(line + "\n")

    load_before = load = os.getloadavg()
    say(f"bench_live {dt.datetime.now().isoformat(timespec='seconds')}; {os.cpu_count()} CPUs, "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; demo, {SECONDS:g} s clips, "
        f"{args.prompts} prompts at ~{CHARS_PER_S:.0f} chars/s, null audio stream at real rate")
    app = QApplication.instance() or (timed_application() if args.events else QApplication([]))
    counting: list[CountingGenerator] = []
    window = open_window(counting)
    panel = window.generation_panel
    panel.seconds_spin.setValue(SECONDS)
    panel.prompt_edit.setPlainText("warm up")
    panel.live_toggle.click()  # live on: the seed is locked, the first render loads the demo
    live = window.studio.live_controller
    try:
        if not wait_for(lambda: bool(live.history), 120):
            say("live audition never played a render (see the status bar / log)")
            return 2
        for cfg in (2.0, 1.0):  # warm-up: the negative prompt's encoding, the views' first draw
            panel.cfg_spin.setValue(cfg)
            settle(live)
        idle(1.0)  # and the first spectrogram (its thread imports scipy: once, GIL-heavy)
        LONG_EVENTS.clear()
        runs, strength = [], None
        if not args.strength_only:
            changes = ChangeLog(live, window.studio.gpu.worker)
            phases, heard, ticks = measure(window, counting[0], changes, conditions,
                                           args.prompts, random.Random(args.seed))
            runs = [summarise(condition, phases, heard, ticks, changes,
                              counting[0].most_in_flight, say) for condition in conditions]
        if args.strength_gestures > 0:
            strength = measure_strength(window, args.strength_gestures,
                                        random.Random(args.seed), idle, settle, say)
    finally:
        window.studio.shutdown()
        app.processEvents()
    if args.events:
        say("GUI-thread events over 15 ms during the runs (receiver, event: ms each):")
        for key, times in sorted(LONG_EVENTS.items(), key=lambda kv: -max(kv[1])):
            say(f"  {key}: {', '.join(f'{ms:.0f}' for ms in sorted(times, reverse=True))}")
    load = os.getloadavg()
    say(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} "
        f"CPUs (other agents share them: every figure is slower than on an idle machine)")
    if not args.no_record:
        RESULTS.mkdir(exist_ok=True)
        stem = RESULTS / f"live-{dt.date.today():%Y%m%d}"
        stem.with_suffix(".log").write_text(log.getvalue())
        stem.with_suffix(".json").write_text(json.dumps(
            {"machine": {"cpus": os.cpu_count(), "load_before": load_before,
                         "load_after": load}, "runs": runs, "strength_change": strength},
            indent=2) + "\n")
        say(f"recorded in {stem}.log and .json")
    met = all(all(r["goals_met"].values()) for r in runs if "goals_met" in r)
    return 0 if met and (strength is None or strength["goal_met"]) else 1


if __name__ == "__main__":
    sys.exit(main())
