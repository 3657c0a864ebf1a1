"""File names for takes: readable in every script, and unique per take.

A drag-out file is named `<slug>_seed<seed>_id<library id>.wav` (or `..._<hash>.wav` for a take
the library does not hold), so two takes never share a name just because their prompts look
alike: emoji, Arabic or Hebrew prompts, or one prompt made with other settings, used to all
land on `take_seed7.wav` and replace a file dragged into a project earlier.
"""

from __future__ import annotations

import hashlib
import unicodedata

import numpy as np

MAX_NAME = 60  # characters of prompt in a name
MAX_NAME_BYTES = 120  # UTF-8 bytes: most file systems allow 255 for the whole name
FALLBACK = "take"


def slug(text: str, *, ascii_only: bool = False) -> str:
    """A file-name-safe version of a prompt: words joined by '-', at most 60 characters.

    Latin text is transliterated ("Café" -> "cafe"); letters of scripts without an ASCII form
    (Arabic, Hebrew, CJK, ...) are kept as they are, unless `ascii_only` (for a file system that
    refuses them). Punctuation, symbols, emoji and invisible controls (bidi overrides could
    disguise a name) become separators. Nothing readable left gives "take".
    """
    words: list[str] = []
    word: list[str] = []
    for char in unicodedata.normalize("NFC", str(text)):
        kind = unicodedata.category(char)
        if kind.startswith("M"):  # a combining mark belongs to the letter before it
            if word and not ascii_only:
                word.append(char)
            continue
        plain = "".join(c for c in unicodedata.normalize("NFKD", char)
                        if not unicodedata.combining(c))
        if plain and plain.isascii():
            kept = "".join(c for c in plain.lower() if c.isalnum())
            if kept:
                word.append(kept)
                continue
        elif kind[0] in "LN":  # a letter with no ASCII form: kept, or left out of its word
            if not ascii_only:
                word.append(char.lower())
            continue
        if word:
            words.append("".join(word))
            word = []
    if word:
        words.append("".join(word))
    return _shorten("-".join(words)) or FALLBACK


def _shorten(name: str) -> str:
    name = name[:MAX_NAME]
    while len(name.encode("utf-8")) > MAX_NAME_BYTES:
        name = name[:-1]
    return name.strip("-")


def take_basename(prompt: str, seed: int | None) -> str:
    """`coin-pickup-bright_seed1234` (no suffix): what Save As suggests."""
    return f"{slug(prompt)}_seed{seed}" if seed is not None else slug(prompt)


def audio_digest(pcm: np.ndarray) -> str:
    """A short hash of the samples: the same take gives the same name in every session."""
    return hashlib.sha256(np.ascontiguousarray(pcm).tobytes()).hexdigest()[:8]


def unique_stem(prompt: str, seed: int | None, library_id: int | None, pcm: np.ndarray, *,
                ascii_only: bool = False) -> str:
    """The drag-out name of one take (no suffix): its slug and seed, plus its library id, or a
    hash of its audio when the library does not hold it."""
    base = slug(prompt, ascii_only=ascii_only)
    if seed is not None:
        base = f"{base}_seed{seed}"
    tag = f"id{library_id}" if library_id is not None else audio_digest(pcm)
    return f"{base}_{tag}"
