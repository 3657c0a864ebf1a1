"""Export file names, the one rule every way out uses: a template with fields, made safe for
every file system we deliver to, and never the name of a file that is already there.

Fields: {name} (the take's name), {prompt}, {seed}, {n} (the variation number: {n:02} gives
01, 02 ...), {preset}, {date} (YYYYMMDD), {category} (e.g. a UCS CatID such as DOORWood, which
users bring themselves; we do not ship the list), and the UCS blocks {catid}, {fxname},
{creator} and {source}; the template `ucs` stands for {catid}_{fxname}_{creator}_{source}.
Format specs are Python's ({n:03}, {seed:x}), with widths bounded so a template can never ask
for a name longer than a file name may be.

A field with nothing to say (no category given, an imported take's seed) drops out together
with the separator (_ - . or space) before it, or after it when it comes first, so
`{category}_{name}_{n:02}` without a category is `footstep_01`, never `_footstep_01`. {n} is
the take's variation number in its set (engines.store.families), never its place in what is
being exported; a take whose name already ends in that number (a batch take kept as
`footstep_01` by an older version) does not get it twice. UCS names number a set's variations
at the end of the FXName block, two digits: `FOOTGrvl_Gravel Step 01_JD_SA3`; a sound made
once has no number. A set named by a template without {n} is numbered as `--out` names are, so
variations never share a name; a template whose fields are all empty gives the take's name.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import os
import re
import string
import unicodedata
from pathlib import Path

from engines.delivery.delivery_take import DeliveryTake
from engines.delivery.ucs import FX_NAME_MAX, ucs_block, ucs_name
from engines.errors import RequestError
from engines.paths import data_dir
from engines.settings import read_settings

FIELDS = ("name", "prompt", "seed", "n", "preset", "date", "category", "catid", "fxname",
          "creator", "source")
AUDIO_SUFFIXES = (".wav", ".flac", ".ogg", ".mp3", ".aif", ".aiff", ".opus")
UCS_TEMPLATE = "ucs"  # CatID_FXName_CreatorID_SourceID, built by engines.delivery.ucs
# A width or precision in a format spec above this could only make a name no file system takes
# ({n:0>100000000} would build a 100 MB string first): refused before formatting.
MAX_SPEC_NUMBER = 255
_TEXT_FIELDS = ("name", "prompt", "fxname", "preset", "category")  # cut first when too long
DEFAULT_TEMPLATE = "{name}_{n:02}"  # variation sets come out as name_01 .. name_NN
TEMPLATE_SETTING = "export_name_template"  # the key in settings.json
# UTF-8 bytes a name may take: most file systems allow 255, and the numbered suffix (_2 ...)
# and the extension need room after it.
MAX_NAME_BYTES = 150
FALLBACK_NAME = "take"
SLUG_CHARS = 60  # characters of a prompt in a {name} made from it
SLUG_BYTES = 120

_FIELD_LIST = ", ".join("{" + field + "}" for field in FIELDS)
_UNSAFE = set('/\\:*?"<>|')  # path separators, and what Windows refuses in a name
# Names Windows keeps for devices, whatever the extension ("nul.wav" is the null device too):
# COM0-9 and LPT0-9 with the superscript digits Windows also counts, and the console names.
_WINDOWS_DEVICES = {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$",
                    *(f"{port}{digit}" for port in ("COM", "LPT")
                      for digit in "0123456789\u00b9\u00b2\u00b3")}
# Characters of a whole path Windows opens without long-path support (MAX_PATH 260 with the
# terminating NUL); names in a folder are cut to fit, room kept for a number (_999).
WINDOWS_MAX_PATH = 259
_NUMBER_ROOM = 4
_MIN_FITTED = 8  # below this a cut name says nothing; the OS refuses it and the error says why


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
            _check_spec_size(field, spec or "")
        checked.append((literal, field, spec or ""))
    return checked


def _check_spec_size(field: str, spec: str) -> None:
    """Refuse a width or precision no file name could hold, before anything is formatted."""
    numbers = [int(run) for run in re.findall(r"\d{1,12}", spec)] + \
        [MAX_SPEC_NUMBER + 1 for run in re.findall(r"\d{13,}", spec)]
    if any(number > MAX_SPEC_NUMBER for number in numbers):
        raise RequestError(f"The name template field {{{field}:{_short(spec)}}} asks for a "
                           f"name longer than a file name can be; use a width of at most "
                           f"{MAX_NAME_BYTES}, e.g. {{n:02}}.")


def _short(text: str, limit: int = 24) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def check_template(template: str) -> None:
    """RequestError (one sentence) when the template would not render."""
    render_name(template, name="name", prompt="prompt", seed=1, n=1, preset="preset",
                category="category", catid="CATid", fxname="fx", creator="me", source="src")


def render_name(template: str, *, name: str = "", prompt: str = "", seed: int | None = None,
                n: int = 1, preset: str = "", date: _dt.date | None = None,
                category: str = "", catid: str = "", fxname: str = "", creator: str = "",
                source: str = "", max_bytes: int = MAX_NAME_BYTES, of: int = 1) -> str:
    """The template filled in and made file-name safe (see safe_file_name). When the result
    would pass `max_bytes`, the text fields (name, prompt, ...) are cut, never the rest: a
    long name keeps its `_02` and `.wav`. UCS blocks have `_` inside them replaced (it is the
    block separator) and FXName cut under 25 characters, as UCS asks; `n` of `of`: the
    variation number, which a UCS name puts at the end of FXName when the set has more than
    one take."""
    if template.strip() == UCS_TEMPLATE:
        fx = ucs_fx_name(fxname or name, n, of)
        return safe_file_name(ucs_name(catid, fx, creator, source), max_bytes)
    parts = _parsed(template)
    values: dict[str, object] = {
        "name": name, "prompt": prompt, "seed": "" if seed is None else seed, "n": n,
        "preset": preset, "date": (date or _dt.date.today()).strftime("%Y%m%d"),
        "category": category, "catid": ucs_block(catid),
        "fxname": ucs_block(fxname)[:FX_NAME_MAX], "creator": ucs_block(creator),
        "source": ucs_block(source),
    }
    if name and not _filled(parts, values).strip(_SEPARATORS):
        parts = _parsed("{name}")  # every field empty: the take's name, never just "take"
    # A set of variations named by a template without {n} is numbered as `generate
    # --variations --out NAME` numbers it, so its files never share one name.
    numbered = of > 1 and not any(field == "n" for _, field, _ in parts)

    def filled() -> str:
        text = _filled(parts, values)
        return numbered_stem(text, n, catid) if numbered else text

    text = filled()
    for _ in range(64):  # each pass cuts the longest text field by the excess
        excess = len(safe_file_name(text, max_bytes=1 << 20).encode("utf-8")) - max_bytes
        longest = max(_TEXT_FIELDS, key=lambda key: len(str(values[key]).encode("utf-8")))
        longest_bytes = str(values[longest]).encode("utf-8")
        if excess <= 0 or not longest_bytes:
            break
        keep = max(0, len(longest_bytes) - excess - 1)
        values[longest] = longest_bytes[:keep].decode("utf-8", "ignore").rstrip()
        text = filled()
    return safe_file_name(text, max_bytes=max_bytes)


def ucs_fx_name(text: str, n: int, of: int) -> str:
    """The FXName block, numbered ` 01`, ` 02` ... when the take is one of a set of more than
    one (or not its first), cut so that text and number stay under 25 characters."""
    block = ucs_block(text)
    if of <= 1 and n <= 1:
        return block[:FX_NAME_MAX].rstrip()
    number = f"{n:02d}"
    return f"{block[:FX_NAME_MAX - len(number) - 1].rstrip()} {number}".lstrip()


_SEPARATORS = "_-. "  # what stands between fields in a template; dropped with an empty one


def _filled(parts: list[tuple[str, str | None, str]], values: dict[str, object]) -> str:
    text = ""
    drop_next = False  # the field before was empty and had no separator before it
    for literal, field, spec in parts:
        text += literal.lstrip(_SEPARATORS) if drop_next else literal
        drop_next = False
        if field is None:
            continue
        if values[field] == "":  # nothing to say: it goes, with one separator beside it
            kept = text.rstrip(_SEPARATORS)
            drop_next = kept == text
            text = kept
            continue
        try:
            text += format(values[field], spec)
        except (ValueError, TypeError):
            raise RequestError(f"The format {{{field}:{spec}}} in the name template does not "
                               f"fit {field} ({values[field]!r}); use e.g. {{n:02}} for "
                               "01, 02 ...") from None
    return text


def slug(text: str, *, ascii_only: bool = False) -> str:
    """A file-name-safe version of a prompt: words joined by '-', at most SLUG_CHARS characters.

    Latin text is transliterated ("Café" -> "cafe"); letters of scripts without an ASCII form
    (Arabic, Hebrew, CJK, ...) are kept as they are, unless `ascii_only` (for a file system that
    refuses them). Punctuation, symbols, emoji and invisible controls (bidi overrides could
    disguise a name) become separators. Nothing readable left gives "take".
    """
    words: list[str] = []
    word: list[str] = []
    for char in unicodedata.normalize("NFC", str(text)):
        kind = unicodedata.category(char)
        if kind.startswith("M"):  # a combining mark belongs to the letter before it
            if word and not ascii_only:
                word.append(char)
            continue
        plain = "".join(c for c in unicodedata.normalize("NFKD", char)
                        if not unicodedata.combining(c))
        if plain and plain.isascii():
            kept = "".join(c for c in plain.lower() if c.isalnum())
            if kept:
                word.append(kept)
                continue
        elif kind[0] in "LN":  # a letter with no ASCII form: kept, or left out of its word
            if not ascii_only:
                word.append(char.lower())
            continue
        if word:
            words.append("".join(word))
            word = []
    if word:
        words.append("".join(word))
    return _shorten("-".join(words)) or FALLBACK_NAME


def _shorten(name: str) -> str:
    name = name[:SLUG_CHARS]
    while len(name.encode("utf-8")) > SLUG_BYTES:
        name = name[:-1]
    return name.strip("-")


def stored_template() -> str:
    """The export name template the user set (Settings, the finishing panel), else
    DEFAULT_TEMPLATE; RequestError for a stored template that no longer works (the window says
    so, the command line quietly uses the default)."""
    value = read_settings(data_dir()).get(TEMPLATE_SETTING, DEFAULT_TEMPLATE)
    check_template(value)
    return value


def default_template() -> str:
    """The stored export name template; the default in place of one that no longer works."""
    try:
        return stored_template()
    except RequestError:
        return DEFAULT_TEMPLATE


def take_stem(template: str, take: DeliveryTake, n: int = 1, preset: str = "",
              day: _dt.date | None = None, of: int = 1) -> str:
    """The one name rule: the file name (no suffix) of `take`, variation `n` of a set of `of`
    (engines.store.families), by `template` - the same for raw and finished files and for
    every way out."""
    labels = take.labels
    name = take.name
    if Path(name).suffix.lower() in AUDIO_SUFFIXES:  # an import named after its file
        name = Path(name).stem
    fx_name = labels.fx_name
    if _numbers_variations(template, n, of):  # else a number is the user's ("Level Up 1")
        name, fx_name = without_number(name, n), without_number(fx_name, n)
    name = name or slug(take.prompt or "take")
    return render_name(template, name=name,
                       prompt=take.prompt, seed=take.seed, n=n, preset=preset, date=day,
                       category=labels.catid or labels.category, catid=labels.catid,
                       fxname=fx_name or name,
                       creator=labels.creator, source=labels.source, of=of)


def _numbers_variations(template: str, n: int, of: int) -> bool:
    """Whether the name `template` gives carries the variation number."""
    if template.strip() == UCS_TEMPLATE:
        return n > 1 or of > 1
    return of > 1 or any(field == "n" for _, field, _ in _parsed(template))


def without_number(name: str, n: int) -> str:
    """`name` without a variation number `n` it already ends in (`footstep_01`, `Step 01`),
    so that a name template adding the number says it once."""
    match = re.fullmatch(rf"(.*?\S)[ _-]0*{int(n)}", name)
    return match.group(1) if match else name


def numbered_stem(stem: str, n: int, catid: str = "") -> str:
    """Variation `n`'s file name for a set written under one name (`generate --variations
    --out STEM`): a UCS name (it starts with the take's CatID block) numbers its FXName
    block, `FOOTGrvl_Gravel Step 02_JD_SA3`; any other name gets `_02`."""
    blocks = stem.split("_")
    if catid and len(blocks) >= 2 and blocks[0] == ucs_block(catid):
        blocks[1] = ucs_fx_name(blocks[1], n, 2)
        return "_".join(blocks)
    return f"{stem}_{n:02d}"


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
    head, dot, rest = name.partition(".")
    if head.rstrip(" ").upper() in _WINDOWS_DEVICES:  # "nul.wav" is the device too: nul_.wav
        name = f"{head.rstrip(' ')}_{dot}{rest}"
    return name or FALLBACK_NAME


def _on_windows() -> bool:
    return os.name == "nt"


def _fitted(base: str, folder: Path | None, suffixes: tuple[str, ...]) -> str:
    """On Windows, base cut so that folder/base_NNN with the longest suffix stays within
    WINDOWS_MAX_PATH characters; elsewhere (and in a zip, folder None) base as it is."""
    if folder is None or not _on_windows():
        return base
    longest = max((len(s) for s in suffixes), default=0)
    room = WINDOWS_MAX_PATH - len(str(Path(folder).absolute())) - 1 - longest - _NUMBER_ROOM
    if len(base) <= room:
        return base
    return _tidy(base[:max(room, _MIN_FITTED)]) or FALLBACK_NAME


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
    base = _fitted(safe_file_name(name), folder, (suffix,))
    for number in itertools.count(1):
        stem = base if number == 1 else f"{base}_{number}"
        candidate = folder / f"{stem}{suffix}"
        if not os.path.lexists(candidate):
            return candidate
    raise AssertionError("unreachable")  # itertools.count never ends


def free_name(folder: Path | None, stem: str, suffix: str, taken: set[str] | None = None,
              companions: tuple[str, ...] = (".json",)) -> Path:
    """folder/stem+suffix, or stem_2, stem_3 ...: the first name whose file and companions
    (the sidecar) are neither on disk nor in `taken` (names given out already in this run,
    compared without case: some file systems and zip readers ignore it). `folder` None: a
    name inside a new zip, where only `taken` counts. Another program may still create it
    before the caller does: move into place with an exclusive create or check again."""
    taken = taken or set()
    base = _fitted(safe_file_name(stem), folder, (suffix, *companions))
    for number in itertools.count(1):
        candidate_stem = base if number == 1 else f"{base}_{number}"
        audio = Path(folder or "", f"{candidate_stem}{suffix}")
        names = [audio] + [audio.with_name(candidate_stem + extra) for extra in companions]
        if any(path.name.casefold() in taken for path in names):
            continue
        if folder is not None and any(os.path.lexists(path) for path in names):
            continue
        return audio
    raise AssertionError("unreachable")  # itertools.count never ends
