"""The metadata chunks of a WAV, BWF or RF64 file, read by walking chunk headers and seeking
past the rest, so the audio itself is never read: bext (EBU Tech 3285: description,
originator, date), iXML (its text, parsed by ixml_meta) and LIST/INFO (INAM, ICMT, IKEY...)."""

from __future__ import annotations

import struct
from typing import BinaryIO

WANTED = (b"bext", b"iXML", b"LIST")
MAX_CHUNK_READ = 1 << 20  # a metadata chunk larger than this is read only this far
MAX_CHUNKS = 4096  # a damaged file claiming endless tiny chunks ends the walk here
_HEADER = struct.Struct("<4sI")
_RIFF_IDS = (b"RIFF", b"RF64", b"BW64")


def riff_chunks(handle: BinaryIO, file_size: int) -> dict[bytes, list[bytes]]:
    """The payloads of the wanted chunks, by chunk id, in file order ({} for no RIFF WAVE)."""
    handle.seek(0)
    head = handle.read(12)
    if len(head) < 12 or head[:4] not in _RIFF_IDS or head[8:12] != b"WAVE":
        return {}
    found: dict[bytes, list[bytes]] = {}
    pos = 12
    for _ in range(MAX_CHUNKS):
        if pos + 8 > file_size:
            break
        handle.seek(pos)
        header = handle.read(8)
        if len(header) < 8:
            break
        chunk_id, size = _HEADER.unpack(header)
        if chunk_id == b"data" and size == 0xFFFFFFFF:
            break  # RF64's data size lives in ds64; nothing we want follows it in practice
        if chunk_id in WANTED:
            found.setdefault(chunk_id, []).append(handle.read(min(size, MAX_CHUNK_READ)))
        pos += 8 + size + (size & 1)
    return found


def _text(raw: bytes) -> str:
    """A fixed-size or zero-terminated text field: UTF-8 when it decodes, else Latin-1 (EBU
    asks for ASCII; tools write either)."""
    raw = raw.split(b"\0", 1)[0]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return " ".join(text.split())


def bext_fields(payload: bytes) -> dict[str, str]:
    """description, originator, originator_reference, origination_date of a bext chunk."""
    fields = {"description": _text(payload[0:256]), "originator": _text(payload[256:288]),
              "originator_reference": _text(payload[288:320]),
              "origination_date": _text(payload[320:330])}
    return {key: value for key, value in fields.items() if value}


def info_fields(payloads: list[bytes]) -> dict[str, str]:
    """The LIST/INFO fields (INAM title, ICMT comment, IKEY keywords, IART, ISBJ, IGNR...)."""
    fields: dict[str, str] = {}
    for payload in payloads:
        if payload[:4] != b"INFO":
            continue
        pos = 4
        while pos + 8 <= len(payload):
            key, size = _HEADER.unpack_from(payload, pos)
            value = _text(payload[pos + 8:pos + 8 + size])
            if value and key.isalnum():
                fields.setdefault(key.decode("ascii"), value)
            pos += 8 + size + (size & 1)
    return fields
