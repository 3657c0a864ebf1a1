"""The live audition scheduler (engines.live): latest wins, stale results never played, at most
one render in flight, the "slower than typing" rule, and live renders of the demo model."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from engines.catalog import Catalog
from engines.errors import BackendError
from engines.generator import Generator
from engines.live.scheduler import LiveScheduler
from engines.live.worker import LiveWorker, serve_pending
from engines.request import GenerationRequest


class FakeClock:
    """A clock the test moves by hand (seconds)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def advance(self, ms: float) -> None:
        self.now += ms / 1e3


def test_a_newer_change_supersedes_the_pending_one_and_stale_results_are_dropped() -> None:
    clock = FakeClock()
    live: LiveScheduler[str, str] = LiveScheduler(clock)
    live.submit("a")
    first = live.next_job()
    assert first is not None and first.change == "a"
    live.submit("b")
    live.submit("c")  # b never renders
    assert live.next_job() is None  # one render in flight at most
    assert first.is_stale()
    dropped = live.finish(first, "render of a")
    assert dropped.kind == "dropped" and dropped.result is None
    second = live.next_job()
    assert second is not None and second.change == "c" and not second.is_stale()
    played = live.finish(second, "render of c")
    assert played.played and played.result == "render of c"
    stats = live.stats()
    assert (stats.submitted, stats.started, stats.superseded, stats.dropped, stats.played) == (
        3, 2, 1, 1, 1)
    assert live.next_job() is None and not stats.in_flight and not stats.pending


def test_latency_runs_from_the_change_to_the_result() -> None:
    clock = FakeClock()
    live: LiveScheduler[str, str] = LiveScheduler(clock)
    keystroke = clock()
    clock.advance(200)  # the debounce
    live.submit("rain", changed_at=keystroke)
    clock.advance(5)
    job = live.next_job()
    clock.advance(40)  # the render
    outcome = live.finish(job, "pcm")
    assert outcome.latency_ms == pytest.approx(245)
    assert outcome.since_submit_ms == pytest.approx(45)
    assert outcome.render_ms == pytest.approx(40)
    assert live.stats().latency_ms == pytest.approx((245,))


def test_withdrawing_drops_the_render_in_flight_and_the_pending_change() -> None:
    live: LiveScheduler[str, str] = LiveScheduler(FakeClock())
    live.submit("a")
    job = live.next_job()
    live.submit("b")
    live.withdraw()  # live switched off
    assert live.finish(job, "pcm").kind == "dropped"
    assert live.next_job() is None
    assert live.stats().superseded == 1


def test_each_job_is_reported_once() -> None:
    live: LiveScheduler[str, str] = LiveScheduler(FakeClock())
    live.submit("a")
    job = live.next_job()
    live.finish(job, "pcm")
    with pytest.raises(ValueError):
        live.finish(job, "pcm")


def test_a_failed_render_is_an_outcome_and_the_next_change_still_renders() -> None:
    live: LiveScheduler[str, str] = LiveScheduler(FakeClock())
    outcomes = []

    def render(change: str, cancel) -> str:
        if change == "bad":
            raise BackendError("The model produced invalid values.")
        return change.upper()

    live.submit("bad")
    serve_pending(live, render, outcomes.append)
    live.submit("good")
    serve_pending(live, render, outcomes.append)
    assert [o.kind for o in outcomes] == ["failed", "played"]
    assert isinstance(outcomes[0].error, BackendError) and outcomes[1].result == "GOOD"


@pytest.mark.parametrize(("render_ms", "slower"), [(120, False), (390, False), (450, True)])
def test_renders_slower_than_typing_say_render_on_pauses_only(render_ms, slower) -> None:
    clock = FakeClock()
    live: LiveScheduler[str, str] = LiveScheduler(clock)
    assert not live.slower_than_typing(debounce_ms=200)  # nothing measured yet
    for i in range(6):
        live.submit(str(i))
        job = live.next_job()
        clock.advance(render_ms)
        live.finish(job, "pcm")
    assert live.slower_than_typing(debounce_ms=200) is slower


