"""The command line run in this test process, as a user's shell would run `python main.py ARGV`:
the same argv, environment, working folder, umask and stdin, with stdout, stderr and the exit
code captured as bytes. A Python start costs 2-4 s on a 2-core machine (most of it imports);
calling `main.main(argv)` costs milliseconds once the modules are loaded, so command-line
behaviour is tested here wherever the process boundary itself is not what is tested (signals,
kills, closed pipes and the installed entry points keep real subprocesses, marked `slow`).

What a fresh process would not share with the test process is put back after every call: the
environment, the working folder, the umask, sys.argv/stdin/stdout/stderr, the warning filters
and the log handlers the command installed. What it writes to file descriptors 1 and 2 from C
(onnxruntime, a fault handler) is captured too and appended to the stream it went to.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MAIN = REPO / "main.py"

# Python's own warning filters in a fresh process (no -W, no PYTHONWARNINGS): what a user sees.
_PYTHON_DEFAULT_FILTERS = (("default", DeprecationWarning, "__main__"),
                           ("ignore", DeprecationWarning, None),
                           ("ignore", PendingDeprecationWarning, None),
                           ("ignore", ImportWarning, None),
                           ("ignore", ResourceWarning, None))


# SA3_TEST_CLI_PROCESS=1 runs every call in a real `python main.py` process instead: the same
# tests, to show that the in-process run judges the command as a process would.
PROCESS_ENV = "SA3_TEST_CLI_PROCESS"


class CliTimeout(BaseException):
    """Raised in the command past its time limit (a BaseException: no `except Exception` in the
    command can swallow it)."""


def run_cli(argv: Sequence[str | bytes], *, env: Mapping[str, str] | None = None,
            cwd: Path | str | None = None, stdin: bytes | str | None = None,
            umask: int | None = None, timeout: float | None = 300.0,
            text: bool = True) -> subprocess.CompletedProcess:
    """`python main.py ARGV` in this process. `env` is the command's whole environment (None:
    this process's); bytes in argv reach the command as a process would get them (surrogate
    escapes). Returns a CompletedProcess (returncode None when it ran past `timeout`)."""
    if os.environ.get(PROCESS_ENV) == "1":
        return _in_a_process(argv, env, cwd, stdin, umask, timeout, text)
    import main as entry

    args = [os.fsdecode(a) for a in argv]
    stdin_bytes = stdin.encode() if isinstance(stdin, str) else (stdin or b"")
    out_buf, err_buf = io.BytesIO(), io.BytesIO()
    # A process's stdout is strict UTF-8 (a surrogate in print() is a crash the user sees);
    # stderr writes them as \udcxx escapes.
    out = io.TextIOWrapper(out_buf, encoding="utf-8", errors="strict", write_through=True)
    err = io.TextIOWrapper(err_buf, encoding="utf-8", errors="backslashreplace",
                           write_through=True)
    code: int | None
    with _fd_captured(1) as c_out, _fd_captured(2) as c_err, \
            _process_state(args, env, cwd, umask, stdin_bytes, out, err):
        try:
            with _time_limit(timeout):
                code = _exit_code(entry.main(args), err)
        except SystemExit as exc:
            code = _exit_code(exc.code, err)
        except CliTimeout:
            code = None
        except KeyboardInterrupt:
            raise
        except BaseException:  # what the interpreter would print: a traceback, exit 1
            traceback.print_exc(file=err)
            code = 1
        with contextlib.suppress(Exception):
            out.flush()
            err.flush()
    stdout = out_buf.getvalue() + c_out.read()
    stderr = err_buf.getvalue() + c_err.read()
    if text:
        return subprocess.CompletedProcess(args, code, stdout.decode("utf-8", "replace"),
                                           stderr.decode("utf-8", "replace"))
    return subprocess.CompletedProcess(args, code, stdout, stderr)


def _in_a_process(argv: Sequence[str | bytes], env: Mapping[str, str] | None,
                  cwd: Path | str | None, stdin: bytes | str | None, umask: int | None,
                  timeout: float | None, text: bool) -> subprocess.CompletedProcess:
    data = stdin.encode() if isinstance(stdin, str) else (stdin or b"")
    try:
        done = subprocess.run([sys.executable, str(MAIN), *argv], env=env, input=data,
                              cwd=cwd if cwd is not None else REPO, capture_output=True,
                              timeout=timeout,
                              preexec_fn=None if umask is None else (lambda: os.umask(umask)))
    except subprocess.TimeoutExpired as expired:
        done = subprocess.CompletedProcess(argv, None, expired.stdout or b"",
                                           expired.stderr or b"")
    if text:
        return subprocess.CompletedProcess(done.args, done.returncode,
                                           done.stdout.decode("utf-8", "replace"),
                                           done.stderr.decode("utf-8", "replace"))
    return done


def _exit_code(value: object, err: io.TextIOWrapper) -> int:
    """The exit status Python gives sys.exit(value) / a main() returning value."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=err)
    return 1


class _FdText:
    def __init__(self) -> None:
        self.data = b""

    def read(self) -> bytes:
        return self.data


@contextlib.contextmanager
def _fd_captured(fd: int) -> Iterator[_FdText]:
    """What C code writes to `fd` while the command runs."""
    found = _FdText()
    try:
        saved = os.dup(fd)
    except OSError:  # no such descriptor: nothing to capture
        yield found
        return
    with tempfile.TemporaryFile() as spool:
        os.dup2(spool.fileno(), fd)
        try:
            yield found
        finally:
            os.dup2(saved, fd)
            os.close(saved)
            spool.seek(0)
            found.data = spool.read()


@contextlib.contextmanager
def _process_state(args: list[str], env: Mapping[str, str] | None, cwd: Path | str | None,
                   umask: int | None, stdin: bytes, out: io.TextIOWrapper,
                   err: io.TextIOWrapper) -> Iterator[None]:
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_streams = sys.argv, sys.stdin, sys.stdout, sys.stderr
    saved_umask = os.umask(umask) if umask is not None else None
    sys.argv = [str(MAIN), *args]
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    sys.stdout, sys.stderr = out, err
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    try:
        os.chdir(cwd if cwd is not None else REPO)
        with warnings.catch_warnings():
            warnings.resetwarnings()
            for action, category, module in reversed(_PYTHON_DEFAULT_FILTERS):
                warnings.filterwarnings(action, category=category, module=module or "")
            yield
    finally:
        _drop_command_logging()
        sys.argv, sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.chdir(saved_cwd)
        if saved_umask is not None:
            os.umask(saved_umask)
        os.environ.clear()
        os.environ.update(saved_env)
        _forget_probed_gpu()


def _drop_command_logging() -> None:
    """The command's log handlers point at its data folder and its stderr: a process would end
    with them, so they end here (a later test must not write into this one's folders)."""
    import logging

    from engines import paths

    root = logging.getLogger()
    for handler in paths._installed:
        root.removeHandler(handler)
        with contextlib.suppress(Exception):
            handler.close()
    paths._installed.clear()
    paths._log_file = None


def _forget_probed_gpu() -> None:
    from engines import gpu

    gpu.probe_gpu.cache_clear()


@contextlib.contextmanager
def _time_limit(seconds: float | None) -> Iterator[None]:
    """Raise CliTimeout in the command after `seconds` (SIGALRM: it also breaks a blocking
    open() of a FIFO); no limit off the main thread."""
    if (not seconds or not hasattr(signal, "SIGALRM")
            or threading.current_thread() is not threading.main_thread()):
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise CliTimeout(f"the command ran past {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)

