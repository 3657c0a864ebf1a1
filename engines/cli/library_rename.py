"""`python main.py library rename ID NAME`: give a kept take a name, as F2 does in the window.

The name is stored in the library and every name derived from the take follows it: `library list`
and `show`, export file names ({name} in a name template, the default `{name}_{n:02}`), the
files' embedded title and the drag name. An empty NAME ("") takes the name off again, so the
prompt names the take. stdout: one line saying the take's new name.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engines.cli.support import EXIT_OK, argument_text
from engines.error_sentences import printable

if TYPE_CHECKING:
    from engines.store.library import ClipLibrary

MAX_NAME_CHARS = 200


def add_rename_parser(commands: Any, take_id: Callable[[str], int]) -> None:
    rename = commands.add_parser("rename", help="give a take a name (\"\" takes it off)")
    rename.add_argument("take", type=take_id, metavar="ID")
    rename.add_argument("name", metavar="NAME",
                        help="the new name; exported files and lists use it from now on")


def run_rename(library: ClipLibrary, args: argparse.Namespace) -> int:
    name = " ".join(argument_text(args.name, "NAME").split())[:MAX_NAME_CHARS]
    record = library.update(args.take, name=name)
    if record.name:
        print(printable(f"take #{record.id} is now named '{record.name}'"))
    else:
        print(printable(f"take #{record.id} has no name now; its prompt names it"))
    return EXIT_OK
