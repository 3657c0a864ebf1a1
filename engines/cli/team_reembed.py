"""`python main.py team reembed`: the team library's old sound embeddings made again from their
audio (engines.team.reembedding), with progress on stderr and what was done on stdout. Exit 0
when every stale entry is current now; 1 when some could not be done (each said in one line);
2 for a login that may only read."""

from __future__ import annotations

import sys

from engines.cli.support import EXIT_FAILED, EXIT_OK, warn
from engines.cli.team_output import say_lines
from engines.team.service import TeamLibrary


class _Progress:
    """"done/total" rewritten in place on a terminal; elsewhere a line at each tenth, so a log
    of a long run shows it moving without a line per entry."""

    def __init__(self) -> None:
        self._tty = sys.stderr.isatty()
        self._shown = -1

    def __call__(self, done: int, total: int) -> None:
        if self._tty:
            self._shown = done
            sys.stderr.write(f"\rMaking sound embeddings again: {done}/{total}")
            sys.stderr.flush()
            return
        tenth = done * 10 // max(total, 1)
        if tenth != self._shown:
            self._shown = tenth
            print(f"Making sound embeddings again: {done}/{total}", file=sys.stderr)

    def end(self) -> None:
        if self._tty and self._shown != -1:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def run_reembed(team: TeamLibrary) -> int:
    progress = _Progress()
    try:
        report = team.reembed(progress)
    finally:
        progress.end()
    if not report.stale:
        say_lines(f"Every team take's sound embedding is of recipe {report.version} or newer "
                  "already; nothing to do.")
        return EXIT_OK
    others = (f"; {report.current} had been made current by someone else meanwhile"
              if report.current else "")
    say_lines(f"{report.updated} of {report.stale} team takes' sound embeddings made again "
              f"(recipe {report.version}){others}.")
    for problem in report.problems:
        warn(problem)
    return EXIT_FAILED if report.problems else EXIT_OK
