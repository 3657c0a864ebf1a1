"""The short JSON note every file the app writes carries in its INFO comment (WAV) or COMMENT
(FLAC, Ogg), so a take found anywhere still says how it was made and which library take it is.

libsndfile silently drops every WAV INFO string once they add up to about 2 KB (libsndfile
1.2), so the note is kept under COMMENT_LIMIT characters: long prompts are cut (and marked cut)
before anything else is. The JSON is ASCII (non-ASCII characters escaped), because INFO readers
disagree about text encodings.
"""

from __future__ import annotations

import json
from typing import Any

from engines.paths import APP_NAME  # the one name files and folders carry
from engines.text import storable

COMMENT_LIMIT = 1000
TITLE_LIMIT = 120
_MIN_PROMPT_CHARS = 40

# Keys in the order they are written; the first three identify the file.
NOTE_FIELDS = ("app", "library_id", "parent_id", "created", "prompt", "negative_prompt", "seed",
               "model", "decoder", "precision", "decoder_tier", "steps", "cfg", "apg",
               "seconds", "mode", "init_noise_level", "inpaint_spans", "limiter_ceiling",
               "backend", "adapters", "finish")


def build_comment(meta: dict[str, Any]) -> str:
    """The note for `meta` (keys from NOTE_FIELDS; None values are left out)."""
    note = {key: meta[key] for key in NOTE_FIELDS if meta.get(key) is not None}
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
    if len(text) > COMMENT_LIMIT and "adapters" in note:
        # A long stack (about 170 characters an adapter) goes before the settings do; the
        # sidecar and the library row keep every adapter.
        note["adapters"] = None
        note["adapters_cut"] = True
        text = _dumps({k: v for k, v in note.items() if v is not None})
    if len(text) > COMMENT_LIMIT:  # only unusual fields left; identification still fits
        text = _dumps({key: note[key] for key in ("app", "library_id", "seed") if key in note})
    return text


def _dumps(note: dict) -> str:
    return json.dumps(note, separators=(",", ":"), ensure_ascii=True)


def title_for(name: str, prompt: str) -> str:
    """INFO INAM / Vorbis TITLE: the take's name, else its prompt, cut to TITLE_LIMIT."""
    text = storable((name or prompt or "untitled").strip()) or "untitled"
    return text if len(text) <= TITLE_LIMIT else text[:TITLE_LIMIT - 3] + "..."
