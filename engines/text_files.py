"""Lists the user gives as text files (sound lists, the UCS list): what kind of file a path is,
which encoding its bytes are in, and what a CSV reader's refusal means, each as a phrase the
caller puts in its own sentence ("The list 'x.csv' <phrase>; <what to do>.").

Spreadsheets save text in several encodings: "CSV UTF-8" (with a byte-order mark), "Unicode
Text" (UTF-16 with a mark), plain "CSV" in the system's code page. A byte-order mark says which
one for certain, so it is always obeyed; without one, UTF-8 is tried, and NUL bytes (which no
text file holds, but UTF-16 and UTF-32 without a mark are full of) are refused rather than
read as a code page.
"""

from __future__ import annotations

import codecs
import csv
import stat
from pathlib import Path

# Longest mark first: UTF-32 LE's mark starts with UTF-16 LE's.
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32", "UTF-32"), (codecs.BOM_UTF32_BE, "utf-32", "UTF-32"),
         (codecs.BOM_UTF8, "utf-8-sig", "UTF-8"), (codecs.BOM_UTF16_LE, "utf-16", "UTF-16"),
         (codecs.BOM_UTF16_BE, "utf-16", "UTF-16"))


class TextFileError(ValueError):
    """The bytes are not text we can read; the message is a phrase (lower case, no full
    stop) to follow the file's name."""


def kind_problem(path: Path) -> str | None:
    """None for a regular file (links followed); else what it is instead, as a phrase: "does
    not exist", "is a folder", "is not a regular file but a pipe, device or socket" (reading
    a pipe would wait forever). OSError for anything else the OS refuses."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "does not exist"
    if stat.S_ISDIR(mode):
        return "is a folder"
    if not stat.S_ISREG(mode):
        return "is not a regular file but a pipe, device or socket"
    return None


def decode_text(data: bytes, fallback: str | None = None) -> str:
    """`data` as text: by its byte-order mark (UTF-8, UTF-16 or UTF-32, either byte order),
    else UTF-8, else `fallback` (a code page; None refuses). TextFileError when the bytes are
    not text in that encoding or hold NUL characters."""
    for mark, codec, name in _BOMS:
        if data.startswith(mark):
            try:
                text = data.decode(codec)
            except UnicodeDecodeError:
                raise TextFileError(f"starts with the {name} byte-order mark but is not valid "
                                    f"{name} text") from None
            break
    else:
        if b"\0" in data:
            raise TextFileError("holds NUL bytes, so it is not plain text, or is UTF-16 or "
                                "UTF-32 text saved without a byte-order mark")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            if fallback is None:
                raise TextFileError("is not UTF-8 text") from None
            text = data.decode(fallback, errors="replace")
    if "\0" in text:
        raise TextFileError("holds NUL characters, so it is not a text list")
    return text


def cell_too_large(err: csv.Error) -> bool:
    """Whether the csv module refused a cell for being over its field size limit (a well
    quoted cell can be; the limit is csv.field_size_limit(), 128 KB unless changed)."""
    return "field larger than field limit" in str(err)


def cell_limit_phrase(line: int) -> str:
    """A cell over the csv field limit, as a phrase naming the limit in KB and the line."""
    return (f"has a cell larger than {csv.field_size_limit() // 1024} KB, the most one cell "
            f"may hold, at line {line}")
