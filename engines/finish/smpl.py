"""Loop points in a WAV file's `smpl` chunk, written and read here because no maintained PyPI
package writes it (GAME_AUDIO.md). Unreal Engine 5 imports these loops as loop regions, Godot's
importer reads them with "Detect from WAV", Unity reportedly loops from them.

Layout (all little-endian): a 36-byte header - manufacturer, product, sample period in ns, MIDI
unity note, MIDI pitch fraction, SMPTE format, SMPTE offset, number of loops, sampler data bytes
- then 24 bytes per loop: cue id, type (0 = forward), start, end, fraction, play count (0 =
infinite). Start and end are sample frames and the end is INCLUSIVE: a loop over a whole file of
N frames is (0, N - 1).

The chunk goes into a finished file through engines.delivery.riff (`add_loop_points`,
`set_wav_chunks`), which keeps every other chunk byte for byte, replaces an old `smpl`, pads odd
sizes and fixes the RIFF size. RF64 files and files of 4 GB or more are refused: their sizes do
not fit RIFF's 32-bit fields, and no game engine reads loops from them.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from engines.error_sentences import sentence, shown
from engines.errors import AudioFileError

SMPL_ID = b"smpl"
HEADER = struct.Struct("<9I")  # manufacturer .. sampler data length
LOOP = struct.Struct("<6I")  # cue id, type, start, end (inclusive), fraction, play count
CHUNK_HEADER = struct.Struct("<4sI")
MIDI_UNITY_NOTE = 60  # middle C: the sample plays at its own pitch
LOOP_FORWARD = 0
PLAY_FOREVER = 0
RIFF_LIMIT = 2**32 - 1

Loop = tuple[int, int]  # (start frame, end frame inclusive)


@dataclass(frozen=True)
class WavLayout:
    """Where a WAV file's chunks are: (id, offset of the chunk header, payload size)."""

    chunks: tuple[tuple[bytes, int, int], ...]
    sample_rate: int
    block_align: int
    data_size: int

    @property
    def frames(self) -> int:
        return self.data_size // self.block_align if self.block_align else 0


def smpl_payload(loops: list[Loop], sample_rate: int) -> bytes:
    """The `smpl` chunk's payload (without its 8-byte chunk header) for forward loops."""
    period_ns = round(1e9 / sample_rate)
    header = HEADER.pack(0, 0, period_ns, MIDI_UNITY_NOTE, 0, 0, 0, len(loops), 0)
    body = b"".join(LOOP.pack(cue_id, LOOP_FORWARD, start, end, 0, PLAY_FOREVER)
                    for cue_id, (start, end) in enumerate(loops))
    return header + body


def parse_smpl(payload: bytes) -> list[Loop]:
    """The (start, end inclusive) pairs of a `smpl` payload; a short payload yields what fits."""
    if len(payload) < HEADER.size:
        return []
    count = HEADER.unpack_from(payload)[7]
    loops: list[Loop] = []
    for i in range(count):
        offset = HEADER.size + i * LOOP.size
        if offset + LOOP.size > len(payload):
            break
        _, _, start, end, _, _ = LOOP.unpack_from(payload, offset)
        loops.append((start, end))
    return loops


def wav_layout(data: bytes, path: Path) -> WavLayout:
    """The chunk list of a RIFF/WAVE file held in `data`; AudioFileError if it is not one."""
    if data[:4] == b"RF64" or data[:4] == b"BW64":
        raise AudioFileError(f"Cannot add loop points to {shown(path)}: it is an RF64 file "
                             f"(over 4 GB), which game engines do not read loops from; export "
                             f"a shorter clip.")
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise AudioFileError(f"Cannot read loop points of {shown(path)}: it is not a WAV "
                             f"file; export it as WAV.")
    chunks: list[tuple[bytes, int, int]] = []
    rate = align = data_size = 0
    pos = 12
    while pos + CHUNK_HEADER.size <= len(data):
        chunk_id, size = CHUNK_HEADER.unpack_from(data, pos)
        chunks.append((chunk_id, pos, size))
        payload = pos + CHUNK_HEADER.size
        if chunk_id == b"fmt " and size >= 16:
            # WAVE_FORMAT_EXTENSIBLE keeps the same first 16 bytes: rate at 4, align at 12.
            rate = struct.unpack_from("<I", data, payload + 4)[0]
            align = struct.unpack_from("<H", data, payload + 12)[0]
        elif chunk_id == b"data":
            data_size = min(size, len(data) - payload)
        pos = payload + size + (size & 1)  # RIFF pads every odd-sized chunk to even
    if not rate or not any(c[0] == b"data" for c in chunks):
        raise AudioFileError(f"Cannot read loop points of {shown(path)}: its WAV header has no "
                             f"format or data chunk (the file is damaged); export it again.")
    return WavLayout(tuple(chunks), rate, align, data_size)


def read_wav_bytes(path: Path, what: str) -> bytes:
    """The bytes of a WAV file, refusing one past RIFF's 4 GB (`what` starts the sentence)."""
    try:
        if os.path.getsize(path) > RIFF_LIMIT:
            raise AudioFileError(f"{what} {shown(path)}: it is 4 GB or larger, beyond what a "
                                 f"WAV file can describe; export a shorter clip.")
        return path.read_bytes()
    except OSError as err:
        raise AudioFileError(sentence(f"{what} {shown(path)}", err)) from err


def read_loop_points(path: str | os.PathLike[str]) -> list[Loop]:
    """The loops of a WAV file's `smpl` chunk as (start, end inclusive) frames; [] if none."""
    file = Path(path)
    data = read_wav_bytes(file, "Could not read loop points of")
    for chunk_id, offset, size in wav_layout(data, file).chunks:
        if chunk_id == SMPL_ID:
            start = offset + CHUNK_HEADER.size
            return parse_smpl(data[start:start + size])
    return []
