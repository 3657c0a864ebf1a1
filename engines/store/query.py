"""Turning the library panel's search box, filters and sort into SQL."""

from __future__ import annotations

import datetime as _dt
import numbers
from typing import Any

from engines.catalog import TIER_NAMES
from engines.error_sentences import printable
from engines.finish.quality import FLAG_CODES
from engines.store import schema
from engines.store.adapter_filter import adapter_clause
from engines.store.records import LibraryError
from engines.text import storable

SORT_KEYS = {
    "created": "t.created",
    "rating": "t.rating",
    "prompt": "t.prompt COLLATE NOCASE",
    "name": "t.name COLLATE NOCASE",
    "seconds": "t.seconds",
    "seed": "t.seed",
    "model": "t.model",
    "id": "t.id",
}


def clamped_count(value: object, most: int, what: str) -> int:
    """A whole number for a filter or page of results, from 0 to `most` (beyond both ends
    means the same as the end, and SQLite cannot take numbers past 2**63)."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, str)):
        raise LibraryError(f"{printable(repr(value))[:40]} is not a whole number for {what}; "
                           "give one like 0, 1 or 50.")
    try:
        number = int(value)
    except ValueError:
        raise LibraryError(f"'{printable(value)[:40]}' is not a whole number for {what}; "
                           "give one like 0, 1 or 50.") from None
    return min(max(number, 0), most)


def time_bound(value: str | _dt.date | None, *, end: bool) -> tuple[str, bool] | None:
    """(ISO UTC text, inclusive) for a since/until filter. A bare date as `until` covers that
    whole day; times without a zone are taken as UTC."""
    if value is None or value == "":
        return None
    whole_day = False
    if isinstance(value, _dt.datetime):
        moment = value
    elif isinstance(value, _dt.date):
        moment, whole_day = _dt.datetime(value.year, value.month, value.day), True
    else:
        text = str(value).strip()
        try:
            moment = _dt.datetime.fromisoformat(text)
        except ValueError:
            raise LibraryError(f"'{printable(value)}' is not a date; write it as YYYY-MM-DD or "
                               "an ISO 8601 time such as 2025-01-31T18:00.") from None
        whole_day = len(text) == 10
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.UTC)
    inclusive = True
    try:
        if end and whole_day:
            moment, inclusive = moment + _dt.timedelta(days=1), False
        return moment.astimezone(_dt.UTC).isoformat(timespec="milliseconds"), inclusive
    except OverflowError:  # a zone or a day pushing past year 1 or 9999: that end of time
        edge = _dt.datetime.max if end else _dt.datetime.min
        return edge.replace(tzinfo=_dt.UTC).isoformat(timespec="milliseconds"), True


QUALITY_CHOICES = ("flagged", "clean")  # besides one flag code (engines.finish.quality)


def quality_clause(quality: str) -> tuple[str, list]:
    """SQL (over `takes t`) for a quality filter: "flagged" (any flag), "clean" (measured and
    no flag) or one flag code. Takes not measured yet (NULL) are neither."""
    if quality == "flagged":
        return "t.quality IS NOT NULL AND t.quality != '[]'", []
    if quality == "clean":
        return "t.quality = '[]'", []
    if quality in FLAG_CODES:
        # The stored list is JSON of known codes (letters and dashes only), so the quoted
        # code cannot match inside another one.
        return "t.quality LIKE ?", [f'%"{quality}"%']
    raise LibraryError(f"'{printable(str(quality))[:40]}' is not a quality filter; choose "
                       f"{', '.join(QUALITY_CHOICES)} or a flag: {', '.join(FLAG_CODES)}.")


def tier_filter(tier: str) -> str:
    """A codec tier name for the filter ("FP8-fast" means fp8_fast), or LibraryError."""
    key = str(tier).strip().lower().replace("-", "_")
    if key not in TIER_NAMES:
        raise LibraryError(f"'{printable(str(tier))[:40]}' is not a codec tier; choose one of "
                           f"{', '.join(TIER_NAMES)}.")
    return key


def source_clause(source: str) -> tuple[str, list]:
    """SQL (over `takes t`) for a Source filter (see where_clause)."""
    if source == "generated":
        return "t.source_root IS NULL", []
    if source == "imported":
        return "t.source_root IS NOT NULL", []
    return "t.source_root = ?", [storable(str(source))]


def where_clause(text: str, *, use_fts: bool, model: str | None = None,
                 favourite: bool | None = None, min_rating: int = 0, since: Any = None,
                 until: Any = None, include_deleted: bool = False, quality: str | None = None,
                 finished: bool | None = None, tier: str | None = None,
                 source: str | None = None, adapter: str | None = None) -> tuple[str, list]:
    """The WHERE clause (with its parameters) over `takes t` for a library search.

    Every word of `text` must occur in the take's search text (prompt, name, tags, notes, init
    file name), in any case. Words of three or more letters go through the FTS5 trigram index
    when there is one; shorter words, or every word without FTS5, through LIKE. `quality`: see
    `quality_clause`; `finished`: takes with (True) or without (False) a finishing chain;
    `tier`: takes decoded with that codec tier (canonical, fp8, fp8_fast, legacy, coarse);
    `source`: "generated" (the library's own audio), "imported" (every sound file referenced
    in place) or one imported folder's root (engines.store.sound_files).
    """
    clauses: list[str] = []
    params: list[Any] = []
    if not include_deleted:
        clauses.append("t.deleted = 0")
    if model:
        clauses.append("t.model = ?")
        params.append(storable(str(model)))
    if favourite is not None:
        clauses.append("t.favourite = ?")
        params.append(int(bool(favourite)))
    if min_rating:
        clauses.append("t.rating >= ?")
        params.append(clamped_count(min_rating, 6, "the lowest rating"))
    if quality:
        clause, values = quality_clause(quality)
        clauses.append(clause)
        params += values
    if finished is not None:
        clauses.append("t.finishing IS NOT NULL" if finished else "t.finishing IS NULL")
    if tier:
        clauses.append("t.decoder_tier = ?")
        params.append(tier_filter(tier))
    if adapter:  # takes made with that adapter (engines.store.adapter_filter)
        clause, values = adapter_clause(adapter)
        clauses.append(clause)
        params += values
    if source:
        clause, values = source_clause(source)
        clauses.append(clause)
        params += values
    for bound, end in ((since, False), (until, True)):
        parsed = time_bound(bound, end=end)
        if parsed is not None:
            moment, inclusive = parsed
            op = (">=" if inclusive else ">") if not end else ("<=" if inclusive else "<")
            clauses.append(f"t.created {op} ?")
            params.append(moment)
    # Escaped as the library stores text that is not UTF-8, so such a word finds its take.
    terms = storable(str(text or "")).lower().split()
    indexed = [t for t in terms if use_fts and len(t) >= 3]
    if indexed:
        # `+`: the matches are a filter on the walk of the created-order index, so a page
        # stops after its rows; else SQLite fetches every match to sort them (9,500 of 50,000
        # rows for "heavy": 116 ms instead of 9 ms, bench/bench_library_import.py).
        clauses.append(f"+t.id IN (SELECT rowid FROM {schema.FTS_TABLE} WHERE "
                       f"{schema.FTS_TABLE} MATCH ?)")
        params.append(" AND ".join('"' + t.replace('"', '""') + '"' for t in indexed))
    for term in terms:
        if term not in indexed:
            escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            clauses.append("t.search_text LIKE ? ESCAPE '\\'")
            params.append(f"%{escaped}%")
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params
