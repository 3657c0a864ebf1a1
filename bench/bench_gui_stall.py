"""Window open time and the longest event-loop stall while a 30 s demo take is made and shown.

    QT_QPA_PLATFORM=offscreen python bench/bench_gui_stall.py [--seconds 30] [--runs 3]
    xvfb-run -a python bench/bench_gui_stall.py --events --why  # what the stalls were

What a user feels as a frozen window is the longest gap between two turns of the event loop. A
5 ms precise QTimer records the gaps between its ticks from the click on Generate until the take
is in the list, thumbnailed (app.common.thumbnails, when it exists) and drawn (waveform,
spectrogram, latent view), and on through `--tail` seconds of auto-play. There is no sound card
here, so the player gets a null output stream whose thread pulls blocks in real time exactly as
PortAudio would, which keeps the callback's copying in the measurement.

Window open counts imports: run it where Python may write bytecode (an installed app has its
.pyc files; with PYTHONDONTWRITEBYTECODE=1 every run compiles ~150 modules, 0.2-0.3 s here):
    env -u PYTHONDONTWRITEBYTECODE python bench/bench_gui_stall.py  # twice; count the second

Prints, per run, the longest gap and the 99th percentile (ms), and once, the window open time:
from the start of this process (imports included) to the first painted frame. Goals: window
open < 1.5 s, longest stall < 50 ms. To find a stall's cause: --events lists the GUI thread's
long events, --why samples every thread during stalls (a GUI thread waiting for the GIL shows
as "C++ only" while the others run), --profile runs cProfile on the GUI thread.
"""

from __future__ import annotations

import time

PROCESS_START = time.perf_counter()  # before the Qt imports: they are part of opening

import argparse  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TICK_MS = 5
STALL_GOAL_MS = 50.0
OPEN_GOAL_MS = 1500.0


class NullStream:
    """sounddevice.OutputStream's shape, with a thread that pulls blocks at the real rate."""

    def __init__(self, *, samplerate, blocksize, channels, dtype, callback, **_ignored):
        self._callback = callback
        self._period = blocksize / samplerate
        self._out = __import__("numpy").zeros((blocksize, channels), dtype=dtype)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        due = time.perf_counter()
        while not self._stop.is_set():
            try:
                self._callback(self._out, len(self._out), None, None)
            except Exception:  # noqa: BLE001 - sounddevice.CallbackStop and friends end it
                return
            due += self._period
            self._stop.wait(max(due - time.perf_counter(), 0.0))

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        self._stop.set()


class GapRecorder:
    """Gaps (ms) between ticks of a precise timer; a gap far over TICK_MS is a stall."""

    def __init__(self) -> None:
        from PySide6.QtCore import QElapsedTimer, Qt, QTimer

        self.gaps: list[float] = []
        self.last_tick = time.perf_counter()
        self._clock = QElapsedTimer()
        self._last = 0.0
        self._timer = QTimer()
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.setInterval(TICK_MS)
        self._timer.timeout.connect(self._tick)

    def _tick(self) -> None:
        now = self._clock.nsecsElapsed() / 1e6
        self.gaps.append(now - self._last)
        self._last = now
        self.last_tick = time.perf_counter()  # for StallSampler, on another thread

    def start(self) -> None:
        self.gaps.clear()
        self._clock.start()
        self._last = 0.0
        self._timer.start()

    def stop(self) -> tuple[float, float, int]:
        """(longest gap, p99 gap, ticks)."""
        self._timer.stop()
        gaps = sorted(self.gaps) or [0.0]
        return gaps[-1], gaps[int(0.99 * (len(gaps) - 1))], len(self.gaps)


