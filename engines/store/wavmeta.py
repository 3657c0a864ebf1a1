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

from engines.store.text import storable

APP_NAME = "SA3 Studio"
COMMENT_LIMIT = 1000
TITLE_LIMIT = 120
_MIN_PROMPT_CHARS = 40

# Keys in the order they are written; the first three identify the file.
_FIELDS = ("app", "library_id", "parent_id", "created", "prompt", "negative_prompt", "seed",
           "model", "decoder", "precision", "decoder_tier", "steps", "cfg", "apg", "seconds",
           "mode",
           "init_noise_level", "inpaint_spans", "limiter_ceiling", "backend", "finish")


def build_comment(meta: dict) -> str:
    """The INFO comment for `meta` (keys from _FIELDS; None values are left out)."""
    note = {key: meta[key] for key in _FIELDS if meta.get(key) is not None}
    note["app"] = APP_NAME
    text = _dumps(note)
    if len(text) <= COMMENT_LIMIT:
        return text
    # Cut the prompts, longest first, until the note fits; the library row keeps them whole.
    note["prompt_cut"] = True
    for key in ("negative_prompt", "prompt"):
        value = note.get(key, "")
        excess = len(_dumps(note)) - COMMENT_LIMIT
        if excess <= 0:
            break
        keep = max(_MIN_PROMPT_CHARS if key == "prompt" else 0, len(value) - excess - 8)
        while keep > 0 and len(_dumps({**note, key: value[:keep]})) > COMMENT_LIMIT:
            keep -= 8
        note[key] = value[:max(keep, 0)]
    text = _dumps(note)
    if len(text) > COMMENT_LIMIT:  # only unusual fields left; identification still fits
        text = _dumps({key: note[key] for key in ("app", "library_id", "seed") if key in note})
    return text


def _dumps(note: dict) -> str:
    return json.dumps(note, separators=(",", ":"), ensure_ascii=True)


def sf_name(path: str | os.PathLike[str]) -> str | bytes:
    """A path as soundfile should be given it: bytes on POSIX, so a file name that is not
    UTF-8 (Python's surrogate escapes) still opens; soundfile would encode a str strictly and
    fail. Windows keeps str, which soundfile opens through the wide-character API."""
    return os.fspath(path) if os.name == "nt" else os.fsencode(path)


def title_for(name: str, prompt: str) -> str:
    text = storable((name or prompt or "untitled").strip()) or "untitled"
    return text if len(text) <= TITLE_LIMIT else text[:TITLE_LIMIT - 3] + "..."


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
    into place.
    """
    with sf.SoundFile(sf_name(path), "w", samplerate, audio.shape[1], encoding.subtype,
                      format=encoding.format) as f:
        # Before the first write: FLAC writes its comments with the stream header.
        f.title = title
        f.comment = comment
        f.software = APP_NAME
        for start in range(0, audio.shape[0], _WRITE_BLOCK):
            f.write(encoding.encode(audio[start:start + _WRITE_BLOCK]))
    written = sf.info(sf_name(path)).frames
    if written != audio.shape[0]:
        raise OSError(f"{path} holds {written} of {audio.shape[0]} frames")
    fd = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
