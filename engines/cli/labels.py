"""The labelling flags of `generate`, `batch` and `library export`: a UCS CatID, FX name,
creator and source IDs that go into the file names (`--name ucs`) and the metadata of every
file delivered (bext, iXML, Vorbis comments)."""

from __future__ import annotations

import argparse

from engines.cli.support import UsageError, argument_text
from engines.delivery.labels import make_labels
from engines.delivery.take import Labels
from engines.errors import RequestError


def add_label_arguments(parser: argparse.ArgumentParser, *, category: bool = True) -> None:
    group = parser.add_argument_group("labels (file names and the metadata sound libraries "
                                      "read)")
    if category:
        group.add_argument("--category", default="", metavar="CATID",
                           help="UCS category ID, e.g. DOORWood (checked against the UCS list "
                                "imported in Settings, which gives CATEGORY and SUBCATEGORY)")
    group.add_argument("--fx-name", default="", metavar="TEXT",
                       help="UCS FX name (short; default: the take's name)")
    group.add_argument("--creator", default="", metavar="ID",
                       help="UCS creator ID (default: from settings)")
    group.add_argument("--source", default="", metavar="ID",
                       help="UCS source ID (default: from settings)")


def labels_from(args: argparse.Namespace) -> Labels:
    """Labels from the flags; UsageError (one sentence) for an unknown CatID."""
    values = {flag: argument_text(getattr(args, dest, "") or "", flag)
              for flag, dest in (("--category", "category"), ("--fx-name", "fx_name"),
                                 ("--creator", "creator"), ("--source", "source"))}
    try:
        return make_labels(values["--category"], values["--fx-name"], values["--creator"],
                           values["--source"])
    except RequestError as exc:
        raise UsageError(f"--category: {str(exc)}" if values["--category"] else str(exc)) \
            from exc
