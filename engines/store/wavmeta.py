"""How a take explains itself outside the library: a compact JSON note in the WAV's RIFF INFO.

libsndfile maps SoundFile's `title`, `comment` and `software` to the INFO chunk's INAM, ICMT and
ISFT entries, which DAWs, file browsers and game tools show. It silently drops every string once
they add up to about 2 KB (libsndfile 1.2), so the JSON is kept under COMMENT_LIMIT characters:
long prompts are cut (and marked cut) before anything else is. The JSON is ASCII (non-ASCII
characters escaped), because INFO readers disagree about text encodings.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import soundfile as sf

APP_NAME = "SA3 Studio"
COMMENT_LIMIT = 1000
TITLE_LIMIT = 120
_MIN_PROMPT_CHARS = 40

# Keys in the order they are written; the first three identify the file.
_FIELDS = ("app", "library_id", "parent_id", "created", "prompt", "negative_prompt", "seed",
           "model", "decoder", "precision", "steps", "cfg", "apg", "seconds", "mode",
           "init_noise_level", "inpaint_spans", "limiter_ceiling", "backend")


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


def title_for(name: str, prompt: str) -> str:
    text = (name or prompt or "untitled").strip() or "untitled"
    return text if len(text) <= TITLE_LIMIT else text[:TITLE_LIMIT - 3] + "..."


def write_wav(path: Path, audio: np.ndarray, samplerate: int, title: str, comment: str) -> None:
    """Write `audio` to `path` (already created, empty) as WAV with the INFO strings.

    int16 audio becomes 16-bit PCM bit for bit; float audio is kept exactly as 32-bit float
    (imported init audio, so regenerating from it reproduces the take). The file is flushed to
    disk before returning; the caller moves it into place.
    """
    subtype = "PCM_16" if audio.dtype == np.int16 else "FLOAT"
    with sf.SoundFile(str(path), "w", samplerate, audio.shape[1], subtype, format="WAV") as f:
        f.title = title
        f.comment = comment
        f.software = APP_NAME
        f.write(audio)
    written = sf.info(str(path)).frames
    if written != audio.shape[0]:
        raise OSError(f"{path} holds {written} of {audio.shape[0]} frames")
    fd = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_metadata(path: str | os.PathLike[str]) -> dict | None:
    """The note SA3 Studio embedded in an audio file, or None if it has none (or is unreadable)."""
    try:
        with sf.SoundFile(str(path)) as f:
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
