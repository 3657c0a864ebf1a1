"""Reading a sound list: CSV (a header row, then one sound per row) or JSON (a list of objects
with the same keys), UTF-8 with or without a byte-order mark, or UTF-16/32 with one.

Each row keeps where it came from, so a bad one can be named: "line 7" in a CSV is the physical
line the row starts on (a quoted cell may span lines), "item [3]" in JSON is its index counted
from 0, as JSON tools count. Everything that makes the list itself unusable is a ListError of
one sentence; what is wrong with a single row is left to engines.batch.items.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engines.error_sentences import os_reason, shown
from engines.number_text import json_loads
from engines.text_files import (
    TextFileError,
    cell_limit_phrase,
    cell_too_large,
    decode_text,
    kind_problem,
)

REQUIRED = ("name", "prompt")
OPTIONAL = ("seconds", "variations", "seed", "negative_prompt", "model", "decoder",
            "precision", "codec_tier", "steps", "cfg", "apg", "init_audio", "init_noise_level",
            "inpaint", "loop", "loop_method", "preset", "category", "fx_name", "creator",
            "source", "lora")
KNOWN = frozenset(REQUIRED + OPTIONAL)
DELIMITERS = ",;\t"  # Excel writes ';' where the decimal mark is a comma
MAX_LIST_BYTES = 64 << 20  # a sound list is text; anything this big is the wrong file


class ListError(Exception):
    """The list cannot be used at all; the message is one sentence."""


@dataclass(frozen=True)
class Row:
    where: str  # "line 7" or "item [3]"
    values: dict[str, Any]  # known keys only; a CSV's empty cell is None
    problem: str | None = None  # a row that is broken as a whole (too many cells, not an object)


@dataclass(frozen=True)
class SoundList:
    path: Path
    rows: list[Row]
    unknown_keys: tuple[str, ...] = field(default=())

    @property
    def folder(self) -> Path:
        """Where relative init_audio paths are looked up."""
        return self.path.parent


def column_key(text: str) -> str:
    """A header as a key: "Negative Prompt" and "negative-prompt" both mean negative_prompt."""
    return "_".join(str(text).strip().lower().replace("-", " ").split())


def read_list(path: Path) -> SoundList:
    """The rows of the list at `path`; ListError when the list cannot be used."""
    text = _read_text(path)
    if path.suffix.lower() == ".json" or (path.suffix.lower() != ".csv"
                                          and text.lstrip().startswith(("[", "{"))):
        rows, keys = _json_rows(path, text)
    else:
        rows, keys = _csv_rows(path, text)
    if not rows:
        raise ListError(f"The list {shown(path)} has no sounds in it; add a row (or object) "
                        "per sound.")
    missing = [key for key in REQUIRED if key not in keys]
    if missing:
        kind = "keys" if path.suffix.lower() == ".json" else "columns"
        raise ListError(f"The list {shown(path)} has no {' or '.join(missing)} {kind}; "
                        f"every sound needs a name and a prompt.")
    unknown = tuple(key for key in keys if key not in KNOWN)
    return SoundList(path, rows, unknown)


def _read_text(path: Path) -> str:
    try:
        what = kind_problem(path)
        if what is not None:
            raise ListError(f"The list {shown(path)} {what}; give a CSV or JSON file.")
        if path.stat().st_size > MAX_LIST_BYTES:
            raise ListError(f"The list {shown(path)} is larger than "
                            f"{MAX_LIST_BYTES >> 20} MB; give a CSV or JSON sound list.")
        data = path.read_bytes()
    except OSError as exc:
        happened, todo = os_reason(exc)
        raise ListError(f"Could not read the list {shown(path)}: {happened}; {todo}.") from exc
    try:
        return decode_text(data)  # UTF-8, or what its byte-order mark says (UTF-16 from Excel)
    except TextFileError as exc:
        raise ListError(f"The list {shown(path)} {exc}; save it as \"CSV UTF-8\" (or JSON) "
                        "and try again.") from None


def _csv_rows(path: Path, text: str) -> tuple[list[Row], list[str]]:
    first_line = text.split("\n", 1)[0]
    delimiter = max(DELIMITERS, key=first_line.count)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise ListError(f"The list {shown(path)} is empty; give a header row (name,prompt,"
                            "...) and a row per sound.")
        keys = [column_key(cell) for cell in header]
        rows = []
        start = reader.line_num + 1
        for cells in reader:
            where, start = f"line {start}", reader.line_num + 1
            if not any(cell.strip() for cell in cells):
                continue  # blank lines and rows of empty cells (spreadsheets leave them)
            rows.append(_csv_row(where, keys, cells))
    except csv.Error as exc:
        if cell_too_large(exc):
            raise ListError(f"The list {shown(path)} {cell_limit_phrase(reader.line_num)}; "
                            "shorten that cell (a prompt needs far less).") from None
        raise ListError(f"The list {shown(path)} is not readable CSV (line {reader.line_num}: "
                        f"{exc}); check its quotes and save it again.") from None
    return rows, [key for key in dict.fromkeys(keys) if key]


def _csv_row(where: str, keys: list[str], cells: list[str]) -> Row:
    extra = [cell for cell in cells[len(keys):] if cell.strip()]
    if extra:
        return Row(where, {}, f"it has {len(cells)} cells but the header has {len(keys)} "
                              "columns; put cells with commas in double quotes")
    values: dict[str, Any] = {}
    for key, cell in zip(keys, cells, strict=False):
        if key in KNOWN and key not in values:  # a repeated column: the first one counts
            values[key] = cell if cell.strip() else None
    return Row(where, values)


def _json_rows(path: Path, text: str) -> tuple[list[Row], list[str]]:
    try:
        data = json_loads(text)  # a 5000-digit number reads as one too large, not an error
    except json.JSONDecodeError as exc:
        raise ListError(f"The list {shown(path)} is not valid JSON (line {exc.lineno}, column "
                        f"{exc.colno}: {exc.msg}); fix it or save the list as CSV.") from None
    except RecursionError:
        raise ListError(f"The list {shown(path)} nests JSON too deeply; give a list of "
                        "objects.") from None
    if not isinstance(data, list):
        raise ListError(f"The list {shown(path)} holds a JSON {type(data).__name__}, not a "
                        "list of objects; write it as [{\"name\": ..., \"prompt\": ...}, ...].")
    if data and not any(isinstance(item, dict) for item in data):
        raise ListError(f"The list {shown(path)} is not a list of objects; write it as "
                        "[{\"name\": ..., \"prompt\": ...}, ...].")
    rows, keys = [], {}
    for index, item in enumerate(data):
        where = f"item [{index}]"
        if not isinstance(item, dict):
            rows.append(Row(where, {}, f"it is a JSON {type(item).__name__}, not an object "
                                       "with a name and a prompt"))
            continue
        values: dict[str, Any] = {}
        for raw_key, value in item.items():
            key = column_key(raw_key)
            keys.setdefault(key, None)
            if key in KNOWN and key not in values:
                values[key] = value
        rows.append(Row(where, values))
    return rows, list(keys)
