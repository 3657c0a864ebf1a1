"""The adapters (LoRA/DoRA files) a request asks for: the `FILE[:STRENGTH]` form every text
front end shares (`--lora`, a sound list's `lora` column), and the check a request's adapters
get at the front end's edge: the file is there and readable, the strength is in range, and the
adapter is one the branch engine can serve (engines.adapters says which, as a sentence).

Strength is the official Stable Audio 3 range: 0 turns an adapter off, 1 is its full trained
effect, above 1 exaggerates it, up to 10 (the official app's slider)."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from engines.adapters.choice import DEFAULT_STRENGTH, AdapterChoice
from engines.adapters.files import AdapterInfo, check_servable, read_adapter_info
from engines.error_sentences import printable
from engines.errors import Advice, Remedy, RequestError
from engines.request_checks import echo, fmt, is_number

MIN_STRENGTH = 0.0
MAX_STRENGTH = 10.0
# Remedy keys each front end words: the adapter file (--lora FILE, the row's lora column, the
# Adapters panel's Add button) and its strength (:STRENGTH, the slider).
ADAPTER_FILE = "lora"
ADAPTER_STRENGTH = "lora_strength"
# "FILE" or "FILE:STRENGTH"; the strength is the text after the last colon when it reads as a
# number, so C:\sounds\a.safetensors (a drive letter) and names with colons stay paths.
_STRENGTH_TAIL = re.compile(r"^(?P<path>.+):(?P<strength>[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?"
                            r"|[+-]?(?:inf|nan))$", re.IGNORECASE)
# A cell of several adapters: items split at blanks; a path with blanks goes in double quotes,
# its :STRENGTH after the closing quote ("my pads.safetensors":0.5).
_CELL_ITEM = re.compile(r'"(?P<quoted>[^"]*)"(?P<tail>:\S*)?|(?P<plain>\S+)')


def parse_adapter_text(text: str, folder: Path | None = None) -> AdapterChoice:
    """`FILE[:STRENGTH]` as a choice; a relative FILE is taken from `folder` (a sound list's
    folder) when given. The strength is only parsed here: `checked_adapters` checks it."""
    text = str(text).strip()
    if not text:
        raise RequestError(Advice("an adapter in {0} has no file name; write FILE or "
                                  "FILE:STRENGTH.", Remedy.setting(ADAPTER_FILE)))
    path_text, strength = text, DEFAULT_STRENGTH
    match = _STRENGTH_TAIL.match(text)
    if match is not None and not _exists(text):
        path_text, strength = match["path"], float(match["strength"])
    elif text.endswith(":"):
        raise RequestError(Advice(f"adapter '{printable(text)}' has an empty strength; write "
                                  "a number after the colon in {0}, or leave the colon out "
                                  "for strength 1.", Remedy.setting(ADAPTER_FILE)))
    elif ":" in text and text.rsplit(":", 1)[0].lower().endswith(".safetensors") \
            and not _exists(text):  # "a.safetensors:high"
        _strength_text(text.rsplit(":", 1)[1], f"'{text}'")
    return AdapterChoice(_placed(path_text, folder), strength)


def parse_adapter_cell(value: object, folder: Path | None = None) -> tuple[AdapterChoice, ...]:
    """A sound list's `lora` cell: "a.safetensors:0.8 b.safetensors:0.5" (CSV), or in JSON
    that text, a list of such items, or objects {"file": ..., "strength": ...}."""
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(_cell_items(value, folder))
    if isinstance(value, list):
        return tuple(_json_item(item, folder) for item in value)
    raise RequestError(f"lora {_shown(value)} is not a list of adapters; write FILE:STRENGTH "
                       "items, e.g. \"a.safetensors:0.8 b.safetensors:0.5\".")


def _cell_items(text: str, folder: Path | None) -> list[AdapterChoice]:
    items = []
    for match in _CELL_ITEM.finditer(text):
        if match["plain"] is not None:
            items.append(parse_adapter_text(match["plain"], folder))
            continue
        choice = parse_adapter_text(match["quoted"], folder) if match["quoted"].strip() else \
            parse_adapter_text("", folder)
        tail = match["tail"]
        if tail:  # the quotes kept the path whole; the strength follows them
            strength = _strength_text(tail[1:], match[0])
            choice = AdapterChoice(choice.path, strength)
        items.append(choice)
    return items


def _strength_text(text: str, item: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise RequestError(Advice(f"adapter {printable(item)} has strength '{printable(text)}',"
                                  f" which is not a number; write a strength from "
                                  f"{fmt(MIN_STRENGTH)} to {fmt(MAX_STRENGTH)} ({{0}}).",
                                  Remedy.setting(ADAPTER_STRENGTH))) from None


def _json_item(item: object, folder: Path | None) -> AdapterChoice:
    if isinstance(item, str):
        return parse_adapter_text(item, folder)
    if isinstance(item, dict) and isinstance(item.get("file"), str):
        strength = item.get("strength", DEFAULT_STRENGTH)
        if isinstance(strength, bool) or not isinstance(strength, (int, float)):
            strength = _strength_text(str(strength), repr(item["file"]))
        return AdapterChoice(_placed(item["file"], folder), float(strength))
    raise RequestError(f"lora item {_shown(item)} is not an adapter; write \"FILE:STRENGTH\" "
                       "or {\"file\": FILE, \"strength\": 0.8}.")


def _exists(path: str | Path) -> bool:
    """Whether `path` names something; False for a name no file can have (a NUL, too long)."""
    return os.path.exists(os.path.expanduser(path))


def _placed(text: str, folder: Path | None) -> Path:
    path = Path(text).expanduser()
    return folder / path if folder is not None and not path.is_absolute() else path


def _shown(value: object) -> str:
    text = printable(repr(value))
    return text if len(text) <= 40 else text[:37] + "..."


# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckedAdapters:
    """A request's adapters as the engines run them: each choice with its path absolute and
    its strength checked, what each file is (name, SHA-256, variant, rank), and the sentences
    to show about them."""

    choices: tuple[AdapterChoice, ...] = ()
    infos: tuple[AdapterInfo, ...] = ()
    warnings: tuple[str, ...] = ()


def checked_adapters(adapters: Sequence[AdapterChoice] | None) -> CheckedAdapters:
    """Every adapter of a request checked: RequestError (one sentence with its remedy) for a
    missing or unreadable file, a strength out of range, or an adapter the engine refuses."""
    if not adapters:
        return CheckedAdapters()
    if isinstance(adapters, (str, bytes, AdapterChoice)) or not isinstance(adapters, Sequence):
        raise RequestError(f"adapters must be a list of adapter choices, got {_shown(adapters)}.")
    choices, infos, warnings = [], [], []
    for choice in adapters:
        if not isinstance(choice, AdapterChoice):
            raise RequestError(f"adapter {_shown(choice)} is not an adapter choice; give a file "
                               "and a strength.")
        path = _existing_file(Path(choice.path))
        strength = _checked_strength(choice, path)
        info = adapter_info(path)
        choices.append(AdapterChoice(path, strength, bool(choice.enabled)))
        infos.append(info)
        warnings += [w for w in getattr(info, "warnings", ()) if w not in warnings]
    return CheckedAdapters(tuple(choices), tuple(infos), tuple(warnings))


def _existing_file(path: Path) -> Path:
    if not os.path.isfile(path):  # never raises, whatever the name holds
        what = "is not a file" if _exists(path) else "was not found"
        raise RequestError(Advice(f"adapter file '{printable(path)}' {what}; check the path "
                                  "in {0} (a .safetensors LoRA or DoRA).",
                                  Remedy.file(ADAPTER_FILE)))
    return path.resolve()


def _checked_strength(choice: AdapterChoice, path: Path) -> float:
    value = choice.strength
    number = float(value) if is_number(value) else math.nan
    if MIN_STRENGTH <= number <= MAX_STRENGTH:
        return number
    given = echo(number) if is_number(value) and math.isfinite(number) else _shown(value)
    raise RequestError(Advice(
        f"the strength {given} of adapter '{printable(path.name)}' is out of range; give a "
        f"strength from {fmt(MIN_STRENGTH)} to {fmt(MAX_STRENGTH)} ({{0}}; 0 turns it off, "
        "1 is its full effect).", Remedy.setting(ADAPTER_STRENGTH)))


def adapter_info(path: Path) -> AdapterInfo:
    """What the adapter file at `path` is, refused here when the branch engine cannot serve it
    (engines.adapters reads it and keeps the last few it read, by path, size and modification
    time: the window's live re-render checks its request on every slider move)."""
    info = read_adapter_info(path)
    check_servable(info)  # a refused variant is refused at the edge, not at render time
    return info