class StallSampler(threading.Thread):
    """While the GUI thread has not ticked for `after_ms`, samples what every thread is running
    (the GUI thread's own work, or the thread holding the GIL it waits for), per stall."""

    def __init__(self, recorder: GapRecorder, after_ms: float = 20.0) -> None:
        super().__init__(daemon=True)
        self.recorder = recorder
        self.after_s = after_ms / 1e3
        self.stalls: dict[float, list[str]] = {}  # stall start -> samples
        self.stopped = threading.Event()
        self.t0 = time.perf_counter()

    def run(self) -> None:
        import traceback

        main = threading.main_thread().ident
        while not self.stopped.wait(0.002):
            began = self.recorder.last_tick
            if time.perf_counter() - began < self.after_s:
                continue
            for ident, frame in sys._current_frames().items():
                if ident == threading.get_ident():
                    continue
                stack = [f for f in traceback.extract_stack(frame) if "bench_gui" not in
                         f.filename and "threading.py" not in f.filename]
                where = " < ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}"
                                   for f in reversed(stack[-5:])) or "(C++ only: Qt, or GIL)"
                name = "GUI" if ident == main else "bg "
                self.stalls.setdefault(began, []).append(f"{name} {where}")

    def report(self, worst: int = 3) -> None:
        self.stopped.set()
        ranked = sorted(self.stalls.items(), key=lambda kv: -len(kv[1]))[:worst]
        for began, samples in ranked:
            print(f"  stall at +{(began - self.t0) * 1e3:.0f} ms, >= {len(samples) * 2 // 3} "
                  f"ms sampled; where the threads were (count of 2 ms samples):")
            counts: dict[str, int] = {}
            for sample in samples:
                counts[sample] = counts.get(sample, 0) + 1
            for where, count in sorted(counts.items(), key=lambda kv: -kv[1])[:8]:
                print(f"    {count:3d}  {where}")


LONG_EVENTS: dict[str, list[float]] = {}
GUI_THREAD = threading.get_ident()


def timed_application(threshold_ms: float = 15.0):
    """A QApplication that records every outermost event taking over `threshold_ms` (by
    receiver class and event type): the GUI-thread work behind a stall, GIL waits included."""
    from PySide6.QtWidgets import QApplication

    class TimedApplication(QApplication):
        depth = 0

        def notify(self, receiver, event):  # noqa: N802 - Qt's name
            # notify runs for the worker thread's events too: only the GUI thread's count
            if TimedApplication.depth or threading.get_ident() != GUI_THREAD:
                return super().notify(receiver, event)
            TimedApplication.depth += 1
            kind = event.type()
            # named before delivery: a DeferredDelete leaves no receiver to ask afterwards
            receiver_name = f"{type(receiver).__name__} {receiver.objectName()}".strip()
            start = time.perf_counter()
            try:
                return super().notify(receiver, event)
            finally:
                TimedApplication.depth -= 1
                ms = (time.perf_counter() - start) * 1e3
                if ms > threshold_ms:
                    key = f"{receiver_name} {getattr(kind, 'name', kind)}"
                    try:  # a timer's owner says whose timer it is
                        owner = receiver.parent() if hasattr(receiver, "parent") else None
                    except RuntimeError:  # deleted by the event itself
                        owner = None
                    if owner is not None:
                        key += f" (of {type(owner).__name__})"
                    LONG_EVENTS.setdefault(key, []).append(ms)

    return TimedApplication([])


def open_window(events: bool = False):
    """The real window with a null audio device; returns (app, window, ms to first paint)."""
    from PySide6.QtWidgets import QApplication

    from app.common.playback import Player
    from app.shell.main_window import MainWindow
    from app.shell.studio import Studio

    app = QApplication.instance() or (timed_application() if events else QApplication([]))
    window = MainWindow()
    window.studio = Studio(window, player=Player(stream_factory=NullStream))
    window.show()
    window.grab()  # forces layout and one full paint, as the first frame on screen would
    app.processEvents()
    return app, window, (time.perf_counter() - PROCESS_START) * 1e3


def wait(app, condition, timeout_s: float) -> bool:
    """Run the real event loop until `condition()` holds (checked every 10 ms) or time is up."""
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    end = time.perf_counter() + timeout_s
    check = QTimer()
    check.setInterval(10)
    check.timeout.connect(lambda: (condition() or time.perf_counter() > end) and loop.quit())
    check.start()
    if not condition():
        loop.exec()
    check.stop()
    return condition()


