"""`python main.py team add-designer NAME --data DIR | --admin LINE`: a designer's own
publisher login (engines.team.designers), bound to NAME by the server, and its connection line.
With a login of their own, nobody else (not the shared publisher login either) can rate, tag or
publish as that designer."""

from __future__ import annotations

import argparse
from pathlib import Path

from engines.cli.support import EXIT_OK, UsageError, argument_text
from engines.cli.team_output import say_json, say_lines
from engines.error_sentences import printable
from engines.lazy import lazy_import
from engines.team.binaries import server_bindir
from engines.team.connection import checked_fields
from engines.team.designers import add_designer
from engines.team.provisioning import DEFAULT_DATABASE
from engines.team.server import LocalServer

conninfo = lazy_import("psycopg.conninfo")


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("add-designer",
                                 help="a designer's own publisher login; print its line")
    parser.add_argument("name", metavar="NAME", help="the designer, as the team knows them")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--data", type=Path, metavar="DIR", help="the server's folder")
    where.add_argument("--admin", metavar="LINE",
                       help="an existing server: a superuser's connection line")
    parser.add_argument("--host", metavar="NAME", help="the server's name in the line printed")
    parser.add_argument("--server-binaries", type=Path, metavar="DIR")
    parser.add_argument("--database", default=DEFAULT_DATABASE, metavar="NAME")
    parser.add_argument("--json", action="store_true")


def run_add_designer(args: argparse.Namespace) -> int:
    name = argument_text(args.name, "NAME")
    if args.data is not None:
        data = args.data.expanduser().absolute()
        server = LocalServer(data, server_bindir(args.server_binaries))
        if not server.initialized:
            raise UsageError(f"{printable(args.data)} holds no team server; give the folder "
                             "`team init --data` made.")
        admin, host, port = (server.admin_conninfo(args.database), args.host or "localhost",
                             server.port() or 5432)
    else:
        fields = checked_fields(args.admin)
        admin = conninfo.make_conninfo(args.admin, dbname=args.database)
        given = str(fields.get("host") or "localhost")
        host = args.host or ("localhost" if given.startswith("/") else given)  # a socket folder
        port = int(fields.get("port") or 5432)
    made = add_designer(admin, name, host, port)
    if args.json:
        say_json({"designer": made.designer, "login": made.login, "line": made.line})
    else:
        say_lines(f"Designer '{made.designer}' publishes through a login of their own "
                  f"({made.login}); hand them this line (any line printed for them before no "
                  "longer works):", made.line)
    return EXIT_OK
