"""Putting a take's audio file into the library folder: its name, and the write that never
leaves a half-written file under that name."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path

import numpy as np

from engines.constants import SAMPLE_RATE
from engines.store import repair, wavmeta
from engines.store.files import fsync_dir, slug


def audio_file_name(take_id: int, label: str, suffix: str = ".wav") -> str:
    """`000042-door-creak-1a2b3c.wav`: sorted by id, readable, and different each time a take
    is written again (a regeneration removes the old file only after its row is committed)."""
    return f"{take_id:06d}-{slug(label)}-{secrets.token_hex(3)}{suffix}"


def place_audio(folder: Path, name: str, audio: np.ndarray, note: dict, title: str,
                undo: list[Callable[[], None]],
                encoding: wavmeta.TakeEncoding = wavmeta.GENERATED) -> Path:
    """Write the take under a temporary name in `folder`, then rename it to `name`.

    The temporary name is one repair.py removes on the next open, and the rename is undone (via
    `undo`) if the caller's transaction fails, so a crash leaves a complete file or none.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    temp = folder / f"{repair.TEMP_PREFIX}{secrets.token_hex(6)}{encoding.suffix}"
    os.close(os.open(temp, flags, 0o666))
    try:
        wavmeta.write_take(temp, audio, encoding, SAMPLE_RATE, title,
                           wavmeta.build_comment(note))
        final = folder / name
        os.replace(temp, final)
    except BaseException:
        try:
            temp.unlink(missing_ok=True)
        except OSError:
            pass  # a leftover temporary file is removed on the next open (repair.py)
        raise
    undo.append(lambda: final.unlink(missing_ok=True))
    fsync_dir(folder)
    return final
