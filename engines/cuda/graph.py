"""CUDA graph capture and replay.

Capture uses thread-local mode (other threads' CUDA calls are not swept into our graph), always
ends in `finally`, destroys the source graph once instantiated, and updates an existing exec in
place when the topology allows (else re-instantiates). Execs are destroyed explicitly.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from engines.cuda.api import CudaError, call, check, driver
from engines.cuda.stream import Stream

log = logging.getLogger(__name__)


class CapturedGraph:
    """An instantiated graph that replays on a stream."""

    def __init__(self) -> None:
        self.exec = None

    def capture(self, stream: Stream, record: Callable[[], None]) -> None:
        """Run `record()` under stream capture and (re)build the executable graph from it.

        If `record` raises, capture is ended and discarded and the exception propagates.
        """
        drv = driver()
        mode = drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        call("cuStreamBeginCapture", stream.handle, mode)
        graph = None
        try:
            record()
        finally:
            # Always end capture, even on error, or the stream stays unusable.
            graph = check(drv.cuStreamEndCapture(stream.handle), "cuStreamEndCapture")
        try:
            self._install(graph)
        finally:
            call("cuGraphDestroy", graph)

    def _install(self, graph) -> None:
        drv = driver()
        if self.exec is not None:
            result = drv.cuGraphExecUpdate(self.exec, graph)
            if int(result[0]) == 0:
                return
            log.debug("graph exec update refused (%s); re-instantiating", result[0])
            self.destroy()
        self.exec = call("cuGraphInstantiate", graph, 0)

    def upload(self, stream: Stream) -> None:
        """Pre-upload the exec so the first replay pays no setup cost."""
        if self.exec is not None:
            call("cuGraphUpload", self.exec, stream.handle)

    def launch(self, stream: Stream) -> None:
        if self.exec is None:
            raise CudaError("CUDA_ERROR_INVALID_HANDLE", "cuGraphLaunch", "no graph captured")
        call("cuGraphLaunch", self.exec, stream.handle)

    def destroy(self) -> None:
        if self.exec is not None:
            call("cuGraphExecDestroy", self.exec)
            self.exec = None
