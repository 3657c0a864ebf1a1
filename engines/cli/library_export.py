"""`python main.py library export ID... --to DIR | --zip FILE`: takes out of the library, raw or
finished (issue 11), named as they always were or by a name template.

With finishing flags (the same as `generate`'s) every take is finished by them; without, a take
with a stored finishing chain is finished by that chain (said on stdout: `--raw` gives the take
as it was generated); a take without one is copied as it is. Loops are remade by the take's model
set when it runs here (engines.store.export_plan), else by crossfade, with a warning.

stdout: one line a file written, then, for a finished one, an indented line saying how.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engines.audio_io import float_from_pcm16
from engines.cli.finishing import add_finish_arguments, finish_settings
from engines.cli.labels import add_label_arguments, given_labels
from engines.cli.support import EXIT_OK, UsageError, argument_text, warn
from engines.delivery.delivery_take import Labels
from engines.delivery.labels import make_labels
from engines.delivery.names import check_template
from engines.error_sentences import printable, sentence, shown
from engines.errors import RequestError
from engines.finishing_summary import chain_summary, measured
from engines.models.inventory import default_catalog
from engines.paths import data_dir
from engines.store.export_plan import ExportOptions

if TYPE_CHECKING:
    import numpy as np

    from engines.generator import Generator
    from engines.request import GenerationRequest
    from engines.store.library import ClipLibrary
    from engines.store.records import TakeRecord


def add_export_parser(commands: Any, take_id: Callable[[str], int]) -> None:
    export = commands.add_parser(
        "export", help="copy takes with JSON sidecars, raw or finished",
        description="Copy takes with JSON sidecars. Finishing flags finish every take; without "
                    "them a take's stored finishing chain is used (--raw: never).")
    export.add_argument("ids", nargs="+", type=take_id, metavar="ID")
    target = export.add_mutually_exclusive_group(required=True)
    target.add_argument("--to", type=Path, metavar="DIR", help="a folder (created if missing)")
    target.add_argument("--zip", type=Path, metavar="FILE", help="one zip file instead")
    export.add_argument("--name", metavar="TEMPLATE",
                        help="file names from a template: {name} {prompt} {seed} {n:02} "
                             "(the take's variation number) {preset} {date} {category} "
                             "{catid} {fxname} {creator} {source}, or ucs; e.g. "
                             "\"{category}_{name}_{n:02}\"")
    export.add_argument("--category", default="", metavar="TEXT",
                        help="UCS category ID, e.g. DOORWood: the name's {category} and "
                             "the files' CATID (checked against an imported UCS list); "
                             "default: the one the take keeps (`library label`)")
    export.add_argument("--raw", action="store_true",
                        help="the takes as generated, even those with a stored finishing chain")
    add_finish_arguments(export)
    add_label_arguments(export, category=False, kept=True)


class _TakeModels:
    """generate(request) for loops by the take's model set: a Generator over the installed
    models, made on the first loop that needs it (most exports never do)."""

    def __init__(self) -> None:
        self._generator: Generator | None = None

    def __call__(self, request: GenerationRequest) -> np.ndarray:
        if self._generator is None:
            # Here, not at the top: Generator loads all 35 backend modules, which --help need not.
            from engines.generator import Generator

            self._generator = Generator(default_catalog())
        return float_from_pcm16(self._generator.generate(request).pcm)

    def close(self) -> None:
        if self._generator is not None:
            self._generator.close()


def _options(args: argparse.Namespace, models: _TakeModels,
             written: Callable[[TakeRecord, Path, dict], None]) -> ExportOptions:
    """ExportOptions from the flags; UsageError / RequestError (exit 2) before anything is
    read or written."""
    fmt = args.format
    args.format = None  # a format alone is no chain: with it a stored chain keeps its steps
    settings = finish_settings(args, data_dir)
    if settings is not None and fmt is not None:
        settings = replace(settings, format=fmt)
    if args.raw and (settings is not None or fmt is not None):
        raise UsageError("--raw exports the takes as generated, so it cannot be combined with "
                         "finishing flags; leave out one or the other.")
    template = None
    if args.name is not None:
        template = argument_text(args.name, "--name")
        check_template(template)
    # The takes' own labels, with only the label flags given replacing theirs.
    return ExportOptions(template=template, labels=studio_labels(),
                         given_labels=given_labels(args),
                         settings=settings, format=fmt, use_stored=not args.raw,
                         generate=models, warn=warn, written=written)


def studio_labels() -> Labels:
    """The studio's names from settings; UsageError (one sentence) for a damaged UCS list."""
    try:
        return make_labels()
    except RequestError as exc:
        raise UsageError(str(exc)) from exc


def finished_line(sidecar: dict) -> str | None:
    """The line under a finished file: which chain, what it does, what it measures."""
    finishing = sidecar.get("finishing")
    if not isinstance(finishing, dict):
        return None  # a copy of the take
    chain = finishing.get("chain") or {}
    how = "its stored chain" if finishing.get("source") == "stored" else "the flags"
    preset = f" ({chain['preset']!r})" if chain.get("preset") else ""
    return f"  finished by {how}{preset}: {chain_summary(chain)}; measured {measured(finishing)}"


def run_export(library: ClipLibrary, args: argparse.Namespace) -> int:
    in_zip: list[str] = []  # told once the zip is in place, printed under its path

    def written(record: TakeRecord, path: Path, sidecar: dict) -> None:
        lines = [str(path) if args.zip is None else f"  {path} (take #{record.id})"]
        line = finished_line(sidecar)
        lines += [line] if line is not None else []
        if args.zip is None:
            for text in lines:
                print(printable(text))
        else:
            in_zip.extend(lines)

    models = _TakeModels()
    try:
        options = _options(args, models, written)
        if args.zip is not None:
            print(printable(library.export_zip(args.ids, args.zip, options)))
            for line in in_zip:
                print(printable(line))
            return EXIT_OK
        for take in args.ids:  # an unknown id is refused before any folder is made
            library.get(take)
        made = _make_folder(args.to)
        try:
            library.export(args.ids, args.to, options)
        except BaseException:
            if made:  # a refusal leaves no trace: the folder this command made goes again
                _remove_if_empty(args.to)
            raise
    finally:
        models.close()
    return EXIT_OK


def _make_folder(folder: Path) -> bool:
    """Create --to (a new folder is what it usually means); True when this call made it."""
    existed = folder.is_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(sentence(f"Could not create the folder {shown(folder)}", exc,
                                  "choose another --to")) from exc
    return not existed


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()  # only an empty folder: anything written stays
    except OSError:
        pass
