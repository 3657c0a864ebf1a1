"""`python main.py library ...`: list, show and export takes kept in the sound library.

`list` filters by quality flags (--flagged, --clean, --quality CODE) and shows them in its FLAGS
column, and each take's MODE (t2a, a2a, inpaint, imported) and PARENT (the take it was made
from); --tier keeps the takes of one codec tier; `show` tells a take's finishing chain and
its flags in words; with --json both print the shape documented in engines.store.take_json
(list: an array). `export` (in library_export_cli) writes takes raw or finished; rate, tag,
favourite, delete, restore and purge (in library_edit_cli) and rename (library_rename)
change them; `similar` and `list --like FILE` (library_similar) search by sound.

Exit codes as for `generate`: 0 done; 1 a file could not be written; 2 bad input (an unknown id,
a missing folder), with one line on stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path

from engines.adapter_summary import adapter_lines
from engines.cli.library_edit import EDIT_COMMANDS, add_edit_parsers
from engines.cli.library_export import add_export_parser, run_export
from engines.cli.library_import import add_import_parser, run_import
from engines.cli.library_label import LABEL_COMMANDS, add_label_parsers, label_line
from engines.cli.library_rename import add_rename_parser, run_rename
from engines.cli.library_similar import (
    add_like_argument,
    add_similar_parser,
    run_like,
    run_similar,
)
from engines.cli.support import (
    EXIT_OK,
    CommandFailed,
    UsageError,
    argument_text,
    parser_class,
    run_command,
    warn,
)
from engines.error_sentences import printable
from engines.errors import StudioError
from engines.finish.quality import FLAG_CODES
from engines.finishing_summary import finishing_lines, quality_lines
from engines.paths import DataFolderError, library_dir
from engines.store.library import ClipLibrary, LibraryError
from engines.store.take_json import take_json
from engines.store.wavmeta import read_metadata
from engines.text_display import terminal_json

log = logging.getLogger(__name__)


PROMPT_WIDTH = 60
MAX_TAKE_ID = 2**63 - 1  # SQLite's largest integer
MAX_LISTED = 2**31  # "show me everything": more than any library holds
READ_COMMANDS = ("list", "show")  # never wait for another process writing the library


def take_id(text: str) -> int:
    """A take id from the command line: a whole number from 1 up (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"'{printable(text)}' is not a take id; give a whole number from `library list`"
        ) from None
    if not 1 <= value <= MAX_TAKE_ID:
        raise argparse.ArgumentTypeError(
            f"there is no take #{printable(text)}; ids are whole numbers from 1 up, as "
            "`library list` shows them")
    return value


def _say(text: object = "") -> None:
    """One line (or several) on stdout, with control characters from prompts escaped."""
    for line in str(text).split("\n"):
        print(printable(line))


def _json_text(payload: object) -> str:
    """JSON for the terminal: JSON escapes C0 controls itself, but not C1 ones (0x80-0x9f,
    e.g. CSI), DEL, or bidirectional and zero-width characters (engines.text_display)."""
    return terminal_json(payload)


_Parser = parser_class("python main.py library --help")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python main.py library",
                     description="Every take SA3 Studio made, with the settings that made it.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    listing = commands.add_parser("list", help="newest takes first, or those matching --search")
    listing.add_argument("--search", default="", metavar="TEXT",
                         help="words to find in prompts, names, tags and notes")
    listing.add_argument("--limit", type=int, default=50, metavar="N", help="at most N (50)")
    listing.add_argument("--model", help="only takes of this model set")
    listing.add_argument("--favourites", action="store_true", help="only favourites")
    listing.add_argument("--min-rating", type=int, default=0, choices=range(6),
                         metavar="STARS", help="0 to 5")
    listing.add_argument("--sort", default="created",
                         choices=("created", "rating", "prompt", "seconds", "seed"))
    listing.add_argument("--deleted", action="store_true", help="include deleted takes")
    listing.add_argument("--finished", action="store_true",
                         help="only takes with a stored finishing chain")
    listing.add_argument("--tier", metavar="TIER",
                         help="only takes decoded with this codec tier (canonical, fp8, "
                              "fp8_fast, legacy, coarse)")
    listing.add_argument("--adapter", metavar="NAME|SHA256",
                         help="only takes made with this adapter: its file name (with or "
                              "without .safetensors) or the start of its SHA-256")
    listing.add_argument("--source", metavar="generated|imported|FOLDER",
                         help="only generated takes, only sound files imported in place, or "
                              "only those of one imported folder")
    listing.add_argument("--json", action="store_true",
                         help="a JSON array of the takes, every field (no table)")
    add_like_argument(listing)
    quality = listing.add_mutually_exclusive_group()
    quality.add_argument("--flagged", dest="quality", action="store_const", const="flagged",
                         help="only takes with a quality flag (silence, clipping, ...)")
    quality.add_argument("--clean", dest="quality", action="store_const", const="clean",
                         help="only takes without quality flags")
    quality.add_argument("--quality", dest="quality", type=flag_code, metavar="CODE",
                         help="only takes with this flag: " + ", ".join(_FLAG_CHOICES))
    show = commands.add_parser("show", help="everything about one take")
    show.add_argument("take", metavar="ID|FILE",
                      help="a library id, or an audio file to identify (e.g. one dragged out)")
    show.add_argument("--json", action="store_true",
                      help="every field and the provenance as one JSON object")
    add_export_parser(commands, take_id)
    add_edit_parsers(commands, take_id)
    add_similar_parser(commands, take_id)
    add_rename_parser(commands, take_id)
    add_label_parsers(commands, take_id)
    add_import_parser(commands)
    return parser


