"""The delivered file's metadata as Vorbis comments, for FLAC and Ogg Vorbis: the same fields
a WAV carries in bext and iXML, under the keys sound-library tools and players look for.

Keys (Vorbis comment keys are case-insensitive; we write them upper case):
- DESCRIPTION, DATE (ISO yyyy-mm-dd), ARTIST, ALBUM, ORGANIZATION: fields the Xiph Vorbis
  comment recommendation defines, which every player and tagger shows.
- CATEGORY, SUBCATEGORY, CATID, FXNAME, DESIGNER, LIBRARY, NOTES: the names of the iXML USER
  fields library tools (REAPER's Media Explorer, Soundminer, BaseHead) read from WAV, so a
  tool that maps custom Vorbis keys finds the same words; that each of those tools reads them
  from FLAC/Ogg is not verified here. The designer and library are written twice (DESIGNER +
  ARTIST, LIBRARY + ALBUM) so tools that only know the standard keys still show them.
- LOOPSTART, LOOPLENGTH (frames): the loop tags game engines and players read from Ogg
  (RPG Maker, Godot's importer, ...), as engines.delivery.writer writes them.
- LOUDNESS (LUFS), TRUEPEAK (dBTP), ISLOOP, ISGENERATED ("true"/"false"): the ASWG fields of
  the same meaning, upper-cased.
COMMENT is left alone: it holds the app's JSON note (engines.delivery.writer). ENCODER is
libsndfile's (it writes the software name there).
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import struct
from collections.abc import Mapping
from pathlib import Path

from engines.error_sentences import sentence, shown
from engines.errors import AudioFileError
from engines.finish.vorbis_comments import flac_with_tags, ogg_with_tags

# our field -> the Vorbis keys it is written under
TEXT_KEYS: dict[str, tuple[str, ...]] = {
    "description": ("DESCRIPTION",),
    "category": ("CATEGORY",),
    "subcategory": ("SUBCATEGORY",),
    "catid": ("CATID",),
    "fx_name": ("FXNAME",),
    "designer": ("DESIGNER", "ARTIST"),
    "library": ("LIBRARY", "ALBUM"),
    "notes": ("NOTES",),
    "originator": ("ORGANIZATION",),
    "originator_reference": ("ORIGINATOR_REFERENCE",),
}
FRAME_KEYS = {"loop_start": "LOOPSTART", "loop_length": "LOOPLENGTH"}
NUMBER_KEYS = {"loudness": "LOUDNESS", "true_peak": "TRUEPEAK"}
FLAG_KEYS = {"is_loop": "ISLOOP", "is_generated": "ISGENERATED"}
DATE_KEYS = {"date": "DATE"}
FIELDS = frozenset((*TEXT_KEYS, *FRAME_KEYS, *NUMBER_KEYS, *FLAG_KEYS, *DATE_KEYS))
# A FLAC metadata block holds at most 16 MiB; no tag needs more than this many characters.
MAX_VALUE_CHARS = 32_768


def vorbis_fields(fields: Mapping[str, object]) -> dict[str, str]:
    """Our metadata fields (keys in FIELDS) as upper-case Vorbis comment keys with text values;
    None and empty values are left out, as are unmeasured (NaN) and infinite numbers.
    ValueError for an unknown field or a value of the wrong type (a programming error)."""
    unknown = sorted(key for key in fields if key not in FIELDS)
    if unknown:
        raise ValueError(f"unknown metadata field(s) {unknown}; use {sorted(FIELDS)}")
    tags: dict[str, str] = {}
    for key, value in fields.items():
        if value is None or value == "":
            continue
        if key in TEXT_KEYS:
            text = _text(key, value)
            if text:
                tags.update(dict.fromkeys(TEXT_KEYS[key], text))
        elif key in FRAME_KEYS:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{key} is a frame count from 0, not {value!r}")
            tags[FRAME_KEYS[key]] = str(value)
        elif key in NUMBER_KEYS:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{key} is a number, not {value!r}")
            if math.isfinite(value):
                tags[NUMBER_KEYS[key]] = f"{float(value):.2f}"
        elif key in FLAG_KEYS:
            if not isinstance(value, bool):
                raise ValueError(f"{key} is True or False, not {value!r}")
            tags[FLAG_KEYS[key]] = "true" if value else "false"
        else:
            tags[DATE_KEYS[key]] = _date(key, value)
    return tags


def _text(key: str, value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{key} is text, not {value!r}")
    # Vorbis comments are UTF-8: a lone surrogate cannot be encoded, NUL ends C strings in
    # some readers; other control characters are dropped too, keeping tabs and line breaks.
    text = value[:MAX_VALUE_CHARS].encode("utf-8", "replace").decode("utf-8")
    return "".join(ch for ch in text if ch in "\t\n" or (ord(ch) >= 0x20 and ord(ch) != 0x7F)
                   ).strip()


def _date(key: str, value: object) -> str:
    if isinstance(value, _dt.date):
        return value.strftime("%Y-%m-%d")
    if isinstance(value, str):
        try:
            return _dt.date.fromisoformat(value.strip()[:10]).isoformat()
        except ValueError:
            pass
    raise ValueError(f"{key} is a date (yyyy-mm-dd), not {value!r}")


def add_vorbis_fields(path: str | os.PathLike[str], fields: Mapping[str, object]) -> None:
    """Set `fields` (see vorbis_fields) in the FLAC or Ogg Vorbis file at `path`, in place.

    For a file the caller is still preparing (an atomic save's temporary): the rewrite is not
    atomic by itself. The comment rewriting is engines.finish.vorbis_comments'."""
    file = Path(path)
    what = "Could not add metadata to"
    tags = vorbis_fields(fields)
    if not tags:
        return
    try:
        data = file.read_bytes()
    except OSError as err:
        raise AudioFileError(sentence(f"{what} {shown(file)}", err)) from err
    rewrite = flac_with_tags if data[:4] == b"fLaC" else ogg_with_tags
    try:
        tagged = rewrite(data, tags)
    except (ValueError, IndexError, OverflowError, struct.error) as err:
        raise AudioFileError(f"{what} {shown(file)}: it is not a FLAC or Ogg Vorbis file as "
                             f"SA3 Studio writes them; export it again.") from err
    try:
        file.write_bytes(tagged)
    except OSError as err:
        raise AudioFileError(sentence(f"{what} {shown(file)}", err)) from err
