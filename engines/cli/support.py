"""What every command-line entry point shares: one-line refusals and exit codes.

Exit codes: 0 done; 1 failed while working; 2 refused (bad input, missing files: one line on
stderr naming the problem and the fix, nothing written); 130 cancelled.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterator

from engines.cli.pipes import quiet_on_closed_pipes
from engines.cli.words import say
from engines.error_sentences import printable, reason
from engines.errors import BackendError, CancelledError, StudioError
from engines.paths import log_file, setup_logging
from engines.secret_text import masked
from engines.settings import take_notices

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_CANCELLED = 0, 1, 2, 130

log = logging.getLogger(__name__)


class UsageError(Exception):
    """The command line was refused; the message is already one sentence."""


class CommandFailed(Exception):
    """The command could not do its work (exit 1); the message is already one sentence."""


def parser_class(help_command: str) -> type[argparse.ArgumentParser]:
    """An ArgumentParser whose errors are one line ending with where to get help."""

    class OneLineParser(argparse.ArgumentParser):
        def error(self, message: str) -> None:
            # A subcommand's parser points at its own help, which lists its options.
            where = f"{self.prog} --help" if self.prog.count(" ") > 2 else help_command
            raise UsageError(f"{message}; run `{where}` for the options.")

    return OneLineParser


def run_command(name: str, body: Callable[[], int]) -> int:
    """Run `body` with the log file set up; map every failure to one line and an exit code.
    Tracebacks go only to the log file, and nothing in here can raise."""
    _tolerant_streams()
    restore = quiet_on_closed_pipes()
    setup_logging(f"sa3-studio.{name}", console_level=logging.CRITICAL)
    try:
        code = body()
    except UsageError as exc:
        code = _say("error", exc, EXIT_BAD_INPUT)
    except CommandFailed as exc:
        log.info("%s failed: %s", name, exc, exc_info=True)
        code = _say("error", exc, EXIT_FAILED)
    except CancelledError as exc:
        code = _say("cancelled", exc, EXIT_CANCELLED)
    except KeyboardInterrupt:
        code = _say("cancelled", "interrupted; nothing incomplete was kept.", EXIT_CANCELLED)
    except BackendError as exc:
        log.info("%s failed: %s", name, exc, exc_info=True)
        code = _say("error", exc, EXIT_FAILED)
    except StudioError as exc:
        log.info("%s refused: %s", name, exc, exc_info=True)
        code = _say("error", exc, EXIT_BAD_INPUT)
    except Exception as exc:  # a bug: one line for the user, the traceback to the log file
        log.info("%s failed unexpectedly", name, exc_info=True)
        code = _say("error", _unexpected(name, exc), EXIT_FAILED)
    _print_notices()
    restore()
    return code


def argument_text(value: str, flag: str) -> str:
    """Text from the command line, which may hold bytes that are not UTF-8 (the OS hands them
    over as surrogate escapes): those become U+FFFD, with a warning, so the tokenizer and the
    library only ever see valid text."""
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        fixed = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        warn(f"{flag} held bytes that are not UTF-8 text; they were replaced with \ufffd.")
        return fixed


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (`kill`, a service manager) while the body runs is answered as Ctrl+C is: the
    body's cleanup runs (a server it started is stopped) and the command says it was
    interrupted, where the default action would end the process on the spot."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def warn(message: object) -> None:
    """One `warning: ...` line on stderr, printable whatever the message holds."""
    _print_line("warning", message)


def _say(kind: str, message: object, code: int) -> int:
    _print_line(kind, message)
    return code


def _print_line(kind: str, message: object) -> None:
    try:
        # an error's text may quote a connection line (libpq's do): never its password
        print(f"{kind}: {printable(masked(say(message)))}", file=sys.stderr)
    except Exception:  # a closed or broken stderr: nothing left to tell the user through
        pass


def _unexpected(name: str, exc: BaseException) -> str:
    happened, _ = reason(exc)
    where = log_file()
    details = f"details are in {where}" if where is not None else "run it again to retry"
    return f"the {name} command failed unexpectedly ({happened}); {details}."


def _print_notices() -> None:
    """Sentences other parts queued for the user (a damaged settings file set aside, ...)."""
    try:
        for notice in take_notices():
            warn(notice)
    except Exception:
        log.warning("could not print notices", exc_info=True)


def _tolerant_streams() -> None:
    """Arguments and file names may hold bytes that are not UTF-8 (surrogate escapes); print
    them as \\xff rather than fail with UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):
            pass
