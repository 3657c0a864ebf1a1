"""Vorbis comments of a FLAC or Ogg Vorbis file, from the first bytes of the file only: the
comment block sits in FLAC's metadata before the audio, and in Ogg's second header packet.
The block parsers are engines.finish.vorbis_comments' (the ones that write our own tags)."""

from __future__ import annotations

import struct
from typing import BinaryIO

from engines.finish.vorbis_comments import FLAC_MAGIC, OGG_MAGIC, flac_tags, ogg_tags

FIRST_READ = 64 * 1024
MOST_READ = 4 << 20  # a FLAC whose metadata (cover art) is bigger is read no further
_TRUNCATED = (IndexError, struct.error)  # the block runs past the bytes read so far
_NOT_READABLE = (ValueError, OverflowError, UnicodeError)  # Opus, Speex, damaged headers


def vorbis_comments(handle: BinaryIO, head: bytes) -> dict[str, str]:
    """KEY (upper case) -> value; {} when the file has none or they cannot be read. `head`:
    the first bytes of the file, already read; more is read only when they end too soon."""
    if head[:4] == FLAC_MAGIC:
        parse = flac_tags
    elif head[:4] == OGG_MAGIC:
        parse = ogg_tags
    else:
        return {}
    data = head
    while True:
        try:
            return parse(data)
        except _NOT_READABLE:
            return {}
        except _TRUNCATED:
            if len(data) >= MOST_READ or len(data) < FIRST_READ:
                return {}  # the whole file was read, or as much as we read at most
            handle.seek(0)
            data = handle.read(min(len(data) * 4, MOST_READ))
