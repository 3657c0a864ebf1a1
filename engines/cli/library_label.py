"""`python main.py library label ID... [--category CATID] [--fx-name TEXT] [--creator ID]
[--source ID] [--clear FIELD...]`: the UCS labels kept takes carry out of the library, and
`library import-ucs FILE`: the user's UCS list that checks their CatIDs.

A take keeps the labels it was given (generate, batch, the window's Library page, this command);
`library export`, the window's drag and Save As and team publish name and label its files by them
without the flags again. Only the labels named change; a flag given as "" or a field named by
--clear takes that label off. The take's audio is never touched. Everything is checked before
anything changes (an unknown id, an unknown CatID when a UCS list is imported): a refusal is exit
2 with one sentence on stderr. stdout: one line a take, its labels as they are now.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engines.cli.support import EXIT_OK, UsageError, argument_text, warn
from engines.cli.words import say
from engines.delivery.labels import label_changes, unchecked_catid
from engines.delivery.ucs import import_ucs_csv
from engines.error_sentences import printable
from engines.errors import RequestError

if TYPE_CHECKING:
    from engines.store.library import ClipLibrary
    from engines.store.records import TakeRecord

# --clear's words -> the label each takes off ("all": every one).
CLEARABLE = {"category": "catid", "fx-name": "fx_name", "creator": "creator",
             "source": "source"}
_FLAGS = (("--category", "category", "catid"), ("--fx-name", "fx_name", "fx_name"),
          ("--creator", "creator", "creator"), ("--source", "source", "source"))


def add_label_parsers(commands: Any, take_id: Callable[[str], int]) -> None:
    label = commands.add_parser(
        "label", help="give takes UCS labels that every export, drag and publish uses",
        description="Keep UCS labels with takes: every later export, drag, Save As and team "
                    "publish names and labels their files by them. Only the labels given "
                    "change; \"\" or --clear takes one off. The audio is never touched.")
    label.add_argument("ids", nargs="+", type=take_id, metavar="ID")
    label.add_argument("--category", metavar="CATID",
                       help="UCS category ID, e.g. DOORWood (checked against your UCS list "
                            "when one is imported: `library import-ucs FILE`)")
    label.add_argument("--fx-name", metavar="TEXT", help="UCS FX name, e.g. \"Gravel Step\"")
    label.add_argument("--creator", metavar="ID", help="UCS creator ID, e.g. your initials")
    label.add_argument("--source", metavar="ID", help="UCS source ID, e.g. the project")
    label.add_argument("--clear", nargs="+", action="extend", default=[], metavar="FIELD",
                       choices=(*CLEARABLE, "all"),
                       help="take these labels off: " + ", ".join((*CLEARABLE, "all")))
    ucs = commands.add_parser(
        "import-ucs", help="import your UCS category list (its CSV export)",
        description="Keep a copy of your UCS list (the spreadsheet saved as CSV): CatIDs are "
                    "then checked against it, and it gives each its category and subcategory.")
    ucs.add_argument("file", type=Path, metavar="FILE", help="the UCS list saved as CSV")


def label_line(record: TakeRecord) -> str:
    """A take's labels in one line, for `label` and `show`."""
    labels = record.labels
    if not any(labels.values()):
        return "none"
    parts = []
    if labels["catid"]:
        known = " / ".join(v for v in (labels["category"], labels["subcategory"]) if v)
        parts.append(f"CatID {labels['catid']}" + (f" ({known})" if known else ""))
    for key, what in (("fx_name", "FX name"), ("creator", "creator"), ("source", "source")):
        if labels[key]:
            parts.append(f"{what} '{labels[key]}'" if key == "fx_name"
                         else f"{what} {labels[key]}")
    return ", ".join(parts)


def _given(args: argparse.Namespace) -> dict[str, str | None]:
    """Each label the command line gives (None: left as it is; '': taken off)."""
    given: dict[str, str | None] = {}
    cleared = set(CLEARABLE.values()) if "all" in args.clear else \
        {CLEARABLE[word] for word in args.clear}
    for flag, dest, key in _FLAGS:
        value = getattr(args, dest)
        if value is not None and key in cleared:
            raise UsageError(f"{flag} and --clear {flag[2:]} say opposite things; give one "
                             "of them.")
        given[key] = "" if key in cleared else (
            None if value is None else argument_text(value, flag))
    if all(value is None for value in given.values()):
        raise UsageError("No label was given; give --category, --fx-name, --creator or "
                         "--source (or --clear FIELD to take one off).")
    return given


def run_label(library: ClipLibrary, args: argparse.Namespace) -> int:
    given = _given(args)
    try:
        changes = label_changes(given["catid"], given["fx_name"], given["creator"],
                                given["source"])
        warning = unchecked_catid([changes.get("catid", "")])
    except RequestError as exc:
        said = str(exc)
        raise UsageError(f"--category: {said}" if given["catid"] else said) from exc
    library.require_writable()
    ids = list(dict.fromkeys(args.ids))
    for take in ids:  # every id checked before any take changes
        library.get(take)
    if warning is not None:
        warn(say(warning))
    for take in ids:
        record = library.set_labels(take, changes)
        print(printable(f"take #{record.id} labels: {label_line(record)}"))
    return EXIT_OK


def run_import_ucs(_library: ClipLibrary, args: argparse.Namespace) -> int:
    ucs = import_ucs_csv(args.file)  # RequestError: exit 2, the list imported before kept
    print(printable(f"Imported the UCS list: {len(ucs)} categories; category IDs are "
                    "checked against it from now on."))
    return EXIT_OK


LABEL_COMMANDS = {"label": run_label, "import-ucs": run_import_ucs}
