"""Which files of a batch's output folder may be published with its takes (`team publish
--batch DIR`): only a file the batch itself wrote for the take its manifest names.

A manifest is a file anyone can edit or hand over, so each item's `file` is checked before it
is read: a plain name in the folder (no path, no "..", not a link, not a folder), an audio file
with the frames and bytes the manifest recorded when it wrote it, beside its sidecar (also a
plain file) that names the same local take and seed, with as many samples as the audio holds;
and that take is in the local library with the seed and prompt the manifest says. Anything else
is refused by name, and nothing of its take is published from the batch.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from engines.batch.manifest import read_earlier
from engines.batch.resume import file_facts
from engines.delivery.sidecar import read_sidecar, sidecar_path
from engines.error_sentences import printable, shown
from engines.store.library import ClipLibrary
from engines.store.records import LibraryError
from engines.team.errors import TeamError

BATCH_DONE = ("ok", "skipped")


def batch_takes(library: ClipLibrary, folder: Path) -> tuple[dict[int, Path], list[str]]:
    """The local takes a batch rendered into `folder` with the file it wrote of each, and
    the files its manifest names that are refused (the name and why). TeamError when the
    folder holds no manifest or no kept take at all."""
    items, problem = read_earlier(folder)
    if problem is not None:
        raise TeamError(problem)
    if not items:
        raise TeamError(f"The folder {shown(folder)} holds no batch manifest.json with "
                        "rendered takes; give a batch's output folder.")
    root = Path(folder).resolve()
    files: dict[int, Path] = {}
    refused: list[str] = []
    for item in items:
        take_id = item.get("library_id")
        if item.get("status") not in BATCH_DONE or not isinstance(take_id, int) \
                or isinstance(take_id, bool) or not item.get("file"):
            continue
        why = batch_file_doubt(library, root, item)
        if why is None:
            files[take_id] = root / item["file"]
        else:
            refused.append(f"{printable(str(item['file'])[:200])} ({why})")
    if not files and not refused:
        raise TeamError(f"The batch in {shown(folder)} kept no takes in the library, so "
                        "there is nothing to publish; render it again keeping its takes.")
    return files, refused


def batch_file_doubt(library: ClipLibrary, folder: Path, item: dict[str, Any]) -> str | None:
    """Why the manifest item's file may not be published with its take (a few words), or None
    when it is the file the batch wrote for that take. `folder` is resolved."""
    name = item.get("file")
    if not isinstance(name, str) or name in ("", ".", "..") or Path(name).name != name \
            or "/" in name or "\\" in name:
        return "not a file name in the batch folder"
    path = folder / name
    why = _plain_file(path, folder)
    if why is not None:
        return why
    try:
        facts = file_facts(path)
    except Exception:  # noqa: BLE001 - whatever it is, it is not audio this batch wrote
        return "not an audio file"
    for key in ("frames", "bytes"):
        if isinstance(item.get(key), int) and item[key] != facts[key]:
            return f"{key} differ from what the manifest recorded"
    sidecar = _sidecar(folder, name)
    if sidecar is None:
        return "no sidecar of the batch beside it"
    take_id = item.get("library_id")
    output = sidecar.get("output") if isinstance(sidecar.get("output"), dict) else {}
    if sidecar.get("library_id") != take_id or output.get("samples") != facts["frames"]:
        return "its sidecar describes another take"
    try:
        record = library.get(take_id)
    except LibraryError:
        return f"the library has no take #{take_id}"
    if sidecar.get("seed") != record.seed or item.get("seed", record.seed) != record.seed or \
            item.get("prompt", record.prompt) != record.prompt:
        return f"not local take #{take_id}'s file"
    return None


def _plain_file(path: Path, folder: Path) -> str | None:
    try:
        info = os.lstat(path)
    except OSError:
        return "missing"
    if stat.S_ISLNK(info.st_mode):
        return "a link"
    if not stat.S_ISREG(info.st_mode):
        return "not a plain file"
    if info.st_nlink > 1:  # a hard link: the same file is also somewhere else, maybe not ours
        return "a hard link to a file elsewhere"
    if path.resolve().parent != folder:
        return "outside the batch folder"
    return None


def _sidecar(folder: Path, name: str) -> dict | None:
    path = sidecar_path(folder / name)
    if _plain_file(path, folder) is not None:
        return None
    return read_sidecar(path)