def one_run(app, window, tail_s: float, why: list) -> tuple[float, float, int, float]:
    ctl = window.studio
    takes = window.findChild(object, "takesList")
    before = takes.count()
    recorder = GapRecorder()
    recorder.start()
    if why is not None:
        why.append(StallSampler(recorder))
        why[-1].start()
    start = time.perf_counter()
    window.findChild(object, "generateButton").click()
    done = wait(app, lambda: takes.count() > before and not ctl.gpu.running, 600)
    ready_ms = (time.perf_counter() - start) * 1e3
    wait(app, lambda: False, tail_s)  # deferred drawing, thumbnails, playhead, playback
    worst, p99, ticks = recorder.stop()
    if why:
        why[-1].stopped.set()
    if not done:
        raise SystemExit("the take never arrived (see the status bar / log)")
    return worst, p99, ticks, ready_ms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="take length (default 30)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tail", type=float, default=2.0,
                        help="seconds measured after the take arrives (drawing, playback)")
    parser.add_argument("--profile", action="store_true",
                        help="cProfile the GUI thread over the runs; print the longest calls")
    parser.add_argument("--why", action="store_true",
                        help="sample every thread's stack while the GUI thread is stalled")
    parser.add_argument("--settle", type=float, default=0.0,
                        help="seconds to idle after the warm-up take (default 0: the first "
                             "run meets whatever the warm-up take started, as a user would)")
    parser.add_argument("--events", action="store_true",
                        help="list the GUI-thread events that took over 15 ms")
    args = parser.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ.setdefault("SA3_STUDIO_HOME", tempfile.mkdtemp(prefix="sa3-stall-"))

    app, window, open_ms = open_window(args.events)
    print(f"window open: {open_ms:.0f} ms from process start to first paint "
          f"(goal < {OPEN_GOAL_MS:.0f} ms)")
    ctl = window.studio
    window.findChild(object, "autoplayCheck").setChecked(True)
    window.findChild(object, "promptEdit").setPlainText("rain and thunder, distant")
    window.findChild(object, "secondsSpin").setValue(args.seconds)
    print(f"thumbnails: {'on' if _has_thumbnails() else 'not in this build'}; playback: "
          f"null device at real rate")
    window.findChild(object, "generateButton").click()  # warm-up: builds and loads the demo
    wait(app, lambda: not ctl.gpu.running, 600)
    wait(app, lambda: False, args.settle)  # the warm-up take's own after-work (measuring...)

    profiler = None
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    LONG_EVENTS.clear()  # opening and the warm-up are not what is measured
    worst_runs = []
    samplers: list | None = [] if args.why else None
    for run in range(args.runs):
        worst, p99, ticks, ready_ms = one_run(app, window, args.tail, samplers)
        worst_runs.append(worst)
        print(f"run {run + 1}: {args.seconds:g} s take ready in {ready_ms:.0f} ms; "
              f"{ticks} ticks, longest stall {worst:.1f} ms, p99 {p99:.1f} ms")
    if profiler is not None:
        import pstats

        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
    if args.events:
        print("GUI-thread events over 15 ms during the runs (receiver, event: ms each):")
        for key, times in sorted(LONG_EVENTS.items(), key=lambda kv: -max(kv[1])):
            print(f"  {key}: {', '.join(f'{ms:.0f}' for ms in sorted(times, reverse=True))}")
    for run, sampler in enumerate(samplers or [], 1):
        print(f"run {run}, the longest stalls:")
        sampler.report()
    print(f"longest stall over {args.runs} runs: {max(worst_runs):.1f} ms (goal < "
          f"{STALL_GOAL_MS:.0f} ms) on {os.cpu_count()} cores; window open {open_ms:.0f} ms")
    ctl.shutdown()
    return 0


def _has_thumbnails() -> bool:
    import importlib.util

    return importlib.util.find_spec("app.common.thumbnails") is not None


if __name__ == "__main__":
    sys.exit(main())
