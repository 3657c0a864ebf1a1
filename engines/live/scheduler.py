"""Latest-wins scheduling of live audition renders (issue 23), with no Qt.

While live audition is on, every change (a pause in typing, a knob) asks for the take to be
rendered again and played. Changes can come faster than renders finish, so:

- at most one render is in flight and at most one change waits (pending);
- a newer change replaces the pending one, which is then never rendered (superseded);
- a render that finishes after a newer change arrived is stale: its result is dropped, never
  handed to play. On TensorRT a replay cannot be stopped part way, so superseding the change
  under way means dropping its result; a backend that looks at cancel between sampler steps
  (ONNX Runtime, the demo) stops early when given `LiveJob.is_stale` as its cancel function.

Thread contract:

- `submit` may be called from any thread (the window calls it from the GUI thread when its
  typing debounce ends) and never waits for a render: it holds a lock for bookkeeping only.
- One render thread (the window's GPU worker, which owns every CUDA object) takes work with
  `next_job` (never blocks: a Qt worker is woken by a queued signal after `submit`, then calls
  `serve_pending`) or `wait_job` (blocks up to a timeout: a plain thread, see LiveWorker).
- Every job taken is reported exactly once, by `finish(job, result)` or `abandon(job, error)`,
  from the thread that rendered it; no further job is handed out until then, so two renders
  are never in flight, whichever threads ask.
- Outcomes are plain data: the render thread hands the `played` ones to the GUI thread (a
  signal carrying the outcome), which plays them; dropped ones are only counted.

Timestamps come from one monotonic clock (time.perf_counter unless given): `changed_at` is
when the user changed something (the window passes its last keystroke), `submitted_at` when
the change reached the scheduler (the end of the debounce).
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

Change = TypeVar("Change")
Result = TypeVar("Result")

RECENT_RENDERS = 5  # renders the "slower than typing" rule looks at
SLOWER_FACTOR = 2.0  # renders this many debounces long: render on pauses only
HISTORY = 1000  # latencies kept for statistics


@dataclass(frozen=True)
class LiveChange(Generic[Change]):
    """One change as submitted: `serial` counts changes from 1."""

    serial: int
    change: Change
    changed_at: float
    submitted_at: float


@dataclass(frozen=True)
class LiveJob(Generic[Change]):
    """A change taken for rendering; `is_stale` is its cancel function."""

    request: LiveChange[Change]
    started_at: float
    is_stale: Callable[[], bool] = field(repr=False, compare=False)

    @property
    def change(self) -> Change:
        return self.request.change

    @property
    def serial(self) -> int:
        return self.request.serial


PLAYED, DROPPED, FAILED = "played", "dropped", "failed"


@dataclass(frozen=True)
class LiveOutcome(Generic[Change, Result]):
    """How one render ended: `kind` is "played" (hand `result` to play), "dropped" (stale:
    a newer change came while it ran, or it was cancelled as stale) or "failed" (`error`)."""

    job: LiveJob[Change]
    kind: str
    finished_at: float
    result: Result | None = None
    error: BaseException | None = None

    @property
    def played(self) -> bool:
        return self.kind == PLAYED

    @property
    def render_ms(self) -> float:
        return (self.finished_at - self.job.started_at) * 1e3

    @property
    def latency_ms(self) -> float:
        """From the user's change to the result in hand."""
        return (self.finished_at - self.job.request.changed_at) * 1e3

    @property
    def since_submit_ms(self) -> float:
        """From the change reaching the scheduler (the debounce's end) to the result."""
        return (self.finished_at - self.job.request.submitted_at) * 1e3


@dataclass(frozen=True)
class LiveStats:
    """Counters and recent timings at one moment."""

    submitted: int
    started: int
    superseded: int
    dropped: int
    played: int
    failed: int
    in_flight: bool
    pending: bool
    latency_ms: tuple[float, ...]  # change -> result, of played renders, oldest first
    since_submit_ms: tuple[float, ...]
    render_ms: tuple[float, ...]  # of finished renders (played or dropped), oldest first


