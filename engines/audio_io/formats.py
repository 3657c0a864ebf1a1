"""The one table of file formats a take can leave as: container, sample encoding, suffix.

Every writer (drag-out, Save As, `generate --out`, batch, library export, zip) looks formats up
here, so a format means the same bytes whichever way the user asked for it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

from engines.error_sentences import shown
from engines.errors import AudioFileError


class FileFormat(NamedTuple):
    """How one export choice maps onto libsndfile: container, sample encoding, file suffix."""

    format: str  # libsndfile container: WAV, FLAC, OGG
    subtype: str  # libsndfile sample encoding: PCM_16, PCM_24, FLOAT, VORBIS
    suffix: str
    label: str  # in words, for menus and messages


FORMATS: Mapping[str, FileFormat] = MappingProxyType({
    "wav16": FileFormat("WAV", "PCM_16", ".wav", "WAV 16-bit"),
    "wav24": FileFormat("WAV", "PCM_24", ".wav", "WAV 24-bit"),
    "wav32f": FileFormat("WAV", "FLOAT", ".wav", "WAV 32-bit float"),
    "flac": FileFormat("FLAC", "PCM_24", ".flac", "FLAC 24-bit"),
    "ogg": FileFormat("OGG", "VORBIS", ".ogg", "Ogg Vorbis"),
})
DEFAULT_FORMAT = "wav16"


def suffix_for(fmt: str) -> str:
    return FORMATS[fmt].suffix


def suffix_list() -> str:
    """`.flac, .ogg or .wav`: the suffixes a file we write may have."""
    suffixes = sorted({spec.suffix for spec in FORMATS.values()})
    return ", ".join(suffixes[:-1]) + " or " + suffixes[-1]


def format_for_path(path: str | os.PathLike[str], default: str = DEFAULT_FORMAT) -> str:
    """The FORMATS key a file name asks for, from its suffix (case-insensitive).

    `default` settles suffixes several formats share: with default="wav24", a .wav name gives
    wav24 instead of wav16. A suffix no format uses is the user's to fix, so it raises.
    """
    file = Path(path)
    suffix = file.suffix.lower()
    if default in FORMATS and FORMATS[default].suffix == suffix:
        return default
    for name, spec in FORMATS.items():
        if spec.suffix == suffix:
            return name
    raise AudioFileError(f"Cannot save {shown(file.name)}: audio can only be saved as "
                         f"{suffix_list()}; change the file name to end in one of those.")


def checked_format(target: Path, fmt: str) -> FileFormat:
    """The FileFormat for `fmt`, refusing an unknown key or a name whose suffix does not fit
    (FLAC data inside a .wav name would confuse every other program that opens it)."""
    spec = FORMATS.get(fmt)
    if spec is None:
        raise AudioFileError(f"Cannot save {shown(target.name)}: '{fmt}' is not an export "
                             f"format; choose one of {', '.join(FORMATS)}.")
    if target.suffix.lower() != spec.suffix:
        raise AudioFileError(f"Cannot save {shown(target.name)} as {fmt}: the name must end in "
                             f"{spec.suffix}; rename it or choose the matching format.")
    return spec
