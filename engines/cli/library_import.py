"""`python main.py library import [FOLDER...] [--watch] [--no-wait]`: the designer's own sound
folders, referenced in place (engines.sound_import: never copied, never modified).

Without a folder every folder imported before is rescanned. Progress goes to stderr: one line
rewritten in place on a terminal, one line per stage otherwise (a log, not a bar). The result
goes to stdout: the counts, each file skipped and why, each folder refused. Then thumbnails and
sound embeddings are made, and the command waits for them unless --no-wait (then the next
`library import` or the window makes them). --watch then keeps rescanning on every change until
Ctrl+C (exit 130, as every interrupted command).

Exit codes: 0 done (files that are no sound are skipped and listed, not an error); 2 a folder
given was refused (missing, a file, unreadable) - the other folders were still imported - or
nothing was given and nothing was imported before.
"""

from __future__ import annotations

import argparse
import sys
import threading

from engines.cli.support import EXIT_BAD_INPUT, EXIT_OK, UsageError, warn
from engines.errors import CancelledError
from engines.sound_import import ImportProgress, ImportReport, import_folders, make_sound_extras
from engines.sound_import.watch import watch_folders, watching_how

SKIPPED_SHOWN = 20  # files listed by name; the rest are counted (the log file has them all)
_PHASES = {"listing": "listing files", "reading": "reading headers", "writing": "writing",
           "extras": "thumbnails and sound embeddings"}


def add_import_parser(commands: argparse._SubParsersAction) -> None:
    command = commands.add_parser(
        "import", help="reference your own sound folders in place (never copied or changed)")
    command.add_argument("folders", nargs="*", metavar="FOLDER",
                         help="folders of sound files (WAV, BWF, FLAC, Ogg, AIFF, MP3); none: "
                              "rescan every folder imported before")
    command.add_argument("--watch", action="store_true",
                         help="keep rescanning when files change, until Ctrl+C")
    command.add_argument("--no-wait", action="store_true",
                         help="do not wait for thumbnails and sound embeddings (made by the "
                              "next import or by the window)")


class _ProgressLine:
    """Progress on stderr: rewritten in place on a terminal, one line per stage otherwise."""

    def __init__(self) -> None:
        self._tty = sys.stderr.isatty()
        self._phase: str | None = None

    def __call__(self, step: ImportProgress) -> None:
        if step.phase == "extras" and not step.total:
            return  # nothing to make: no stage to announce
        words = _PHASES.get(step.phase, step.phase)
        count = f"{step.done}/{step.total}" if step.total else f"{step.done}"
        if self._tty:
            sys.stderr.write(f"\r{words}: {count}\033[K")
            sys.stderr.flush()
        elif step.phase != self._phase:
            print(f"{words}...", file=sys.stderr)
        self._phase = step.phase

    def end(self) -> None:
        if self._tty and self._phase is not None:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
        self._phase = None


def run_import(library, args: argparse.Namespace) -> int:
    if not args.folders and not library.sound_folders():
        raise UsageError("No sound folder has been imported yet; give one, e.g. `python "
                         "main.py library import ~/sounds`.")
    progress = _ProgressLine()
    report = _scan(library, args.folders or None, progress)
    if not args.no_wait:
        _extras(library, progress)
    else:
        print("Thumbnails and sound embeddings were left for later (the next `library import` "
              "or the window makes them).")
    if args.watch:
        _watch(library, report.folders, progress)
    return EXIT_BAD_INPUT if report.folder_problems else EXIT_OK


def _scan(library, folders: list[str] | None, progress: _ProgressLine) -> ImportReport:
    try:
        report = import_folders(library, folders, progress=progress)
    finally:
        progress.end()
    if not report.folders:  # every folder given was refused: nothing was done
        raise UsageError(" ".join(report.folder_problems))
    for problem in report.folder_problems:
        warn(problem)
    print(report.sentence())
    for path, reason in report.skipped_files[:SKIPPED_SHOWN]:
        print(f"  skipped {path}: {reason}.")
    if len(report.skipped_files) > SKIPPED_SHOWN:
        print(f"  ... and {len(report.skipped_files) - SKIPPED_SHOWN} more skipped (the log "
              "file names them).")
    if report.ignored:
        print(f"  {report.ignored} other file{'s' if report.ignored != 1 else ''} (not sound) "
              "left alone.")
    return report


def _extras(library, progress: _ProgressLine) -> None:
    try:
        extras = make_sound_extras(library, progress=progress)
    finally:
        progress.end()
    if extras.thumbnails or extras.embeddings or extras.failed:
        failed = f"; {extras.failed} could not be read" if extras.failed else ""
        print(f"Thumbnails for {extras.thumbnails} and sound embeddings for "
              f"{extras.embeddings} sounds made ({extras.seconds:.1f} s){failed}.")


def _watch(library, roots: list[str], progress: _ProgressLine) -> None:
    how = "as files change" if watching_how() == "events" else "every few seconds"
    print(f"Watching {len(roots)} folder{'s' if len(roots) != 1 else ''}, rescanning {how}; "
          "press Ctrl+C to stop.", flush=True)

    def rescan() -> None:
        report = import_folders(library, roots)
        if report.imported or report.updated or report.moved or report.removed \
                or report.folder_problems:
            for problem in report.folder_problems:
                warn(problem)
            print(report.sentence(), flush=True)
            _extras(library, progress)

    try:
        watch_folders(roots, rescan, threading.Event())
    except KeyboardInterrupt:
        raise CancelledError("stopped watching; every change seen so far is in the "
                             "library.") from None
