"""A kept take's adapters back as choices for a new request (Restore settings, Regenerate, a
model-made loop on export): each found by its SHA-256, where it lay when the take was made or
on the adapter shelf (where team fetches put the adapters of the takes they bring), so a take
sounds the same when it is made again - or one sentence names the file that is missing.

The shelf: <data>/adapters/<first 12 hex digits of the SHA-256>/<file name>, one folder per
file content, so two different files of one name never meet."""

from __future__ import annotations

import os
from pathlib import Path

from engines.adapters.choice import DEFAULT_STRENGTH, AdapterChoice
from engines.error_sentences import printable
from engines.errors import Advice, Remedy, RequestError, StudioError
from engines.paths import data_root
from engines.request_adapters import ADAPTER_FILE, adapter_info

SHELF = "adapters"
ADAPTER_ROLE = "adapter"


def shelf_folder() -> Path:
    """Where fetched adapters are kept (not created here)."""
    return data_root() / SHELF


def shelf_path(sha256: str, file_name: str) -> Path:
    """Where the adapter of `sha256` named `file_name` lies on the shelf."""
    return shelf_folder() / sha256[:12] / Path(file_name).name


def stored_adapters(engine_files: object) -> list[dict]:
    """The adapter entries of a take's engine files (role "adapter"), in stack order."""
    if not isinstance(engine_files, list):
        return []
    return [entry for entry in engine_files
            if isinstance(entry, dict) and entry.get("role") == ADAPTER_ROLE]


def restored_adapters(entries: list[dict]) -> tuple[AdapterChoice, ...]:
    """Each stored adapter as a choice at its strength, from the file of the same SHA-256;
    RequestError naming the file and its SHA-256 when no such file is found."""
    return tuple(AdapterChoice(_located(entry), _strength(entry),
                               bool(entry.get("enabled", True)))
                 for entry in entries)


def _strength(entry: dict) -> float:
    value = entry.get("strength", DEFAULT_STRENGTH)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else DEFAULT_STRENGTH


def _located(entry: dict) -> Path:
    sha = str(entry.get("sha256") or "")
    name = str(entry.get("file_name") or Path(str(entry.get("path") or "adapter")).name)
    places = [Path(str(entry["path"]))] if entry.get("path") else []
    if sha:
        places.append(shelf_path(sha, name))
    for place in places:
        if _holds(place, sha):
            return place
    where = f" at '{printable(places[0])}'" if places else ""
    raise RequestError(Advice(
        f"This take was made with the adapter '{printable(name)}' (SHA-256 {sha or 'unknown'}), "
        f"which is no longer{where} or on the adapter shelf; put that file back, fetch the "
        "take from the team library, or add a copy of it with {0}.",
        Remedy.file(ADAPTER_FILE)))


def find_by_sha256(sha256: str, file_name: str) -> Path | None:
    """The shelf's copy of an adapter, when it holds that exact file."""
    place = shelf_path(sha256, file_name)
    return place if _holds(place, sha256) else None


def _holds(path: Path, sha256: str) -> bool:
    """Whether `path` is a readable adapter whose SHA-256 is `sha256` (hashes are cached by
    size and modification time, so a second restore reads no file again)."""
    if not os.path.isfile(path):  # never raises, whatever the recorded path holds
        return False
    if not sha256:
        return True  # an entry from before hashes were kept: the file at its path is it
    try:
        return adapter_info(path.resolve()).sha256 == sha256
    except (StudioError, OSError):
        return False
