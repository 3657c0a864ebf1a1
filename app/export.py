"""Writing takes to files: drag-out copies, Save As, the clipboard. No Qt widgets here."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from engines.audio_io import write_audio
from engines.provenance import build_sidecar, sidecar_path, write_json_atomic

MAX_NAME = 60


def slug(text: str) -> str:
    """A file-name-safe version of a prompt: ASCII words joined by '-', at most 60 chars."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    words = re.findall(r"[A-Za-z0-9]+", ascii_text.lower())
    name = "-".join(words)[:MAX_NAME].strip("-")
    return name or "take"


def take_basename(prompt: str, seed: int | None) -> str:
    """`coin-pickup-bright_seed1234` (no suffix)."""
    return f"{slug(prompt)}_seed{seed}" if seed is not None else slug(prompt)


def write_take(take, folder: Path, fmt: str = "wav16", name: str | None = None) -> Path:
    """Write a take's audio and its JSON sidecar into `folder`; returns the audio path.

    Files are written atomically and never deleted by the app: a file dragged into a project
    must stay valid. An existing file of the same name and content is reused.
    """
    from engines.audio_io import WRITE_FORMATS

    folder.mkdir(parents=True, exist_ok=True)
    suffix = WRITE_FORMATS[fmt].suffix
    path = folder / f"{name or take_basename(take.prompt, take.seed)}{suffix}"
    write_audio(path, take.pcm, fmt)
    if take.result is not None:
        write_json_atomic(sidecar_path(path), build_sidecar(take.result, path, fmt,
                                                            take.init_path))
    return path


def drag_file(take, folder: Path) -> Path:
    """The WAV used for drag-out and Copy, written once per take and kept."""
    if take.file_path is None or not take.file_path.is_file():
        take.file_path = write_take(take, folder, "wav16")
    return take.file_path
