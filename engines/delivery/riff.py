"""RIFF/WAVE chunks libsndfile does not write: `bext` (Broadcast Wave), `iXML`, `cue ` - set in
a finished file the way engines.finish.smpl sets `smpl`, with every other chunk kept byte for
byte.

Where a chunk goes matters to its readers: BWF tools look for `bext` and `iXML` before the audio
(EBU Tech 3285 puts `bext` ahead of `data`, and a reader that stops at `data` still finds them),
while `smpl` and `cue ` go after it, as add_loop_points puts `smpl`.

Simple readers step from a chunk to `start + 8 + size` and ignore RIFF's pad byte after an odd
size: Godot 3's WAV importer then reads the pad byte as the next chunk's id, never finds `data`
or `smpl`, and imports silence (issue 30). So a delivery writes only even-sized chunks, its odd
text bodies filled out inside the chunk (`padded_inside`, PAD_INSIDE); and the one chunk whose
size is not ours to choose, `data` (24-bit mono of an odd frame count), is moved to the end
whenever it is odd, so no chunk follows a pad byte.

The loop's cue id: smpl_payload numbers its loops from 0 (loop i has cue id i), and `cue_payload`
numbers its points from 0 too, so `cue_payload([start for start, _ in loops])` gives each loop's
start a cue point whose id is that loop's id, as the RIFF spec's "dwIdentifier may correspond to
a cue point name" intends.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import struct
import unicodedata
from collections.abc import Iterable
from pathlib import Path

from engines.error_sentences import sentence, shown
from engines.errors import AudioFileError
from engines.finish.smpl import (
    CHUNK_HEADER,
    RIFF_LIMIT,
    SMPL_ID,
    Loop,
    WavLayout,
    read_wav_bytes,
    smpl_payload,
    wav_layout,
)

BEXT_ID = b"bext"
IXML_ID = b"iXML"
CUE_ID = b"cue "
# Before `data`, in this order; every other chunk we set goes after the audio.
BEFORE_DATA = (BEXT_ID, IXML_ID)
# Chunks that describe the audio itself: replacing them would break the file.
STRUCTURAL = frozenset({b"RIFF", b"RF64", b"BW64", b"fmt ", b"data", b"LIST", b"ds64"})
# How an odd body is filled out inside its own chunk, with what its readers already skip: a NUL
# after bext's CodingHistory (the C string readers take stops there; BWF writers pad so) and a
# space after iXML's document (XML allows white space after the root element). smpl (36 + 24
# bytes a loop) and cue (4 + 24 a point) are even by layout; libsndfile pads every INFO string.
PAD_INSIDE = {BEXT_ID: b"\0", IXML_ID: b" "}

# EBU Tech 3285 (v2, 2011) field sizes in bytes.
BEXT_DESCRIPTION = 256
BEXT_ORIGINATOR = 32
BEXT_ORIGINATOR_REFERENCE = 32
BEXT_RESERVED = 180
BEXT_VERSION = 2  # version 2 adds the loudness fields
BEXT_UMID = 64
BEXT_FIXED = struct.Struct("<256s32s32s10s8sQH64s5h180s")  # 602 bytes, then CodingHistory
LOUDNESS_UNKNOWN = 0x7FFF  # Tech 3285 v2: "not used" / not known

# RIFF cue chunk (Microsoft/IBM Multimedia Programming Interface 1.0): a count, then 24 bytes
# per point - id, position in play order, chunk id, chunk start, block start, sample offset.
CUE_COUNT = struct.Struct("<I")
CUE_POINT = struct.Struct("<II4sIII")
UINT32_MAX = 2**32 - 1


# --------------------------------------------------------------------------------------------
# Chunk editing


def add_loop_points(path: str | os.PathLike[str], loops: list[Loop]) -> None:
    """Write `loops` ((start, end inclusive) frames) into the WAV file at `path` as its one
    `smpl` chunk, in place (a file still being prepared, like set_wav_chunks)."""
    file = Path(path)
    what = "Could not add loop points to"
    layout = _layout(read_wav_bytes(file, what), file, what)
    for start, end in loops:
        if not 0 <= start <= end < layout.frames:
            raise AudioFileError(f"{what} {shown(file)}: the loop {start}..{end} lies outside "
                                 f"its {layout.frames} frames; give frames from 0 to "
                                 f"{layout.frames - 1}.")
    set_wav_chunks(file, [(SMPL_ID, smpl_payload(list(loops), layout.sample_rate))])


def read_wav_chunk(path: str | os.PathLike[str], chunk_id: bytes) -> bytes | None:
    """The payload of the first `chunk_id` chunk of the WAV file at `path`; None if it has none.
    AudioFileError (one sentence) when the file cannot be read or is not a WAV file."""
    file = Path(path)
    what = "Could not read the metadata of"
    data = read_wav_bytes(file, what)
    for found, offset, size in _layout(data, file, what).chunks:
        if found == chunk_id:
            start = offset + CHUNK_HEADER.size
            return data[start:start + size]
    return None


def set_wav_chunks(path: str | os.PathLike[str], chunks: list[tuple[bytes, bytes]]) -> None:
    """Rewrite the WAV file at `path` so it holds each (id, payload) chunk exactly once.

    Meant for a file the caller is still preparing (an atomic save's temporary): the rewrite is
    not atomic by itself. An old chunk of a given id is dropped wherever it was; `bext` and
    `iXML` go right before `data` (after fmt, fact and PEAK as libsndfile writes them), every
    other id at the end - or before `data` too when `data` is odd-sized, which then ends the
    file. All other chunks stay byte for byte, odd sizes get their pad byte, and the RIFF size
    is fixed (a delivery passes its payloads through padded_inside first, so that none of its
    chunks needs a pad byte). ValueError for an id that is not 4 bytes, is given twice, or
    names a chunk the audio depends on (fmt, data, LIST ...).
    """
    _check_ids(chunks)
    file = Path(path)
    what = "Could not add metadata to"
    data = read_wav_bytes(file, what)
    layout = _layout(data, file, what)
    replaced = {chunk_id for chunk_id, _ in chunks}
    before = [c for wanted in BEFORE_DATA for c in chunks if c[0] == wanted]
    after = [c for c in chunks if c[0] not in BEFORE_DATA]
    kept = [chunk for chunk in layout.chunks if chunk[0] not in replaced]
    if any(chunk_id == b"data" and size & 1 for chunk_id, _, size in kept):
        # A reader that ignores the pad byte would misread whatever follows an odd `data`.
        kept.sort(key=lambda chunk: chunk[0] == b"data")  # stable: only data moves, to the end
        before, after = before + after, []
    out = bytearray(data[:12])
    for chunk_id, offset, size in kept:
        if chunk_id == b"data":
            for new_id, payload in before:
                _append(out, new_id, payload)
        end = offset + CHUNK_HEADER.size + size
        if end > len(data):
            raise AudioFileError(f"{what} {shown(file)}: its {_id_text(chunk_id)} chunk is cut "
                                 f"short (the file is damaged); export it again.")
        out += data[offset:end]
        if len(out) & 1:
            out += b"\0"  # the pad byte an odd chunk needs, even if its writer left it out
    for new_id, payload in after:
        _append(out, new_id, payload)
    if len(out) - 8 > RIFF_LIMIT:
        raise AudioFileError(f"{what} {shown(file)}: the file would pass 4 GB, beyond what a "
                             f"WAV file can describe; export a shorter clip.")
    struct.pack_into("<I", out, 4, len(out) - 8)
    try:
        with open(file, "wb") as handle:
            handle.write(out)
    except OSError as err:
        raise AudioFileError(sentence(f"{what} {shown(file)}", err)) from err


def padded_inside(chunk_id: bytes, payload: bytes) -> bytes:
    """`payload` as an even-sized chunk body: an odd one gets its chunk's filler (PAD_INSIDE)
    at the end. ValueError for an odd payload of a chunk without one: a new chunk type must
    say how it pads before a delivery may carry it."""
    if not len(payload) & 1:
        return bytes(payload)
    if chunk_id not in PAD_INSIDE:
        raise ValueError(f"the {chunk_id!r} payload is {len(payload)} bytes (odd) and that "
                         f"chunk has no filler in PAD_INSIDE; make it even")
    return bytes(payload) + PAD_INSIDE[chunk_id]


def _check_ids(chunks: list[tuple[bytes, bytes]]) -> None:
    seen: set[bytes] = set()
    for chunk_id, payload in chunks:
        if not isinstance(chunk_id, bytes) or len(chunk_id) != 4:
            raise ValueError(f"a RIFF chunk id is 4 bytes, not {chunk_id!r}")
        if chunk_id in STRUCTURAL:
            raise ValueError(f"the {chunk_id!r} chunk is part of the audio and cannot be set")
        if chunk_id in seen:
            raise ValueError(f"the {chunk_id!r} chunk is given twice")
        if not isinstance(payload, bytes | bytearray):
            raise ValueError(f"the {chunk_id!r} payload must be bytes")
        seen.add(chunk_id)


def _append(out: bytearray, chunk_id: bytes, payload: bytes) -> None:
    out += CHUNK_HEADER.pack(chunk_id, len(payload)) + payload
    if len(payload) & 1:
        out += b"\0"  # RIFF: the size field says odd, the next chunk still starts even


def _id_text(chunk_id: bytes) -> str:
    return "'" + chunk_id.decode("latin-1").strip() + "'"


def _layout(data: bytes, file: Path, what: str) -> WavLayout:
    """smpl.wav_layout, with our own words for the files it refuses (its sentences speak of
    loop points)."""
    if data[:4] in (b"RF64", b"BW64"):
        raise AudioFileError(f"{what} {shown(file)}: it is an RF64 file (over 4 GB), which "
                             f"cannot carry this metadata; export a shorter clip.")
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise AudioFileError(f"{what} {shown(file)}: it is not a WAV file; export it as WAV.")
    try:
        return wav_layout(data, file)
    except AudioFileError:
        raise AudioFileError(f"{what} {shown(file)}: its WAV header has no format or data "
                             f"chunk (the file is damaged); export it again.") from None


# --------------------------------------------------------------------------------------------
# bext (EBU Tech 3285 version 2)


def bext_payload(*, description: str = "", originator: str = "",
                 originator_reference: str = "", origination: _dt.datetime | None = None,
                 time_reference: int = 0, loudness_value: float | None = None,
                 loudness_range: float | None = None, max_true_peak: float | None = None,
                 max_momentary_loudness: float | None = None,
                 max_short_term_loudness: float | None = None,
                 coding_history: str | Iterable[str] = ()) -> bytes:
    """The `bext` chunk's payload (without its 8-byte header), version 2.

    Tech 3285 text is ASCII: other characters are transliterated where Unicode knows how
    ("é" -> "e") and become "?" otherwise, control characters become spaces, and each field is
    cut to its size (a 10 KB prompt keeps its first 256 characters). Loudness values are in
    LUFS / LU / dBTP; None, NaN or an infinite value is written as 0x7FFF, the spec's "not
    known". `origination` gives OriginationDate (yyyy-mm-dd) and OriginationTime (hh-mm-ss, the
    separator the spec shows; it allows ':' too). `time_reference` is the first sample's
    count since midnight. Each coding history line ends in CR LF, as Tech 3285 asks.
    """
    if not 0 <= int(time_reference) < 2**64:
        raise ValueError(f"time_reference {time_reference} does not fit 64 bits")
    date = origination.strftime("%Y-%m-%d") if origination else ""
    time = origination.strftime("%H-%M-%S") if origination else ""
    fixed = BEXT_FIXED.pack(
        _ascii(description, BEXT_DESCRIPTION), _ascii(originator, BEXT_ORIGINATOR),
        _ascii(originator_reference, BEXT_ORIGINATOR_REFERENCE), _ascii(date, 10),
        _ascii(time, 8), int(time_reference), BEXT_VERSION, bytes(BEXT_UMID),
        _centi(loudness_value), _centi(loudness_range), _centi(max_true_peak),
        _centi(max_momentary_loudness), _centi(max_short_term_loudness), bytes(BEXT_RESERVED))
    return fixed + _coding_history(coding_history)


def _ascii(text: str, size: int) -> bytes:
    """`text` as at most `size` ASCII bytes (struct pads the rest with NUL)."""
    # Nearly every character yields at least one output character (lone accents aside), so a
    # generous head of a huge text is all that can reach the field.
    decomposed = unicodedata.normalize("NFKD", str(text or "")[:size * 8])
    chars = []
    for char in decomposed:
        if unicodedata.combining(char):
            continue  # the accent of a letter NFKD split off: keep the bare letter
        if ord(char) < 0x20 or ord(char) == 0x7F:
            chars.append(" ")  # a NUL would end the field early; CR/LF do not belong in it
        elif ord(char) < 0x80:
            chars.append(char)
        else:
            chars.append("?")
        if len(chars) >= size:
            break
    return "".join(chars).encode("ascii")


def _centi(value: float | None) -> int:
    """A loudness field: hundredths as int16, 0x7FFF when not known (Tech 3285 v2)."""
    if value is None or not math.isfinite(value):
        return LOUDNESS_UNKNOWN
    return max(-0x8000, min(LOUDNESS_UNKNOWN - 1, round(value * 100)))


def _coding_history(lines: str | Iterable[str]) -> bytes:
    items = lines.splitlines() if isinstance(lines, str) else list(lines)
    out = b""
    for line in items:
        text = _ascii(str(line).replace("\r", " ").replace("\n", " "), 1 << 16).rstrip()
        if text:
            out += text + b"\r\n"
    return out


# --------------------------------------------------------------------------------------------
# cue


def cue_payload(points: list[int]) -> bytes:
    """The `cue ` chunk's payload: point i has id i (the id smpl_payload gives loop i) and
    lies at frame points[i], both as its play-order position and as its offset in `data`
    (the same thing in a file without a playlist). ValueError for a frame outside 32 bits."""
    out = bytearray(CUE_COUNT.pack(len(points)))
    for cue_id, frame in enumerate(points):
        if not 0 <= int(frame) <= UINT32_MAX:
            raise ValueError(f"cue point {frame} is not a frame a WAV file can address")
        # chunk start and block start are 0: the audio is one uncompressed `data` chunk
        out += CUE_POINT.pack(cue_id, int(frame), b"data", 0, 0, int(frame))
    return bytes(out)


def parse_cue(payload: bytes) -> list[tuple[int, int]]:
    """(id, sample offset) of each point in a `cue ` payload; a short payload yields what
    fits."""
    if len(payload) < CUE_COUNT.size:
        return []
    (count,) = CUE_COUNT.unpack_from(payload)
    points = []
    for i in range(count):
        offset = CUE_COUNT.size + i * CUE_POINT.size
        if offset + CUE_POINT.size > len(payload):
            break
        cue_id, _, _, _, _, sample_offset = CUE_POINT.unpack_from(payload, offset)
        points.append((cue_id, sample_offset))
    return points
