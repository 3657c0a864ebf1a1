"""Running live renders on a render thread: `serve_pending` for a thread that already has a loop
(the window's GPU worker calls it from the slot a queued signal wakes after each submit), and
`LiveWorker`, a plain thread of its own (benchmarks, tests, any front end without a GPU worker).
The thread contract is engines.live.scheduler's."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from engines.errors import CancelledError
from engines.live.scheduler import LiveJob, LiveOutcome, LiveScheduler

log = logging.getLogger(__name__)

Render = Callable[[Any, Callable[[], bool]], Any]
"""render(change, cancel) -> result; `cancel` says True once the change is stale (pass it to
Generator.generate as its cancel function)."""
Deliver = Callable[[LiveOutcome], None]
"""deliver(outcome): hand it on (the window emits it to the GUI thread, which plays `played`)."""


def render_job(scheduler: LiveScheduler, job: LiveJob, render: Render) -> LiveOutcome:
    """Render one job and report it to the scheduler, whatever happens: a cancel (the job
    went stale) or an error ends it without a result instead of escaping."""
    try:
        result = render(job.change, job.is_stale)
    except CancelledError as err:
        return scheduler.abandon(job, err)
    except Exception as err:  # noqa: BLE001 - a failed render is an outcome, the thread lives on
        log.exception("live render %d failed", job.serial)
        return scheduler.abandon(job, err)
    except BaseException:
        scheduler.abandon(job)
        raise
    return scheduler.finish(job, result)


def _hand_on(deliver: Deliver, outcome: LiveOutcome) -> None:
    try:
        deliver(outcome)
    except Exception:  # noqa: BLE001 - the render thread must outlive a broken receiver
        log.exception("delivering live render %d failed", outcome.job.serial)


def serve_pending(scheduler: LiveScheduler, render: Render, deliver: Deliver) -> int:
    """On the calling (render) thread: render what is pending, one job at a time, until
    nothing is; each outcome goes to `deliver`. Returns how many renders ran. Returns at once
    when a render is already in flight on another thread."""
    count = 0
    while (job := scheduler.next_job()) is not None:
        _hand_on(deliver, render_job(scheduler, job, render))
        count += 1
    return count


class LiveWorker:
    """A render thread of its own: waits for jobs and renders them until `stop`."""

    def __init__(self, scheduler: LiveScheduler, render: Render, deliver: Deliver,
                 name: str = "live-render") -> None:
        self.scheduler = scheduler
        self._render = render
        self._deliver = deliver
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Close the scheduler and wait for the render under way (if any) to end."""
        self.scheduler.close()
        self._thread.join(timeout)

    def _run(self) -> None:
        while (job := self.scheduler.wait_job()) is not None:
            _hand_on(self._deliver, render_job(self.scheduler, job, self._render))
