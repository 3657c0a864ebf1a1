"""Export file names: a template with fields, made safe for every file system we deliver to,
and never the name of a file that is already there.

Fields: {name} (the take's name), {prompt}, {seed}, {n} (the variation number: {n:02} gives
01, 02 ...), {preset}, {date} (YYYYMMDD) and {category} (e.g. a UCS CatID such as DOORWood, which
users bring themselves; we do not ship the list). Format specs are Python's ({n:03}, {seed:x}).
"""

from __future__ import annotations

import datetime as _dt
import itertools
import os
import re
import string
import unicodedata
from pathlib import Path

from engines.errors import RequestError

FIELDS = ("name", "prompt", "seed", "n", "preset", "date", "category")
DEFAULT_TEMPLATE = "{name}_{n:02}"  # variation sets come out as name_01 .. name_NN
# UTF-8 bytes a name may take: most file systems allow 255, and the numbered suffix (_2 ...)
# and the extension need room after it.
MAX_NAME_BYTES = 150
FALLBACK_NAME = "take"

_FIELD_LIST = ", ".join("{" + field + "}" for field in FIELDS)
_UNSAFE = set('/\\:*?"<>|')  # path separators, and what Windows refuses in a name
_WINDOWS_DEVICES = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)),
                    *(f"LPT{i}" for i in range(1, 10))}


def _parsed(template: str) -> list[tuple[str, str | None, str]]:
    """(literal text, field or None, format spec) parts; RequestError for a bad template."""
    if not isinstance(template, str):
        raise RequestError("The name template must be text, for example {name}_{n:02}.")
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError:
        raise RequestError("The name template has an unmatched { or }; put braces only around "
                           f"fields ({_FIELD_LIST}), or double them for a brace.") from None
    checked = []
    for literal, field, spec, conversion in parts:
        if field is not None:
            if field not in FIELDS:
                raise RequestError(f"The name template field {{{field}}} is unknown; use "
                                   f"{_FIELD_LIST}.")
            if conversion or "{" in (spec or ""):
                raise RequestError(f"The name template field {{{field}}} has a conversion or a "
                                   f"nested field; write it as {{{field}}} or "
                                   f"{{{field}:FORMAT}}, e.g. {{n:02}}.")
        checked.append((literal, field, spec or ""))
    return checked


def check_template(template: str) -> None:
    """RequestError (one sentence) when the template would not render."""
    render_name(template, name="name", prompt="prompt", seed=1, n=1, preset="preset",
                category="category")


def render_name(template: str, *, name: str = "", prompt: str = "", seed: int | None = None,
                n: int = 1, preset: str = "", date: _dt.date | None = None,
                category: str = "") -> str:
    """The template filled in and made file-name safe (see safe_file_name)."""
    values: dict[str, object] = {
        "name": name, "prompt": prompt, "seed": "" if seed is None else seed, "n": n,
        "preset": preset, "date": (date or _dt.date.today()).strftime("%Y%m%d"),
        "category": category,
    }
    pieces = []
    for literal, field, spec in _parsed(template):
        pieces.append(literal)
        if field is None:
            continue
        try:
            pieces.append(format(values[field], spec))
        except (ValueError, TypeError):
            raise RequestError(f"The format {{{field}:{spec}}} in the name template does not "
                               f"fit {field} ({values[field]!r}); use e.g. {{n:02}} for "
                               "01, 02 ...") from None
    return safe_file_name("".join(pieces))


def safe_file_name(text: str, max_bytes: int = MAX_NAME_BYTES) -> str:
    """A name any common file system takes as one file name: no path separators or characters
    Windows refuses, no control or invisible formatting characters (a right-to-left override
    can disguise an extension), whitespace runs as one space, no leading or trailing dots and
    spaces, not a Windows device name, at most `max_bytes` of UTF-8, never empty. Letters of
    every script are kept."""
    text = unicodedata.normalize("NFC", str(text))
    kept = []
    for char in text:
        category = unicodedata.category(char)
        if char in _UNSAFE:
            kept.append("-")
        elif category in ("Zl", "Zp") or char.isspace():
            kept.append(" ")
        elif category in ("Cc", "Cf", "Cs", "Co", "Cn"):
            continue
        else:
            kept.append(char)
    name = _tidy(re.sub(r" +", " ", "".join(kept)))
    encoded = name.encode("utf-8")
    if len(encoded) > max_bytes:
        name = _tidy(encoded[:max_bytes].decode("utf-8", "ignore"))
    if name.split(".")[0].upper() in _WINDOWS_DEVICES:
        name += "_"
    return name or FALLBACK_NAME


def _tidy(name: str) -> str:
    # No leading dot (a hidden file), dash (read as an option) or space; no trailing dot or
    # space (Windows drops them, so two names would clash).
    return name.lstrip(" .-").rstrip(" .")


def unique_path(folder: str | os.PathLike[str], name: str, suffix: str) -> Path:
    """folder/name+suffix, or with _2, _3 ... before the suffix: the first that is not already
    there (a file, folder or link). Another program may still create it before the caller does:
    write with an exclusive create (or an atomic rename) to be sure."""
    folder = Path(folder)
    if suffix and not suffix.startswith("."):
        suffix = "." + suffix
    base = safe_file_name(name)
    for number in itertools.count(1):
        stem = base if number == 1 else f"{base}_{number}"
        candidate = folder / f"{stem}{suffix}"
        if not os.path.lexists(candidate):
            return candidate
    raise AssertionError("unreachable")  # itertools.count never ends
