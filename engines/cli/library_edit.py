"""`python main.py library rate|tag|favourite|delete|restore|purge`: changing kept takes from a
script, as the library panel does.

    rate ID STARS              0 to 5 stars
    tag ID TAG... [--remove]   add tags (a comma also separates them), or take them off
    favourite ID [--off]
    delete ID...               to the trash (reversible); `restore ID...` brings them back
    purge [--yes]              empty the trash for good, rows and files: asks on a terminal,
                               and without one needs --yes

Everything a command names is checked before anything changes (an unknown id, a take already in
the trash or not in it, an empty tag), so a refused command changes nothing: exit 2 with one
sentence on stderr, like every library refusal, the read-only library's included. stdout: one
line a take changed.
"""

from __future__ import annotations

import argparse
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engines.cli.support import EXIT_OK, UsageError, argument_text, warn
from engines.error_sentences import printable, sentence, shown

if TYPE_CHECKING:
    from engines.store.library import ClipLibrary
    from engines.store.records import TakeRecord

MAX_TAG_CHARS = 100


def stars(text: str) -> int:
    """A rating from the command line: a whole number from 0 to 5 (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"'{printable(text)}' is not a rating; give a whole number of stars from 0 to "
            "5") from None
    if not 0 <= value <= 5:
        raise argparse.ArgumentTypeError(f"a rating of {value} is out of range; give 0 to 5 "
                                         "stars")
    return value


def add_edit_parsers(commands: Any, take_id: Callable[[str], int]) -> None:
    rate = commands.add_parser("rate", help="give a take 0 to 5 stars")
    rate.add_argument("take", type=take_id, metavar="ID")
    rate.add_argument("stars", type=stars, metavar="STARS", help="0 to 5")
    tag = commands.add_parser("tag", help="add tags to a take, or take them off (--remove)")
    tag.add_argument("take", type=take_id, metavar="ID")
    tag.add_argument("tags", nargs="+", metavar="TAG",
                     help="words or short phrases; a comma also separates tags")
    tag.add_argument("--remove", action="store_true", help="take these tags off")
    favourite = commands.add_parser("favourite", help="mark a take as a favourite (--off: unmark)")
    favourite.add_argument("take", type=take_id, metavar="ID")
    favourite.add_argument("--off", action="store_true", help="no longer a favourite")
    delete = commands.add_parser("delete", help="move takes to the trash (`restore` undoes it)")
    delete.add_argument("ids", nargs="+", type=take_id, metavar="ID")
    restore = commands.add_parser("restore", help="bring takes back from the trash")
    restore.add_argument("ids", nargs="+", type=take_id, metavar="ID")
    purge = commands.add_parser("purge", help="empty the trash for good: its takes and files")
    purge.add_argument("--yes", action="store_true",
                       help="do not ask (needed when there is no terminal to ask on)")


def _say(text: str) -> None:
    print(printable(text))


def _takes(count: int) -> str:
    return f"{count} take{'s' if count != 1 else ''}"


def _numbers(ids: list[int]) -> str:
    return ", ".join(f"#{i}" for i in ids)


def tag_words(values: list[str]) -> list[str]:
    """The tags the command line names: each argument split at commas, spaces tidied; an
    empty tag, one with control characters or a very long one is refused (UsageError)."""
    tags: list[str] = []
    for value in values:
        value = argument_text(value, "TAG")
        for part in value.split(","):
            if any(unicodedata.category(c) == "Cc" for c in part):
                raise UsageError(f"The tag '{printable(part.strip())}' holds control "
                                 "characters; give tags as plain words or short phrases.")
            word = " ".join(part.split())
            if not word and not value.strip():
                raise UsageError("A tag cannot be empty; give words or short phrases.")
            if not word:
                raise UsageError(f"'{printable(value)}' holds an empty tag between commas; "
                                 "put commas only between tags.")
            if len(word) > MAX_TAG_CHARS:
                raise UsageError(f"The tag '{printable(word[:40])}...' is longer than "
                                 f"{MAX_TAG_CHARS} characters; give a shorter tag.")
            tags.append(word)
    return tags


def run_rate(library: ClipLibrary, args: argparse.Namespace) -> int:
    library.require_writable()
    record = library.update(args.take, rating=args.stars)
    _say(f"take #{record.id} rated {record.rating}/5")
    return EXIT_OK


def run_tag(library: ClipLibrary, args: argparse.Namespace) -> int:
    given = tag_words(args.tags)
    library.require_writable()
    record = library.get(args.take)
    if args.remove:
        have = {tag.lower() for tag in record.tags}
        absent = [tag for tag in given if tag.lower() not in have]
        if absent:
            rest = ("nothing was taken off" if len(absent) == len(given)
                    else "the others were taken off")
            warn(f"take #{record.id} has no tag " + ", ".join(f"'{t}'" for t in absent)
                 + f"; {rest}.")
        off = {tag.lower() for tag in given}
        record = library.update(record.id, tags=[t for t in record.tags if t.lower() not in off])
    else:
        record = library.update(record.id, tags=[*record.tags, *given])
    _say(f"take #{record.id} tags: {', '.join(record.tags)}" if record.tags
         else f"take #{record.id} has no tags")
    return EXIT_OK


def run_favourite(library: ClipLibrary, args: argparse.Namespace) -> int:
    library.require_writable()
    record = library.update(args.take, favourite=not args.off)
    _say(f"take #{record.id} is " + ("a favourite" if record.favourite
                                     else "not a favourite"))
    return EXIT_OK


def _records(library: ClipLibrary, ids: list[int]) -> list[TakeRecord]:
    """The takes, each once, in the order given; an unknown id refuses them all."""
    return [library.get(take_id) for take_id in dict.fromkeys(ids)]


def run_delete(library: ClipLibrary, args: argparse.Namespace) -> int:
    library.require_writable()
    records = _records(library, args.ids)
    already = [r.id for r in records if r.deleted]
    if already:
        one = len(already) == 1
        raise UsageError(f"{'Take' if one else 'Takes'} {_numbers(already)} "
                         f"{'is' if one else 'are'} already in the trash, so nothing was "
                         f"deleted; `library restore {' '.join(map(str, already))}` brings "
                         f"{'it' if one else 'them'} back, `library purge` deletes the trash "
                         "for good.")
    for record in records:
        library.delete(record.id)
        _say(f"take #{record.id} moved to the trash (`library restore {record.id}` brings it "
             "back)")
    return EXIT_OK


def run_restore(library: ClipLibrary, args: argparse.Namespace) -> int:
    library.require_writable()
    records = _records(library, args.ids)
    kept = [r.id for r in records if not r.deleted]
    if kept:
        one = len(kept) == 1
        raise UsageError(f"{'Take' if one else 'Takes'} {_numbers(kept)} "
                         f"{'is' if one else 'are'} not in the trash, so nothing was restored; "
                         "`library list --deleted` shows the takes that are.")
    for record in records:
        library.restore(record.id)
        _say(f"take #{record.id} restored")
    return EXIT_OK


def _confirmed(count: int) -> bool:
    """Ask on the terminal whether to delete `count` takes for good (the question on stderr,
    so stdout stays the command's answer); anything but y or yes is no."""
    sys.stderr.write(f"Delete {_takes(count)} in the trash for good? [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline()
    if not answer.endswith("\n"):
        sys.stderr.write("\n")  # end of input: the next line starts on a line of its own
    return answer.strip().lower() in ("y", "yes")


def run_purge(library: ClipLibrary, args: argparse.Namespace) -> int:
    library.require_writable()
    ids = library.in_trash()
    if not ids:
        _say("The trash is empty; nothing was deleted.")
        return EXIT_OK
    if not args.yes:
        if not sys.stdin.isatty():
            raise UsageError(f"`library purge` would delete {_takes(len(ids))} in the trash for "
                             "good and there is no terminal to ask on, so nothing was deleted; "
                             "pass --yes to confirm.")
        if not _confirmed(len(ids)):
            _say("Nothing was deleted.")
            return EXIT_OK
    left: list[str] = []

    def unremovable(path: Path, err: OSError) -> None:
        left.append(sentence(f"Could not remove {shown(path)}", err,
                             "it is tried again the next time the library opens"))

    count = library.purge_trash(ids, unremovable=unremovable)
    _say(f"Deleted {_takes(count)} for good.")
    for line in left:
        warn(line)
    return EXIT_OK


EDIT_COMMANDS: dict[str, Callable[[ClipLibrary, argparse.Namespace], int]] = {
    "rate": run_rate, "tag": run_tag, "favourite": run_favourite, "delete": run_delete,
    "restore": run_restore, "purge": run_purge,
}