class LiveScheduler(Generic[Change, Result]):
    """At most one render in flight and one change pending; the newest change wins."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter,
                 recent: int = RECENT_RENDERS) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._serial = 0  # the newest change's serial (withdraw moves it on too)
        self._submitted = 0
        self._pending: LiveChange[Change] | None = None
        self._in_flight: LiveJob[Change] | None = None
        self._closed = False
        self._counts = {"started": 0, "superseded": 0, "dropped": 0, "played": 0, "failed": 0}
        self._render_ms: deque[float] = deque(maxlen=HISTORY)
        self._recent_ms: deque[float] = deque(maxlen=max(1, recent))
        self._latency_ms: deque[float] = deque(maxlen=HISTORY)
        self._since_submit_ms: deque[float] = deque(maxlen=HISTORY)

    # ------------------------------------------------------------------ any thread
    def submit(self, change: Change, changed_at: float | None = None) -> int:
        """Ask for `change` to be rendered; returns its serial. Replaces a pending change and
        makes the render in flight stale. Never waits."""
        with self._cond:
            now = self._clock()
            self._serial += 1
            self._submitted += 1
            if self._pending is not None:
                self._counts["superseded"] += 1
            self._pending = LiveChange(self._serial, change,
                                       now if changed_at is None else changed_at, now)
            self._cond.notify_all()
            return self._serial

    def withdraw(self) -> None:
        """Live audition was switched off: forget the pending change (superseded) and make
        the render in flight stale, so nothing more is played."""
        with self._cond:
            self._serial += 1
            if self._pending is not None:
                self._counts["superseded"] += 1
                self._pending = None
            self._cond.notify_all()

    def close(self) -> None:
        """Wake every `wait_job` for good (it then returns None); nothing more is handed out."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def is_stale(self, job: LiveJob[Change]) -> bool:
        """True once a change newer than `job`'s arrived (or live was withdrawn)."""
        with self._cond:
            return self._serial > job.serial

    def stats(self) -> LiveStats:
        with self._cond:
            return LiveStats(submitted=self._submitted, **self._counts,
                             in_flight=self._in_flight is not None,
                             pending=self._pending is not None,
                             latency_ms=tuple(self._latency_ms),
                             since_submit_ms=tuple(self._since_submit_ms),
                             render_ms=tuple(self._render_ms))

    def slower_than_typing(self, debounce_ms: float, factor: float = SLOWER_FACTOR) -> bool:
        """True when the median of the last few renders took longer than `factor` typing
        debounces: renders would mostly be superseded or dropped while the user types, so the
        window should render on pauses in typing only (and say so). False before any render
        has finished."""
        with self._cond:
            if not self._recent_ms:
                return False
            return statistics.median(self._recent_ms) > factor * debounce_ms

    # ------------------------------------------------------------------ the render thread
    def next_job(self) -> LiveJob[Change] | None:
        """The pending change, now in flight; None when nothing is pending or a render is
        already in flight."""
        with self._cond:
            return self._take()

    def wait_job(self, timeout: float | None = None) -> LiveJob[Change] | None:
        """Like next_job, but waits up to `timeout` seconds for one (None: for ever, until
        close)."""
        with self._cond:
            self._cond.wait_for(lambda: self._closed or (
                self._in_flight is None and self._pending is not None), timeout)
            return None if self._closed else self._take()

    def finish(self, job: LiveJob[Change], result: Result) -> LiveOutcome[Change, Result]:
        """Report `job` rendered: played when it is still the newest change, else dropped."""
        with self._cond:
            now = self._release(job)
            render_ms = (now - job.started_at) * 1e3
            self._render_ms.append(render_ms)
            self._recent_ms.append(render_ms)
            if self._serial > job.serial:
                self._counts["dropped"] += 1
                return LiveOutcome(job, DROPPED, now)
            self._counts["played"] += 1
            self._latency_ms.append((now - job.request.changed_at) * 1e3)
            self._since_submit_ms.append((now - job.request.submitted_at) * 1e3)
            return LiveOutcome(job, PLAYED, now, result=result)

    def abandon(self, job: LiveJob[Change],
                error: BaseException | None = None) -> LiveOutcome[Change, Result]:
        """Report `job` ended without a result (cancelled as stale, or failed with `error`):
        dropped when a newer change had come, else failed."""
        with self._cond:
            now = self._release(job)
            if self._serial > job.serial:
                self._counts["dropped"] += 1
                return LiveOutcome(job, DROPPED, now, error=error)
            self._counts["failed"] += 1
            return LiveOutcome(job, FAILED, now, error=error)

    # ------------------------------------------------------------------ inside the lock
    def _take(self) -> LiveJob[Change] | None:
        if self._closed or self._in_flight is not None or self._pending is None:
            return None
        pending, self._pending = self._pending, None
        job: LiveJob[Change] = LiveJob(pending, self._clock(), lambda: self.is_stale(job))
        self._in_flight = job
        self._counts["started"] += 1
        return job

    def _release(self, job: LiveJob[Change]) -> float:
        if self._in_flight is not job:
            raise ValueError("that live job is not the one in flight (report each job once)")
        self._in_flight = None
        self._cond.notify_all()
        return self._clock()
