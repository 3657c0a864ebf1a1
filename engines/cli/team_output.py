"""What `python main.py team ...` prints: tables of team takes, JSON (engines.team.entries
documents its shape), the lines `team init` hands out, and what a publish did."""

from __future__ import annotations

import sys

from engines.cli.support import warn
from engines.cli.words import say
from engines.error_sentences import printable
from engines.team.connection import TEAM_ENV
from engines.team.entries import TeamEntry
from engines.team.migrations import LATEST
from engines.team.provisioning import TeamSetup
from engines.team.service import PublishReport
from engines.text_display import terminal_json

PROMPT_WIDTH = 50


def say_lines(*lines: str) -> None:
    """Lines on stdout, control characters from prompts and names escaped."""
    for line in lines:
        for part in str(line).split("\n"):
            print(printable(part))


def json_text(payload: object, indent: int | None = 2) -> str:
    """JSON for a terminal: C1 controls, DEL, bidirectional and zero-width characters escaped
    too (terminals act on them; engines.text_display)."""
    return terminal_json(payload, indent)


def say_json(payload: object, indent: int | None = 2) -> None:
    print(json_text(payload, indent))
    sys.stdout.flush()


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


def say_entries(entries: list[TeamEntry], as_json: bool, *, header: bool = True,
                lines: bool = False, files: bool = False) -> None:
    """Team takes as a table, a JSON array, or (`lines`) one JSON object a line."""
    if as_json:
        if lines:
            for entry in entries:
                say_json(entry.as_json(), indent=None)
        else:
            say_json([entry.as_json() for entry in entries])
        return
    if header:
        say_lines(f"{'ID':>7}  {'PUBLISHED (UTC)':16}  {'DESIGNER':12} {'MODEL':9} "
                  f"{'SECONDS':>7} {'RATING':9} {'DIST':>6}  {'TAGS':20} PROMPT / NAME")
    for e in entries:
        rating = f"{e.rating_average:.1f} ({e.rating_count})" if e.rating_count else "-"
        distance = f"{e.distance:.3f}" if e.distance is not None else "-"
        say_lines(f"{e.id:>7}  {e.published[:16].replace('T', ' '):16}  "
                  f"{_clip(e.designer, 12):12} {_clip(e.model, 9):9} {e.seconds:>7.2f} "
                  f"{rating:9} {distance:>6}  {_clip(', '.join(e.tags) or '-', 20):20} "
                  f"{_clip(e.title(), PROMPT_WIDTH)}")
        for file in e.files if files else []:
            say_lines(f"{'':9}{file.role:18} {file.name}  ({file.size} bytes, sha256 "
                      f"{file.sha256[:16]}...)")
    if header:
        say_lines(f"{len(entries)} team take{'s' if len(entries) != 1 else ''} shown")
    sys.stdout.flush()


def say_setup(setup: TeamSetup, as_json: bool) -> None:
    if as_json:
        say_json({"publisher": setup.publisher_line, "reader": setup.reader_line,
                  "store": str(setup.store), "schema": LATEST, "applied": setup.schema_steps,
                  "started": setup.started})
        return
    applied = (f"schema steps {', '.join(map(str, setup.schema_steps))} applied"
               if setup.schema_steps else "schema up to date")
    say_lines(f"Team library ready (schema {LATEST}, {applied}"
              f"{', server started' if setup.started else ''}); audio store: {setup.store}",
              "",
              f"Publisher connection line (paste into Settings, or set {TEAM_ENV} to it):",
              f"  {setup.publisher_line}",
              "Read-only connection line (browse, search and fetch only):",
              f"  {setup.reader_line}",
              "",
              "Designers whose shared drive is mounted elsewhere add ?store=FOLDER to the line.")


def say_report(report: PublishReport, as_json: bool) -> None:
    if as_json:
        say_json({"published": [{"local_id": local, "team_id": team, "new": new,
                                 "relabelled": team in report.relabelled}
                                for local, team, new in report.published],
                  "waiting": report.waiting, "problems": report.problems,
                  "notices": report.notices, "unreachable": report.unreachable})
    else:
        for local, team, new in report.published:
            what = ("published as" if new else "relabelled in the team library: new files "
                    "and labels for" if team in report.relabelled
                    else "already in the team library as")
            source = f"take #{local}" if local is not None else "a queued take"
            say_lines(f"{source} {what} team take #{team}")
        if report.waiting:
            say_lines(f"{report.waiting} take{'s' if report.waiting != 1 else ''} waiting in "
                      "the outbox")
    for problem in report.problems + report.notices:
        warn(say(problem))
    if report.unreachable:
        warn(say(report.unreachable))
