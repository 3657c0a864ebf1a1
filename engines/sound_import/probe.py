"""One sound file read for the library, without decoding its audio: its header (libsndfile
recognises the format by content, not by name), its metadata, and a content fingerprint.

The fingerprint lets a rescan recognise a file that was moved or renamed: SHA-256 over the
file's size, its first FINGERPRINT_BYTES and its last FINGERPRINT_BYTES (the whole file when it
is shorter than both), 32 hex digits. Header and tail together change with any edit a sound
tool makes (a new length, new metadata, new audio at either end); an edit in the middle of a
long file that keeps its size and both ends is not seen as a change of content, but it
changes the file's mtime, which a rescan compares first.

The file is opened only for reading, twice: once as bytes (fingerprint, metadata chunks),
once by libsndfile (the header)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import soundfile as sf

from engines.delivery.ucs import UcsList
from engines.error_sentences import os_reason
from engines.sound_import.ixml_meta import ixml_fields
from engines.sound_import.metadata import SoundMetadata, merged
from engines.sound_import.riff_meta import bext_fields, info_fields, riff_chunks
from engines.sound_import.ucs_filename import ucs_name_fields
from engines.sound_import.vorbis_meta import FIRST_READ, vorbis_comments
from engines.sound_import.walk import FoundFile
from engines.store.wavmeta import sf_name

FINGERPRINT_BYTES = 64 * 1024
# Names a sound file usually has: one of these that libsndfile cannot read is reported as
# skipped with the reason; any other file that is no sound (a text, an image) is ignored.
SOUND_SUFFIXES = frozenset((".wav", ".wave", ".bwf", ".rf64", ".w64", ".flac", ".ogg", ".oga",
                            ".opus", ".aif", ".aiff", ".aifc", ".mp3", ".caf"))
_RIFF_FORMATS = ("WAV", "WAVEX", "RF64")
_STRINGS = ("title", "comment", "artist", "album", "genre", "date", "copyright")
_SF_ERRORS = (sf.SoundFileError, RuntimeError, ValueError, TypeError, MemoryError,
              OverflowError)


class NotReadable(Exception):
    """The file cannot be imported: `reason` is a clause for the user ("libsndfile cannot read
    it"); `sound_like` tells whether its name says it should be a sound (then it is reported)."""

    def __init__(self, reason: str, sound_like: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.sound_like = sound_like


@dataclass
class SoundEntry:
    """What the library keeps of one file (engines.sound_import.sound_rows turns it into rows)."""

    path: str
    root: str
    size: int
    mtime_ns: int
    fingerprint: str
    format: str
    subtype: str
    channels: int
    sample_rate: int
    frames: int
    metadata: SoundMetadata = field(default_factory=SoundMetadata)


def read_sound(found: FoundFile, root: str, ucs: UcsList | None) -> SoundEntry:
    """The entry of `found`; NotReadable when it is no sound libsndfile can read."""
    path = found.path
    sound_like = Path(path).suffix.lower() in SOUND_SUFFIXES
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise NotReadable("its name is not valid UTF-8, so the library cannot keep it; rename "
                          "it", sound_like) from None
    groups: dict[str, dict[str, str]] = {}
    try:
        with open(path, "rb") as raw:
            head = raw.read(max(FINGERPRINT_BYTES, FIRST_READ))
            fingerprint = _fingerprint(raw, head, found.size)
            header = _header(path, sound_like)
            if header.format in _RIFF_FORMATS:
                _riff_groups(raw, found.size, groups)
            elif header.format in ("FLAC", "OGG"):
                groups["vorbis"] = vorbis_comments(raw, head)
    except OSError as err:
        raise NotReadable(f"it cannot be read ({os_reason(err)[0]})", True) from err
    groups["strings"] = header.strings
    groups["ucs_name"] = ucs_name_fields(Path(path).stem, ucs)
    return SoundEntry(path, root, found.size, found.mtime_ns, fingerprint, header.format,
                      header.subtype, header.channels, header.sample_rate, header.frames,
                      merged(groups))


@dataclass
class _Header:
    format: str
    subtype: str
    channels: int
    sample_rate: int
    frames: int
    strings: dict[str, str]


def _header(path: str, sound_like: bool) -> _Header:
    try:
        with sf.SoundFile(sf_name(path)) as handle:
            strings = {}
            for key in _STRINGS:
                value = getattr(handle, key, "") or ""
                if value.strip():
                    strings[key] = " ".join(value.split())
            header = _Header(str(handle.format), str(handle.subtype), int(handle.channels),
                             int(handle.samplerate), int(handle.frames), strings)
    except _SF_ERRORS as err:
        raise NotReadable("it is not a sound file libsndfile can read (WAV, BWF, FLAC, Ogg, "
                          "AIFF, MP3...)", sound_like) from err
    if header.frames <= 0 or header.sample_rate <= 0 or header.channels <= 0:
        raise NotReadable("it holds no audio", sound_like)
    return header


def _fingerprint(raw, head: bytes, size: int) -> str:  # noqa: ANN001 (an open binary file)
    digest = hashlib.sha256(str(size).encode("ascii"))
    digest.update(head[:FINGERPRINT_BYTES])
    if size > FINGERPRINT_BYTES:
        raw.seek(max(FINGERPRINT_BYTES, size - FINGERPRINT_BYTES))
        digest.update(raw.read(FINGERPRINT_BYTES))
    return digest.hexdigest()[:32]


def _riff_groups(raw, size: int, groups: dict[str, dict[str, str]]) -> None:  # noqa: ANN001
    chunks = riff_chunks(raw, size)
    if b"bext" in chunks:
        groups["bext"] = bext_fields(chunks[b"bext"][0])
    if b"iXML" in chunks:
        groups.update(ixml_fields(chunks[b"iXML"][0]))
    if b"LIST" in chunks:
        groups["info"] = info_fields(chunks[b"LIST"])

