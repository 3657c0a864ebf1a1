"""The labelling flags of `generate`, `batch` and `library export`: a UCS CatID, FX name,
creator and source IDs that go into the file names (`--name ucs`) and the metadata of every
file delivered (bext, iXML, Vorbis comments)."""

from __future__ import annotations

import argparse

from engines.cli.support import UsageError, argument_text, warn
from engines.cli.words import say
from engines.delivery.delivery_take import Labels
from engines.delivery.labels import label_changes, make_labels, unchecked_catid
from engines.errors import RequestError


def add_label_arguments(parser: argparse.ArgumentParser, *, category: bool = True,
                        kept: bool = False) -> None:
    """The label flags; `kept`: for takes that keep labels of their own (library export),
    whose defaults are those."""
    group = parser.add_argument_group("labels (file names and the metadata sound libraries "
                                      "read)")
    own = "the take's own (`library label`), else " if kept else ""
    if category:
        group.add_argument("--category", default="", metavar="CATID",
                           help="UCS category ID, e.g. DOORWood (checked against the UCS list "
                                "imported in Settings or by `library import-ucs`, which gives "
                                "CATEGORY and SUBCATEGORY)")
    group.add_argument("--fx-name", default="", metavar="TEXT",
                       help=f"UCS FX name (short; default: {own}the take's name)")
    group.add_argument("--creator", default="", metavar="ID",
                       help=f"UCS creator ID (default: {own}from settings)")
    group.add_argument("--source", default="", metavar="ID",
                       help=f"UCS source ID (default: {own}from settings)")


_FLAGS = (("--category", "category"), ("--fx-name", "fx_name"), ("--creator", "creator"),
          ("--source", "source"))


def labels_from(args: argparse.Namespace, *, warn_unchecked: bool = True) -> Labels:
    """Labels from the flags; UsageError (one sentence) for an unknown CatID. A CatID no UCS
    list could check is warned about once here (`warn_unchecked`), unless the caller says it
    itself (a batch, which has the rows' CatIDs too)."""
    values = {flag: argument_text(getattr(args, dest, "") or "", flag) for flag, dest in _FLAGS}
    try:
        labels = make_labels(values["--category"], values["--fx-name"], values["--creator"],
                             values["--source"])
        warning = unchecked_catid([labels.catid]) if warn_unchecked else None
    except RequestError as exc:
        raise UsageError(f"--category: {str(exc)}" if values["--category"] else str(exc)) \
            from exc
    if warning is not None:
        warn(say(warning))
    return labels


def given_labels(args: argparse.Namespace) -> dict[str, str]:
    """The labels the flags give again for takes that keep their own (library export): only
    the flags given, checked (an unknown CatID refused, UsageError; one no list could check
    warned about once)."""
    values = {dest: argument_text(getattr(args, dest, "") or "", flag) or None
              for flag, dest in _FLAGS}
    try:
        changes = label_changes(values["category"], values["fx_name"], values["creator"],
                                values["source"])
        warning = unchecked_catid([changes.get("catid", "")])
    except RequestError as exc:
        raise UsageError(f"--category: {str(exc)}" if values["category"] else str(exc)) \
            from exc
    if warning is not None:
        warn(say(warning))
    return changes