# Quality flag codes as the list shows them, short enough for a column.
_SHORT_FLAGS = {"silent": "silent", "clipping": "clip", "dc-offset": "dc", "non-finite": "nan",
                "trailing-silence": "tail"}
_FLAG_CHOICES = tuple(f"{code} ({short})" if short != code else code
                      for code, short in _SHORT_FLAGS.items())


def flag_code(text: str) -> str:
    """A quality flag code from the command line, in full or as the list shows it."""

    word = text.strip().lower()
    for code, short in _SHORT_FLAGS.items():
        if word == short:
            return code
    if word in FLAG_CODES:
        return word
    raise argparse.ArgumentTypeError(f"'{printable(text)}' is not a quality flag; choose one "
                                     f"of {', '.join(_FLAG_CHOICES)}")


def _source_filter(text: str | None) -> str | None:
    """--source: generated, imported, or an imported folder (as given, made absolute)."""
    if text is None or text in ("generated", "imported"):
        return text
    return os.path.realpath(os.path.abspath(argument_text(text, "--source")))


def _missing(record) -> str:
    if record.is_sound_file:  # the user's own file: nothing here can make it again
        return "  (MISSING: reconnect its drive, or rescan with `library import`)"
    return "  (MISSING: regenerate it)"


def _source_word(record) -> str:
    """The SOURCE column: generated, imported (copied in), or the imported folder's name."""
    if record.is_sound_file:
        return Path(record.source_root).name or record.source_root
    return "imported" if record.is_imported else "generated"


def _marks(record) -> str:
    marks = []
    if record.favourite:
        marks.append("fav")
    if record.finished:
        marks.append("fin")
        if (record.finishing.get("chain") or {}).get("loop"):
            marks.append("loop")
    if record.deleted:
        marks.append("deleted")
    if record.missing:
        marks.append("MISSING")
    return ",".join(marks)


def _quality(record) -> str:
    return ",".join(_SHORT_FLAGS.get(code, code) for code in record.quality) or "-"


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


def run_list(library, args: argparse.Namespace) -> int:
    if args.like is not None:
        return run_like(library, args)
    if args.limit < 1:
        raise UsageError(f"--limit {args.limit} shows nothing; give 1 or more.")
    args.limit = min(args.limit, MAX_LISTED)
    filters = {"model": args.model, "favourite": True if args.favourites else None,
               "min_rating": args.min_rating, "include_deleted": args.deleted,
               "quality": args.quality, "finished": True if args.finished else None,
               "tier": args.tier, "source": _source_filter(args.source)}
    if args.adapter is not None:  # only then: a library that predates adapters is asked as before
        filters["adapter"] = argument_text(args.adapter, "--adapter")
    args.search = argument_text(args.search, "--search")
    library.check_quality()  # takes kept before flags were (once; opening does it in parts)
    records = library.search(args.search, sort=args.sort, limit=args.limit, **filters)
    if args.json:
        print(_json_text([take_json(r) for r in records]))
        return EXIT_OK
    total = library.count(args.search, **filters)
    _say(f"{'ID':>6}  {'CREATED (UTC)':16}  {'MODEL':9} {'MODE':8} {'PARENT':>6} "
         f"{'SECONDS':>7} {'SEED':>10}  {'RATING':6} {'MARKS':11} {'FLAGS':12} "
         f"{'SOURCE':14} PROMPT / NAME")
    for r in records:
        parent = "-" if r.parent_id is None else f"#{r.parent_id}"
        _say(f"{r.id:>6}  {r.created[:16].replace('T', ' '):16}  {r.model:9} {r.mode:8} "
             f"{parent:>6} {r.seconds:>7.2f} {('-' if r.is_imported else r.seed):>10}  "
             f"{'*' * r.rating:6} {_marks(r):11} {_quality(r):12} "
             f"{_clip(_source_word(r), 14):14} {_clip(r.title(), PROMPT_WIDTH)}")
    _say(f"{len(records)} of {total} take{'s' if total != 1 else ''} shown"
          + (f" matching '{args.search}'" if args.search else "") + f"; library: {library.root}")
    return EXIT_OK


