"""Each sampler step's latents to pinned host memory on a second stream, while the next steps
run: a fork off the pipeline's stream after each step and one join at the end of the take.
Eagerly these are real cross-stream waits; under capture they become graph branches (the copy
stream joins the capture through the fork events), so a replay overlaps the copies too."""

from __future__ import annotations

from engines.cuda.api import call
from engines.cuda.stream import Event, Stream


class StepCopies:
    """The copy stream and the fork and join events of one graph key (`steps` steps)."""

    def __init__(self, steps: int) -> None:
        self._forks: list[Event] = []
        self._join: Event | None = None
        self.stream = Stream()
        try:
            self._forks = [Event(timing=False) for _ in range(steps)]
            self._join = Event(timing=False)
        except BaseException:
            self.free()
            raise

    def send(self, origin: Stream, step: int, host: int, device: int, nbytes: int) -> None:
        """Copy `nbytes` at `device` to pinned `host` once `origin` has made them."""
        fork = self._forks[step]
        fork.record(origin)
        call("cuStreamWaitEvent", self.stream.handle, fork.handle, 0)
        call("cuMemcpyDtoHAsync", host, device, nbytes, self.stream.handle)

    def join(self, origin: Stream) -> None:
        """`origin` waits for every copy sent so far (required before a capture ends)."""
        self._join.record(self.stream)
        call("cuStreamWaitEvent", origin.handle, self._join.handle, 0)

    def free(self) -> None:
        for event in [*self._forks, self._join]:
            if event is not None:
                event.free()
        self._forks.clear()
        self._join = None
        self.stream.free()
