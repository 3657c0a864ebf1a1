"""CUDA graph capture and replay.

Capture uses thread-local mode (other threads' CUDA calls are not swept into our graph), always
ends in `finally`, destroys the source graph once instantiated, and updates an existing exec in
place when the topology allows (else re-instantiates). Execs are destroyed explicitly.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from engines.cuda.api import CudaError, call, check, driver, error_name
from engines.cuda.stream import Stream

log = logging.getLogger(__name__)


class CaptureFailed(CudaError):
    """CUDA refused the capture (typically CUDA_ERROR_STREAM_CAPTURE_INVALIDATED after a call
    that capture forbids). The capture was ended and nothing of it kept; the stream is usable."""


class CapturedGraph:
    """An instantiated graph that replays on a stream."""

    def __init__(self) -> None:
        self.exec = None

    def capture(self, stream: Stream, record: Callable[[], None]) -> None:
        """Run `record()` under stream capture and (re)build the executable graph from it.

        The capture is always ended, even when `record` raises, or the stream would stay
        unusable. A CUDA error while recording or ending (a capture-illegal call makes every
        later call in the capture fail with 901) becomes CaptureFailed with the first error's
        name; any other exception propagates as it is. Nothing of a failed capture is kept.
        """
        drv = driver()
        mode = drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        call("cuStreamBeginCapture", stream.handle, mode)
        failure: BaseException | None = None
        try:
            record()
        except BaseException as err:  # noqa: BLE001 - re-raised below, after ending capture
            failure = err
        ended = drv.cuStreamEndCapture(stream.handle)
        graph = ended[1] if len(ended) > 1 else None
        ended_ok = int(ended[0]) == 0
        if failure is not None or not ended_ok:
            if graph is not None:
                check(drv.cuGraphDestroy(graph), "cuGraphDestroy")
            if isinstance(failure, CudaError):
                raise CaptureFailed(failure.name, failure.call, "during capture") from failure
            if failure is not None:
                raise failure
            name = error_name(ended[0])
            raise CaptureFailed(name, "cuStreamEndCapture", "the capture was invalidated")
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
