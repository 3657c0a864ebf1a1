"""Extra Vorbis comments (LOOPSTART, LOOPLENGTH) in FLAC and Ogg Vorbis files libsndfile wrote.

libsndfile writes only its fixed tags (TITLE, COMMENT, SOFTWARE, ...), so the loop tags are
added here by rewriting the comment block: in FLAC the VORBIS_COMMENT metadata block, in Ogg the
comment header packet (re-paged, later pages renumbered and their CRCs recomputed). The audio
bytes are never touched. Only what libsndfile produces is handled: a single logical Ogg stream
whose headers end on a page boundary (libvorbis flushes them).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping

FLAC_MAGIC = b"fLaC"
FLAC_VORBIS_COMMENT = 4
OGG_MAGIC = b"OggS"
OGG_HEADER = struct.Struct("<4sBBqIIIB")  # magic, version, flags, granule, serial, seq, crc, n
OGG_CONTINUED = 0x01
VORBIS_COMMENT_PACKET = b"\x03vorbis"
MAX_SEGMENTS = 255


# --------------------------------------------------------------------------------------------
# The comment list itself (shared by FLAC and Ogg)


def parse_comments(block: bytes) -> tuple[bytes, list[bytes]]:
    """(vendor, ["KEY=value" entries]) of a Vorbis comment list."""
    (vendor_len,) = struct.unpack_from("<I", block, 0)
    vendor = block[4:4 + vendor_len]
    pos = 4 + vendor_len
    (count,) = struct.unpack_from("<I", block, pos)
    pos += 4
    entries = []
    for _ in range(count):
        (size,) = struct.unpack_from("<I", block, pos)
        entries.append(block[pos + 4:pos + 4 + size])
        pos += 4 + size
    return vendor, entries


def build_comments(vendor: bytes, entries: list[bytes]) -> bytes:
    parts = [struct.pack("<I", len(vendor)), vendor, struct.pack("<I", len(entries))]
    for entry in entries:
        parts += [struct.pack("<I", len(entry)), entry]
    return b"".join(parts)


def _merge(entries: list[bytes], tags: Mapping[str, str]) -> list[bytes]:
    """`entries` with every key in `tags` replaced (keys compare case-insensitively)."""
    keys = {key.upper().encode("ascii") for key in tags}
    kept = [e for e in entries if e.split(b"=", 1)[0].upper() not in keys]
    return kept + [f"{key.upper()}={value}".encode() for key, value in tags.items()]


def comments_dict(entries: list[bytes]) -> dict[str, str]:
    out: dict[str, str] = {}
    for entry in entries:
        key, _, value = entry.partition(b"=")
        out[key.decode("ascii", "replace").upper()] = value.decode("utf-8", "replace")
    return out


# --------------------------------------------------------------------------------------------
# FLAC


def _flac_blocks(data: bytes) -> tuple[list[tuple[int, bytes]], int]:
    """[(block type, payload)] of the metadata and the offset where audio frames begin."""
    if data[:4] != FLAC_MAGIC:
        raise ValueError("not a FLAC file")
    blocks, pos, last = [], 4, False
    while not last:
        header = data[pos]
        size = int.from_bytes(data[pos + 1:pos + 4], "big")
        last = bool(header & 0x80)
        blocks.append((header & 0x7F, data[pos + 4:pos + 4 + size]))
        pos += 4 + size
    return blocks, pos


def flac_with_tags(data: bytes, tags: Mapping[str, str]) -> bytes:
    """The FLAC file `data` with `tags` set in its VORBIS_COMMENT block (added if missing)."""
    blocks, audio_start = _flac_blocks(data)
    for i, (kind, payload) in enumerate(blocks):
        if kind == FLAC_VORBIS_COMMENT:
            vendor, entries = parse_comments(payload)
            blocks[i] = (kind, build_comments(vendor, _merge(entries, tags)))
            break
    else:
        blocks.insert(1, (FLAC_VORBIS_COMMENT, build_comments(b"SA3 Studio", _merge([], tags))))
    out = bytearray(FLAC_MAGIC)
    for i, (kind, payload) in enumerate(blocks):
        flag = 0x80 if i == len(blocks) - 1 else 0
        out += bytes([flag | kind]) + len(payload).to_bytes(3, "big") + payload
    return bytes(out + data[audio_start:])


def flac_tags(data: bytes) -> dict[str, str]:
    blocks, _ = _flac_blocks(data)
    for kind, payload in blocks:
        if kind == FLAC_VORBIS_COMMENT:
            return comments_dict(parse_comments(payload)[1])
    return {}


# --------------------------------------------------------------------------------------------
# Ogg: pages, packets, CRC

_BIT_REVERSED = bytes(int(f"{i:08b}"[::-1], 2) for i in range(256))


def ogg_crc(page: bytes) -> int:
    """The Ogg page checksum: CRC-32, polynomial 0x04C11DB7, MSB first, initial 0, no final
    xor. zlib's CRC-32 is the same polynomial bit-reflected, so reflecting every byte going in
    and the result coming out gives the Ogg CRC at C speed (a Python loop would take seconds on
    a long file)."""
    raw = zlib.crc32(page.translate(_BIT_REVERSED), 0xFFFFFFFF) ^ 0xFFFFFFFF  # initial 0
    return int(f"{raw:032b}"[::-1], 2)


class _Page:
    def __init__(self, data: bytes, pos: int) -> None:
        fields = OGG_HEADER.unpack_from(data, pos)
        if fields[0] != OGG_MAGIC:
            raise ValueError("not an Ogg page")
        _, _, self.flags, self.granule, self.serial, self.seq, _, count = fields
        lacing_at = pos + OGG_HEADER.size
        self.lacing = data[lacing_at:lacing_at + count]
        body_at = lacing_at + count
        self.body = data[body_at:body_at + sum(self.lacing)]
        self.end = body_at + sum(self.lacing)

    def packets(self) -> list[tuple[bytes, bool]]:
        """(piece, complete) for each packet piece on this page; a lacing value below 255 ends
        a packet."""
        pieces, start, pos = [], 0, 0
        for value in self.lacing:
            pos += value
            if value < 255:
                pieces.append((self.body[start:pos], True))
                start = pos
        if start < len(self.body) or (self.lacing and self.lacing[-1] == 255):
            pieces.append((self.body[start:], False))
        return pieces


def _page_bytes(flags: int, granule: int, serial: int, seq: int, lacing: bytes,
                body: bytes) -> bytes:
    header = OGG_HEADER.pack(OGG_MAGIC, 0, flags, granule, serial, seq, 0, len(lacing))
    page = bytearray(header + lacing + body)
    struct.pack_into("<I", page, 22, ogg_crc(bytes(page)))
    return bytes(page)


def _paginate(packets: list[bytes], serial: int, first_seq: int) -> list[bytes]:
    """Header packets laid out on pages the way libogg flushes them (granule 0 where a packet
    ends, -1 on a page where none does)."""
    segments: list[tuple[bytes, int, bool]] = []  # (lacing value, body piece, ends a packet)
    for packet in packets:
        for start in range(0, len(packet) + 1, 255):
            piece = packet[start:start + 255]
            segments.append((bytes([len(piece)]), piece, len(piece) < 255))
            if len(piece) < 255:
                break
    pages, seq, continued = [], first_seq, False
    for start in range(0, len(segments), MAX_SEGMENTS):
        chunk = segments[start:start + MAX_SEGMENTS]
        lacing = b"".join(s[0] for s in chunk)
        body = b"".join(s[1] for s in chunk)
        granule = 0 if any(s[2] for s in chunk) else -1
        pages.append(_page_bytes(OGG_CONTINUED if continued else 0, granule, serial, seq,
                                 lacing, body))
        continued = not chunk[-1][2]
        seq += 1
    return pages


def _ogg_headers(data: bytes) -> tuple[list[_Page], list[bytes], int]:
    """The pages holding the three Vorbis headers, the comment and setup packets, and the
    offset of the first audio page."""
    first = _Page(data, 0)
    pages, packets, partial, pos = [first], [], b"", first.end
    while len(packets) < 2:
        page = _Page(data, pos)
        if page.serial != first.serial:
            raise ValueError("more than one logical Ogg stream")
        pages.append(page)
        for piece, complete in page.packets():
            partial += piece
            if complete:
                packets.append(partial)
                partial = b""
        pos = page.end
    if len(packets) != 2 or partial:
        raise ValueError("the Vorbis headers do not end on a page boundary")
    if not packets[0].startswith(VORBIS_COMMENT_PACKET):
        raise ValueError("the second Ogg packet is not a Vorbis comment header")
    return pages, packets, pos


def ogg_with_tags(data: bytes, tags: Mapping[str, str]) -> bytes:
    """The Ogg Vorbis file `data` with `tags` set in its comment header."""
    pages, (comment, setup), audio_at = _ogg_headers(data)
    head = len(VORBIS_COMMENT_PACKET)
    vendor, entries = parse_comments(comment[head:])
    # The comment packet ends with a framing bit (a byte 0x01).
    new_comment = VORBIS_COMMENT_PACKET + build_comments(vendor, _merge(entries, tags)) + b"\x01"
    serial = pages[0].serial
    header_pages = _paginate([new_comment, setup], serial, first_seq=1)
    shift = len(header_pages) - (len(pages) - 1)
    out = bytearray(data[:pages[0].end])
    for page in header_pages:
        out += page
    pos = audio_at
    while pos < len(data):
        page = _Page(data, pos)
        if shift:
            out += _page_bytes(page.flags, page.granule, page.serial, page.seq + shift,
                               page.lacing, page.body)
        else:
            out += data[pos:page.end]
        pos = page.end
    return bytes(out)


def ogg_tags(data: bytes) -> dict[str, str]:
    _, (comment, _), _ = _ogg_headers(data)
    return comments_dict(parse_comments(comment[len(VORBIS_COMMENT_PACKET):])[1])
