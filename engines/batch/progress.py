"""What the user sees while a batch runs: a progress bar with an ETA when stdout is a terminal
(tqdm, imported only then: engines.lazy), else one plain line per take for logs and scripts:
"[3/20] door_creak_02.wav ok 0.4 s". Warnings and errors go to stderr either way, through the
bar when there is one so they never cut through it.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from engines.error_sentences import printable
from engines.lazy import lazy_import

tqdm = lazy_import("tqdm")


class Progress:
    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self._stream = stream or sys.stdout
        self._total = total
        self._done = 0
        self._bar: Any = None
        if total and _is_terminal(self._stream):
            self._bar = tqdm.tqdm(total=total, unit="take", file=self._stream, smoothing=0.1)

    def take_done(self, file: str, status: str, seconds: float) -> None:
        self._done += 1
        if self._bar is not None:
            self._bar.set_postfix_str(printable(file)[-40:], refresh=False)
            self._bar.update(1)
            return
        self._print(f"[{self._done}/{self._total}] {printable(file)} {status} {seconds:.1f} s",
                    self._stream)

    def say(self, kind: str, message: object) -> None:
        """A `kind: message` line on stderr (kind: warning, error, cancelled ...)."""
        self._print(f"{kind}: {printable(message)}", sys.stderr)

    def _print(self, line: str, stream: TextIO) -> None:
        try:
            if self._bar is not None:
                self._bar.write(line, file=stream)
            else:
                print(line, file=stream, flush=True)
        except (OSError, ValueError):  # a closed or broken pipe: the manifest still says it
            pass

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
