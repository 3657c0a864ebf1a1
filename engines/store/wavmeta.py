"""How a take explains itself outside the library: a compact JSON note in its audio file, and
how each kind of take is stored.

Generated takes are 16-bit WAV (what DAWs and game tools take as is). Imported audio is kept
losslessly compressed: int16 as 16-bit FLAC, float as 24-bit FLAC when every sample survives
that bit for bit (audio read from 16- or 24-bit files does), else as 32-bit float WAV; so a take
made from it can always be regenerated, and its content hash (of the samples as read back) stays
the same.

libsndfile maps SoundFile's `title`, `comment` and `software` to the WAV INFO chunk's INAM, ICMT
and ISFT entries, and to FLAC's Vorbis comments TITLE, COMMENT and SOFTWARE, which DAWs, file
browsers and game tools show. It silently drops every INFO string once they add up to about
2 KB (libsndfile 1.2), so the JSON is kept under COMMENT_LIMIT characters: long prompts are cut
(and marked cut) before anything else is. The JSON is ASCII (non-ASCII characters escaped),
because INFO readers disagree about text encodings.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from engines.delivery.note import APP_NAME, COMMENT_LIMIT, build_comment, title_for
from engines.delivery.writer import FileTags, write_into

__all__ = ["APP_NAME", "COMMENT_LIMIT", "build_comment", "title_for"]


def sf_name(path: str | os.PathLike[str]) -> str | bytes:
    """A path as soundfile should be given it: bytes on POSIX, so a file name that is not
    UTF-8 (Python's surrogate escapes) still opens; soundfile would encode a str strictly and
    fail. Windows keeps str, which soundfile opens through the wide-character API."""
    return os.fspath(path) if os.name == "nt" else os.fsencode(path)


_FLAC24_SCALE = 2.0**23
_WRITE_BLOCK = 1 << 16  # frames converted and written at a time


@dataclass(frozen=True)
class TakeEncoding:
    """How a take's samples go into its file: container, libsndfile subtype, file suffix."""

    format: str
    subtype: str
    suffix: str

    def encode(self, block: np.ndarray) -> np.ndarray:
        """The samples handed to libsndfile for `block`: 24-bit FLAC takes int32 whose top 24
        bits are the sample (so libsndfile's own float scaling never decides what is stored)."""
        if self.subtype == "PCM_24":
            return np.left_shift(np.rint(block.astype(np.float64) * _FLAC24_SCALE)
                                 .astype(np.int32), 8)
        return block


GENERATED = TakeEncoding("WAV", "PCM_16", ".wav")
_FLAC16 = TakeEncoding("FLAC", "PCM_16", ".flac")
_FLAC24 = TakeEncoding("FLAC", "PCM_24", ".flac")
_FLOAT_WAV = TakeEncoding("WAV", "FLOAT", ".wav")


def imported_encoding(audio: np.ndarray) -> TakeEncoding:
    """The smallest lossless way to keep imported (N, 2) int16 or float32 audio."""
    if audio.dtype == np.int16:
        return _FLAC16
    for start in range(0, audio.shape[0], _WRITE_BLOCK):  # blockwise: no full-size copies
        if not _fits_flac24(audio[start:start + _WRITE_BLOCK]):
            return _FLOAT_WAV
    return _FLAC24


def _fits_flac24(block: np.ndarray) -> bool:
    """Whether 24-bit FLAC read back as float32 (code / 2**23) gives these exact bits."""
    scaled = block.astype(np.float64) * _FLAC24_SCALE
    codes = np.rint(scaled)
    if not np.array_equal(codes, scaled):  # also False for NaN
        return False
    if codes.size and (codes.min() < -_FLAC24_SCALE or codes.max() > _FLAC24_SCALE - 1):
        return False
    return not np.any(np.signbit(block) & (block == 0))  # -0.0 would come back as +0.0


# The subtypes take files are stored in: a file found elsewhere in any of them may be a copy.
STORED_SUBTYPES = ("PCM_16", "PCM_24", "FLOAT")


def stored_dtype(subtype: str) -> str:
    """The dtype a take file of `subtype` is read as, to get the samples it was made from."""
    return "int16" if subtype == "PCM_16" else "float32"


def write_take(path: Path, audio: np.ndarray, encoding: TakeEncoding, samplerate: int,
               title: str, comment: str) -> None:
    """Write `audio` to `path` (already created, empty) as `encoding` says, with the note.

    int16 audio becomes 16-bit PCM bit for bit; float audio is stored so it reads back exactly
    (see imported_encoding). The file is flushed to disk before returning; the caller moves it
    into place. The writing itself is engines.delivery's, like every audio file the app makes.
    """
    write_into(path, audio, encoding.format, encoding.subtype, samplerate,
               FileTags(title=title, comment=comment), encode=encoding.encode)


def read_metadata(path: str | os.PathLike[str]) -> dict | None:
    """The note SA3 Studio embedded in an audio file, or None if it has none (or is unreadable)."""
    if not os.path.isfile(path):  # opening a pipe to read would wait for a writer
        return None
    try:
        with sf.SoundFile(sf_name(path)) as f:
            comment = f.copy_metadata().get("comment", "")
    except (sf.SoundFileError, RuntimeError, OSError, ValueError, TypeError):
        return None
    try:
        note = json.loads(comment)
    except ValueError:
        return None
    if not isinstance(note, dict) or note.get("app") != APP_NAME:
        return None
    return note
