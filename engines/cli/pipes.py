"""A reader that closes our stdout (`library list | head -1`, `batch ... | true`) is not a
failure: well-behaved Unix tools stop talking and let the work they are doing finish.

Python raises BrokenPipeError on the next write (or flush) instead, and again while the
interpreter shuts down. So stdout and stderr are wrapped while a command runs: the first EPIPE
points the stream's file descriptor at os.devnull (the recipe in Python's `signal` docs), the
buffered text and everything written after it go there, nothing is printed about it, and the
command ends with the exit code its work earns.
"""

from __future__ import annotations

import errno
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class PipeSafeStream:
    """A text stream that turns a closed pipe into silence; everything else is the stream's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.reader_gone = False

    def write(self, text: str) -> int:
        if not self.reader_gone:
            try:
                return self._stream.write(text)
            except OSError as err:
                self._closed(err)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self._stream.flush()
            except OSError as err:
                self._closed(err)

    def _closed(self, err: OSError) -> None:
        if not isinstance(err, BrokenPipeError) and err.errno != errno.EPIPE:
            raise err
        self.reader_gone = True
        log.info("the reader of %s closed it; its output is dropped from here on",
                 getattr(self._stream, "name", "a stream"))
        try:  # what is still buffered (and the flush at exit) goes nowhere, quietly
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self._stream.fileno())
            finally:
                os.close(devnull)
        except (OSError, ValueError, AttributeError):  # no file descriptor: dropped above
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def quiet_on_closed_pipes() -> Callable[[], None]:
    """Wrap sys.stdout and sys.stderr (see the module docstring); returns the function that
    flushes them and puts the originals back. Wrapping twice is harmless."""
    saved = (sys.stdout, sys.stderr)
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, PipeSafeStream):
            setattr(sys, name, PipeSafeStream(stream))

    def restore() -> None:
        for name, original in zip(("stdout", "stderr"), saved, strict=True):
            current = getattr(sys, name)
            try:
                if current is not None:
                    current.flush()
            except (OSError, ValueError):  # a stream closed under us: nothing left to say
                pass
            setattr(sys, name, original)

    return restore
