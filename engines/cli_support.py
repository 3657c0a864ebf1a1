"""What every command-line entry point shares: one-line refusals and exit codes.

Exit codes: 0 done; 1 failed while working; 2 refused (bad input, missing files: one line on
stderr naming the problem and the fix, nothing written); 130 cancelled.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable

from engines.errors import BackendError, CancelledError, StudioError

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_CANCELLED = 0, 1, 2, 130

log = logging.getLogger(__name__)


class UsageError(Exception):
    """The command line was refused; the message is already one sentence."""


def parser_class(help_command: str) -> type[argparse.ArgumentParser]:
    """An ArgumentParser whose errors are one line ending with where to get help."""

    class OneLineParser(argparse.ArgumentParser):
        def error(self, message: str) -> None:
            raise UsageError(f"{message}; run `{help_command}` for the options.")

    return OneLineParser


def run_command(name: str, body: Callable[[], int]) -> int:
    """Run `body` with the log file set up; map every failure to one line and an exit code.
    Tracebacks go only to the log file."""
    from engines.paths import setup_logging

    setup_logging(f"sa3-studio.{name}", console_level=logging.CRITICAL)
    try:
        return body()
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except CancelledError as exc:
        print(f"cancelled: {exc}", file=sys.stderr)
        return EXIT_CANCELLED
    except KeyboardInterrupt:
        print("cancelled: interrupted; nothing incomplete was kept.", file=sys.stderr)
        return EXIT_CANCELLED
    except BackendError as exc:
        log.info("%s failed: %s", name, exc, exc_info=True)
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except StudioError as exc:
        log.info("%s refused: %s", name, exc, exc_info=True)
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # a bug: one line for the user, the traceback to the log file
        log.info("%s failed unexpectedly", name, exc_info=True)
        from engines.paths import logs_dir

        print(f"error: the {name} command failed unexpectedly ({type(exc).__name__}: {exc}); "
              f"details are in {logs_dir()}.", file=sys.stderr)
        return EXIT_FAILED
