"""Streams and events."""

from __future__ import annotations

from engines.cuda.api import call, driver


class Stream:
    """A non-blocking stream owned by the GPU worker thread."""

    def __init__(self) -> None:
        drv = driver()
        self.handle = call("cuStreamCreate", drv.CUstream_flags.CU_STREAM_NON_BLOCKING)

    @property
    def ptr(self) -> int:
        return int(self.handle)

    def synchronize(self) -> None:
        call("cuStreamSynchronize", self.handle)

    def free(self) -> None:
        if self.handle is not None:
            call("cuStreamDestroy", self.handle)
            self.handle = None


class Event:
    """A timing event; `record(..., external=True)` becomes a node when captured in a graph."""

    def __init__(self, timing: bool = True) -> None:
        drv = driver()
        flags = drv.CUevent_flags.CU_EVENT_DEFAULT if timing else \
            drv.CUevent_flags.CU_EVENT_DISABLE_TIMING
        self.handle = call("cuEventCreate", flags)

    def record(self, stream: Stream, external: bool = False) -> None:
        drv = driver()
        if external:
            call("cuEventRecordWithFlags", self.handle, stream.handle,
                 drv.CUevent_record_flags.CU_EVENT_RECORD_EXTERNAL)
        else:
            call("cuEventRecord", self.handle, stream.handle)

    def synchronize(self) -> None:
        call("cuEventSynchronize", self.handle)

    def elapsed_ms(self, start: Event) -> float:
        """Milliseconds from `start` to this event (both recorded and completed)."""
        return float(call("cuEventElapsedTime", start.handle, self.handle))

    def free(self) -> None:
        if self.handle is not None:
            call("cuEventDestroy", self.handle)
            self.handle = None
