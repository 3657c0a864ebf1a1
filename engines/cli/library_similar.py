"""`python main.py library similar ID [--limit N] [--json]` and `library list --like FILE`: the
takes that sound most like a take of the library, or like an audio file (search by sound).

Takes kept before sound search existed are embedded first, once (a progress bar on a terminal).
Latents come from the codec's encoder where it runs here on the CPU (engines.similarity.
encoding); elsewhere sounds are compared by their audio features.

stdout: a table, closest first, or with --json an array of objects with id, name, prompt,
title, distance, similarity, compared_on (latents+audio or audio), model, seconds and audio.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engines.cli.support import EXIT_OK, UsageError, warn
from engines.error_sentences import printable
from engines.models.inventory import default_catalog
from engines.similarity.encoding import LatentEncoders
from engines.store.sound_search import (
    SimilarTake,
    file_excerpt,
    similar_takes,
    similar_to_file,
)

if TYPE_CHECKING:
    from engines.store.library import ClipLibrary

DEFAULT_LIMIT = 10
TITLE_WIDTH = 60
DISTANCE_HELP = ("Distance is the cosine distance of the sound embeddings: 0 is the same "
                 "sound, about 1 unrelated; similarity is 1 - distance (0.08 reads 92 percent).")
# What `library list --like` cannot combine with: it ranks the whole library by sound.
_LIST_FILTERS = {"search": "", "model": None, "favourites": False, "min_rating": 0,
                 "sort": "created", "deleted": False, "finished": False, "tier": None,
                 "quality": None}


def add_similar_parser(commands: Any, take_id: Callable[[str], int]) -> None:
    similar = commands.add_parser(
        "similar", help="the takes that sound most like a take",
        description="The takes that sound most like take ID, closest first. " + DISTANCE_HELP)
    similar.add_argument("take", type=take_id, metavar="ID")
    similar.add_argument("--limit", type=int, default=DEFAULT_LIMIT, metavar="N",
                         help=f"at most N ({DEFAULT_LIMIT})")
    similar.add_argument("--json", action="store_true",
                         help="a JSON array: id, name, prompt, distance, similarity, ...")


def add_like_argument(listing: argparse.ArgumentParser) -> None:
    listing.add_argument("--like", type=Path, metavar="FILE",
                         help="rank the takes by how much they sound like an audio file, "
                              "closest first (with --limit and --json only). " + DISTANCE_HELP)


def _encoders(library: ClipLibrary) -> LatentEncoders:
    return LatentEncoders(default_catalog(), library.latent_spaces())


class _Bar:
    """progress(done, total) as a tqdm bar on stderr when it is a terminal, else silent."""

    def __init__(self) -> None:
        self._bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            if not _is_terminal():
                return
            from tqdm import tqdm  # only on a terminal: scripts never pay for it

            self._bar = tqdm(total=total, unit="take", file=sys.stderr, leave=False,
                             desc="embedding takes for sound search")
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _checked_limit(limit: int) -> int:
    if limit < 1:
        raise UsageError(f"--limit {limit} shows nothing; give 1 or more.")
    return min(limit, 10_000)


def run_similar(library: ClipLibrary, args: argparse.Namespace) -> int:
    limit = _checked_limit(args.limit)
    bar = _Bar()
    try:
        found = similar_takes(library, args.take, limit, encoders=_encoders(library),
                              progress=bar)
    finally:
        bar.close()
    return _show(found, args.json, f"like take #{args.take}", library)


def run_like(library: ClipLibrary, args: argparse.Namespace) -> int:
    """`library list --like FILE`."""
    given = [f"--{name.replace('_', '-')}" for name, default in _LIST_FILTERS.items()
             if getattr(args, name, default) != default]
    if given:
        raise UsageError(f"--like ranks the whole library by sound, so it does not combine "
                         f"with {', '.join(given)}; leave {'them' if len(given) > 1 else 'it'} "
                         "out.")
    limit = _checked_limit(args.limit)
    excerpt = file_excerpt(args.like)  # also refuses a file that is not audio, before work
    bar = _Bar()
    try:
        found = similar_to_file(library, args.like, limit, encoders=_encoders(library),
                                progress=bar)
    finally:
        bar.close()
    if excerpt is not None:
        compared, whole = excerpt
        warn(f"'{args.like.name}' is {_duration(whole)} long; only its first "
             f"{_duration(compared)} were compared (no take is longer).")
    return _show(found, args.json, f"like '{args.like.name}'", library)


def _duration(seconds: float) -> str:
    """6 h 0 min, 6 min 20 s, 45 s: as long as it needs to be, never a fraction."""
    whole = int(seconds)
    hours, minutes, rest = whole // 3600, whole // 60 % 60, whole % 60
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


def similar_json(item: SimilarTake) -> dict:
    record = item.record
    return {"id": record.id, "name": record.name, "prompt": record.prompt,
            "title": record.title(), "distance": round(item.distance, 4),
            "similarity": round(item.similarity, 4),
            "compared_on": "latents+audio" if item.same_space else "audio",
            "model": record.model, "seconds": record.seconds, "audio": str(record.audio_path)}


def _show(found: list[SimilarTake], as_json: bool, what: str, library: ClipLibrary) -> int:
    if as_json:
        print(json.dumps([similar_json(item) for item in found], indent=2, ensure_ascii=True))
        return EXIT_OK
    print(f"{'ID':>6}  {'SIMILARITY':>10}  {'DISTANCE':>8}  {'MODEL':9} {'SECONDS':>7}  "
          "NAME / PROMPT")
    for item in found:
        record = item.record
        title = " ".join(record.title().split())
        if len(title) > TITLE_WIDTH:
            title = title[:TITLE_WIDTH - 3] + "..."
        print(printable(f"{record.id:>6}  {round(100 * item.similarity):>9}%  "
                        f"{item.distance:>8.3f}  {record.model:9} {record.seconds:>7.2f}  "
                        f"{title}"))
    count = len(found)
    print(printable(f"{count} take{'s' if count != 1 else ''} {what}, closest first; "
                    f"library: {library.root}"))
    return EXIT_OK