def _show_lines(library, record) -> list[str]:
    lines = [f"take #{record.id}" + (f" '{record.name}'" if record.name else "")
             + (" (deleted)" if record.deleted else ""),
             f"  created      {record.created}",
             f"  audio        {record.audio_path}" + (_missing(record) if record.missing
                                                     else ""),
             f"  length       {record.seconds:.3f} s, {record.samples} samples at "
             f"{record.sample_rate} Hz"]
    if record.is_sound_file:
        lines.append(f"  source       {record.source_root} (referenced in place, never "
                     "changed)")
    elif record.is_imported:
        lines.append(f"  imported     from {record.init_source}")
    else:
        spans = ", ".join(f"{a:g}:{b:g}" for a, b in record.inpaint_spans) or "-"
        level = "-" if record.init_noise_level is None else f"{record.init_noise_level:g}"
        lines += [
            f"  prompt       {record.prompt}",
            f"  negative     {record.negative_prompt or '-'}",
            f"  model        {record.model}, decoder {record.decoder}, {record.precision}, "
            f"codec tier {record.decoder_tier or '-'}",
            f"  mode         {record.mode}",
            f"  seed         {record.seed}" + (" (random)" if record.seed_was_random else ""),
            f"  steps        {record.steps}, cfg {record.cfg:g}, apg {record.apg:g}",
            f"  init         noise level {level}, inpaint spans {spans}, "
            f"file {record.init_source or '-'}",
            f"  limiter      {record.limiter_ceiling:g}",
            f"  backend      {record.backend} (asked: {record.requested_backend})",
            "  timings      " + ", ".join(f"{k} {v:.0f} ms" for k, v in
                                          record.timings_ms.items()),
        ]
        for entry in record.engine_files:
            if entry.get("role") != "adapter":
                lines.append(f"  engine       {entry['role']}: {entry['path']} "
                             f"({entry.get('size')} bytes, sha256 {entry.get('sha256') or '?'})")
        lines += adapter_lines(record.adapters)
    lines += [f"  rating       {record.rating}/5" + (", favourite" if record.favourite else ""),
              f"  tags         {', '.join(record.tags) or '-'}",
              f"  notes        {record.notes or '-'}",
              f"  labels       {label_line(record)}"]
    if not record.is_imported:
        n, of = library.variation_number(record.id)
        lines.append(f"  variation    {n} of {of}")
    lines += finishing_lines(record.finishing)
    lines += quality_lines(record.quality)
    chain = library.lineage(record.id)[1:]
    if chain:
        lines.append("  made from    " + " <- ".join(f"#{r.id} {_clip(r.title(), 30)}"
                                                     for r in chain))
    for warning in record.warnings:
        lines.append(f"  warning      {warning}")
    return lines


def run_show(library, args: argparse.Namespace) -> int:
    if args.take.lstrip("-").isdigit():
        try:
            record = library.get(take_id(args.take))
        except argparse.ArgumentTypeError as exc:
            raise UsageError(f"{exc}.") from exc
    else:
        path = Path(args.take)
        if not path.is_file():
            raise LibraryError(f"'{printable(args.take)}' is neither a take id nor an audio "
                               "file; give an id from `library list` or the path of a file.")
        record = library.identify(path)
        if record is None:
            note = read_metadata(path)
            if note is None:
                raise LibraryError(f"'{printable(path.name)}' is not a take from this library "
                                   "and carries no SA3 Studio note.")
            _say(f"'{path.name}' is not in this library, but its embedded note says:")
            print(_json_text(note))
            return EXIT_OK
    # One take is worth reading whole: a file changed or damaged outside the app is named.
    problem = library.audio_problem(record.id) if not record.missing else None
    if args.json:
        shown = take_json(record)
        shown["files"]["audio"]["damaged"] = problem is not None
        shown["files"]["audio"]["problem"] = problem
        shown["variation"], shown["variations"] = library.variation_number(record.id)
        print(_json_text(shown))
    else:
        lines = _show_lines(library, record)
        if problem is not None:
            lines.insert(3, f"  DAMAGED      {problem}")
        _say("\n".join(lines))
    return EXIT_OK


def main(argv: list[str]) -> int:
    """argv: the words after `library`."""

    def body() -> int:
        args = build_parser().parse_args(list(argv))
        try:
            library = ClipLibrary(library_dir(), for_reading=args.command in READ_COMMANDS)
        except DataFolderError:
            raise  # the data folder itself: bad setup, exit 2
        except StudioError as exc:  # the library itself cannot be opened: a failure, not input
            raise CommandFailed(str(exc)) from exc
        try:
            if library.notice and not (library.read_only and args.command in EDIT_COMMANDS):
                warn(library.notice)  # (an edit's refusal says read-only itself)
            handlers = {"list": run_list, "show": run_show, "export": run_export,
                        "similar": run_similar, "rename": run_rename, "import": run_import,
                        **EDIT_COMMANDS,
                        **LABEL_COMMANDS}
            handler = handlers[args.command]
            return handler(library, args)
        finally:
            library.close()

    return run_command("library", body)