def test_a_few_fast_renders_bring_live_typing_back() -> None:
    clock = FakeClock()
    live: LiveScheduler[str, str] = LiveScheduler(clock)
    for render_ms in (900, 900, 900, 30, 30, 30):
        live.submit("x")
        job = live.next_job()
        clock.advance(render_ms)
        live.finish(job, "pcm")
    assert not live.slower_than_typing(debounce_ms=200)  # the median of the last five


def test_typing_from_another_thread_never_plays_a_stale_result() -> None:
    """A "GUI" thread submits at random intervals while a render thread renders for random
    times. Recorded independently of the scheduler: how many renders ran at once, and when
    each change was submitted."""
    live: LiveScheduler[int, int] = LiveScheduler()
    concurrency = {"now": 0, "most": 0}
    lock = threading.Lock()
    submitted: list[tuple[int, float]] = []
    outcomes = []
    typing, rendering = random.Random(7), random.Random(8)

    def render(change: int, cancel) -> int:
        with lock:
            concurrency["now"] += 1
            concurrency["most"] = max(concurrency["most"], concurrency["now"])
        time.sleep(rendering.uniform(0.002, 0.02))
        with lock:
            concurrency["now"] -= 1
        return change * 10

    worker = LiveWorker(live, render, outcomes.append)
    worker.start()
    try:
        for value in range(60):
            serial = live.submit(value)
            submitted.append((serial, time.perf_counter()))
            time.sleep(typing.uniform(0.0, 0.015))
        deadline = time.monotonic() + 10
        while (live.stats().pending or live.stats().in_flight) and time.monotonic() < deadline:
            time.sleep(0.005)
    finally:
        worker.stop(timeout=10)
    stats = live.stats()
    assert concurrency["most"] == 1
    played = [o for o in outcomes if o.played]
    assert played and played[-1].job.change == 59 and played[-1].result == 590
    for outcome in played:  # nothing newer had been submitted when it was handed to play
        newer = [t for serial, t in submitted if serial > outcome.job.serial]
        assert not newer or min(newer) > outcome.finished_at
    serials = [o.job.serial for o in played]
    assert serials == sorted(serials)
    assert stats.started == stats.played + stats.dropped + stats.failed == len(outcomes)
    assert stats.submitted == 60 == stats.started + stats.superseded
    assert stats.failed == 0


@pytest.fixture(scope="module")
def demo_generator(tmp_path_factory: pytest.TempPathFactory):
    generator = Generator(Catalog(Path(tmp_path_factory.mktemp("models"))))
    yield generator
    generator.close()


def live_request(prompt: str, seed: int = 11, **extra) -> GenerationRequest:
    return GenerationRequest(prompt=prompt, seconds=2.0, seed=seed, backend="onnxruntime",
                             **extra)


def test_live_renders_of_the_demo_play_the_newest_parameters(demo_generator) -> None:
    live: LiveScheduler[GenerationRequest, object] = LiveScheduler()
    outcomes = []
    worker = LiveWorker(live, lambda req, cancel: demo_generator.generate(req, cancel=cancel),
                        outcomes.append)
    changes = [live_request("rain"), live_request("rain on"), live_request("rain on a tin roof"),
               live_request("rain on a tin roof", cfg=3.0, negative_prompt="wind")]
    worker.start()
    try:
        for request in changes:  # faster than a render: most are superseded or dropped
            live.submit(request)
            time.sleep(0.01)
        deadline = time.monotonic() + 60
        while (live.stats().pending or live.stats().in_flight) and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        worker.stop(timeout=60)
    played = [o for o in outcomes if o.played]
    assert played[-1].job.change is changes[-1]
    direct = demo_generator.generate(changes[-1])
    np.testing.assert_array_equal(played[-1].result.pcm, direct.pcm)
    assert all(o.kind in ("played", "dropped") for o in outcomes)
    assert live.stats().started == len(outcomes)
