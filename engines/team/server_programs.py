"""Running one of PostgreSQL's programs (initdb, pg_ctl, postgres --single) for `team init`,
and what Ctrl+C or SIGTERM in the middle of it leaves behind: nothing half done.

Each runs in a session of its own (a Ctrl+C at the terminal reaches only us), its output in a
file, never a pipe (the server pg_ctl starts would hold a pipe open forever). An interruption
(SIGINT, SIGTERM) that comes while one runs waits for it to finish - seconds - and is then
raised as it would have been: cut short, pg_ctl would leave a server starting that `pg_ctl
stop` cannot find yet, initdb a cluster that cannot start, and `postgres --single` a password
half set; a signal that lands while the program is being started would lose it altogether.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

_DEFERRED = (signal.SIGINT, signal.SIGTERM)


def run_program(command: list[str], *, cwd: Path, env: dict[str, str], stdin_text: str,
                timeout: float, owner: tuple[int, int] | None) -> tuple[int, str]:
    """(exit status, output) of `command`, run as `owner` (uid, gid) when given. OSError, or
    subprocess.TimeoutExpired (its process group killed), when it cannot run or runs too
    long."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as given:
        given.write(stdin_text)
        given.seek(0)
        with _interruptions_deferred():
            process = subprocess.Popen(
                command, stdin=given, stdout=out, stderr=subprocess.STDOUT, text=True,
                cwd=cwd, env=env, start_new_session=True,
                **({"user": owner[0], "group": owner[1], "extra_groups": []}
                   if owner is not None else {}))
            try:
                code = process.wait(timeout)
            except BaseException:  # past its time (or interrupted off the main thread)
                _kill_group(process)
                raise
        out.seek(0)
        return code, out.read()


@contextlib.contextmanager
def _interruptions_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM noted while the body runs and raised again, to the handlers that
    were there before, once it is done (signal handlers are the main thread's alone)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {signum: signal.signal(signum, lambda signum, frame: caught.append(signum))
                for signum in _DEFERRED}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        if caught:
            signal.raise_signal(caught[0])


def _kill_group(process: subprocess.Popen) -> None:
    """SIGKILL every process of `process`'s group (it leads a session of its own) and reap it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group has ended already
    process.wait()
