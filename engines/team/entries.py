"""A team take as the front ends see it (TeamEntry), its files (TeamFile), and what a browse
or search asks for (TeamQuery). Plain data: changing one changes nothing on the server.

`TeamEntry.as_json()` is what `team list/search/similar --json` print (an array of them):
    id            int: the take's id in the team library (not a local library id)
    name, prompt, negative_prompt, model, tier, mode   str
    seed          int | null (null for imported audio)
    seconds       float
    designer      str: who published it first
    created       str: when it was made (ISO 8601, UTC); published: when it was published
    rating        {"average": float, "count": int, "mine": int}: per-designer stars, 0 to 5
    tags          [str]: every designer's tags together, each in the case it was first given
                  (one spelling a tag: "FOOTGrvl" and "footgrvl" are one tag)
    content_sha256  str: of the take's samples, as the local library hashes them (a designer
                  who has the take locally has a take of this hash)
    distance      float, only from `similar`: cosine distance (0 = the same sound, 1 = unrelated)
    files         [{"role", "name", "sha256", "size", "format"}], only when asked for
"""

from __future__ import annotations

import datetime as _dt
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from engines.error_sentences import printable
from engines.team.errors import TeamError
from engines.team.writes import MAX_TAG_CHARS
from engines.text_display import blank_label_sentence, looks_blank

DEFAULT_LIMIT = 50
MAX_LIMIT = 10_000
# What one search may ask: a search is a handful of words; thousands of them would only be
# refused by the server ("stack depth limit exceeded"), after the wait.
MAX_SEARCH_WORDS = 32
MAX_SEARCH_CHARS = 1_000
MAX_FILTER_TAGS = 20

# The columns every entry query selects, in TeamEntry.from_row's order; `%(me)s` is the
# designer asking (their own stars).
ENTRY_COLUMNS = ("t.id, t.name, t.prompt, t.negative_prompt, t.seed, t.model, t.tier, t.mode, "
                 "t.seconds, t.designer, t.created, t.published, t.rating_avg, t.rating_count, "
                 "t.tag_list, coalesce((SELECT r.stars FROM ratings r WHERE r.take_id = t.id "
                 "AND r.designer = %(me)s), 0), t.content_sha256")


@dataclass(frozen=True)
class TeamFile:
    role: str
    name: str
    sha256: str
    size: int
    format: str

    def as_json(self) -> dict[str, Any]:
        return {"role": self.role, "name": self.name, "sha256": self.sha256,
                "size": self.size, "format": self.format}


@dataclass(frozen=True)
class TeamEntry:
    id: int
    name: str
    prompt: str
    negative_prompt: str
    seed: int | None
    model: str
    tier: str
    mode: str
    seconds: float
    designer: str
    created: str
    published: str
    rating_average: float
    rating_count: int
    tags: list[str]
    my_rating: int = 0
    content_sha256: str = ""  # of the samples: the local library's hash of the same take
    distance: float | None = None
    files: list[TeamFile] = field(default_factory=list)

    @classmethod
    def from_row(cls, row: tuple, distance: float | None = None) -> TeamEntry:
        return cls(int(row[0]), row[1], row[2], row[3], row[4], row[5], row[6], row[7],
                   float(row[8]), row[9], _iso(row[10]), _iso(row[11]), float(row[12]),
                   int(row[13]), list(row[14] or []), int(row[15]), row[16], distance)

    def title(self) -> str:
        return self.name or self.prompt or f"team take {self.id}"

    def as_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "id": self.id, "name": self.name, "prompt": self.prompt,
            "negative_prompt": self.negative_prompt, "seed": self.seed, "model": self.model,
            "tier": self.tier, "mode": self.mode, "seconds": self.seconds,
            "designer": self.designer, "created": self.created, "published": self.published,
            "rating": {"average": round(self.rating_average, 3), "count": self.rating_count,
                       "mine": self.my_rating},
            "tags": list(self.tags), "content_sha256": self.content_sha256}
        if self.distance is not None:
            shown["distance"] = round(self.distance, 6)
        if self.files:
            shown["files"] = [f.as_json() for f in self.files]
        return shown


@dataclass(frozen=True)
class TeamQuery:
    """What to list: every filter is optional; newest first."""

    text: str = ""  # words in names, prompts and tags (each word, or a word it starts)
    tags: tuple[str, ...] = ()  # every one of these tags (any designer's)
    min_rating: float = 0.0  # the average of the designers' stars
    model: str | None = None
    designer: str | None = None  # published by
    limit: int = DEFAULT_LIMIT
    before_id: int | None = None  # the next page: takes older than this one


def check_query(query: TeamQuery) -> None:
    """TeamError (one sentence) for a search larger than a search can be."""
    words = len(query.text.split())
    if len(query.text) > MAX_SEARCH_CHARS or words > MAX_SEARCH_WORDS:
        raise TeamError(f"The search is {words} words ({len(query.text)} characters) long; "
                        f"give at most {MAX_SEARCH_WORDS} words and {MAX_SEARCH_CHARS} "
                        "characters.")
    if len(query.tags) > MAX_FILTER_TAGS:
        raise TeamError(f"The search asks for {len(query.tags)} tags; give at most "
                        f"{MAX_FILTER_TAGS}.")
    for tag in query.tags:
        check_tag(tag)


def check_tag(tag: str) -> str:
    """`tag` tidied (single spaces), or TeamError (one sentence) for one that cannot be a tag:
    empty or blank-looking, over MAX_TAG_CHARS characters (as the local library's `library
    tag` refuses them), or holding control characters."""
    clean = " ".join(tag.split())
    if not clean:
        raise TeamError("A tag cannot be empty; give words or short phrases.")
    if looks_blank(clean):
        raise TeamError(blank_label_sentence("The tag", clean))
    if len(clean) > MAX_TAG_CHARS:
        raise TeamError(f"The tag '{printable(clean[:40])}...' is longer than {MAX_TAG_CHARS} "
                        "characters; give a shorter tag.")
    if any(unicodedata.category(c) == "Cc" for c in clean):
        raise TeamError(f"The tag '{printable(clean)}' holds control characters; give tags "
                        "as plain words or short phrases.")
    return clean


def _iso(value: object) -> str:
    if isinstance(value, _dt.datetime):
        return value.astimezone(_dt.UTC).isoformat(timespec="seconds")
    return str(value)
