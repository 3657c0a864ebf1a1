"""A take's adapters travel with it through the team library, so a team's house sound comes
with the takes made with it: publishing a take made with adapters brings each adapter file
(role "adapter", named in the store by its SHA-256 like every file of a take), and fetching
the take puts each on this machine's adapter shelf (engines.adapter_restore), where Restore
settings and Regenerate find it by its SHA-256.

The server checks the pairing (schema step 8, engines.team.adapter_step): a take whose
provenance names adapters must bring every one of their files, and every adapter file a take
brings must be one its provenance names.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from engines.adapter_restore import find_by_sha256, restored_adapters, shelf_path
from engines.error_sentences import sentence, shown
from engines.errors import StudioError
from engines.store.records import LibraryError, TakeRecord
from engines.team.content_store import ContentStore, sha256_of
from engines.team.entries import TeamFile
from engines.team.errors import TeamError

log = logging.getLogger(__name__)

ADAPTER_ROLE = "adapter"
ADAPTER_FORMAT = "safetensors"


def adapter_key_part(record: TakeRecord) -> list[list]:
    """The adapters in a take's team key ([SHA-256, strength, on] each, in stack order): the
    same audio made with other adapters is another take."""
    return [[entry.get("sha256"), entry.get("strength"), bool(entry.get("enabled", True))]
            for entry in record.adapters]


def bundle_adapters(record: TakeRecord, folder: Path) -> list[tuple]:
    """Copy each adapter of `record` into `folder`/adapters/ (its outbox folder) and describe
    it as engines.team.bundle.BundleFile's fields (role, file name, SHA-256, size, format,
    where it waits in the folder); LibraryError (one sentence naming the file and its SHA-256)
    when an adapter is no longer on this machine, so no take is published without its sound."""
    if not record.adapters:
        return []
    try:
        paths = [choice.path for choice in restored_adapters(record.adapters)]
    except StudioError as exc:
        raise LibraryError(f"Take #{record.id} was not published: {exc}") from None
    files, seen = [], set()
    for path, entry in zip(paths, record.adapters, strict=True):
        sha = str(entry.get("sha256"))
        if sha in seen:  # the same file stacked twice travels once
            continue
        seen.add(sha)
        target = folder / "adapters" / sha[:12] / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        got, size = sha256_of(target)
        if got != sha:
            raise LibraryError(f"The adapter {shown(path)} changed while take #{record.id} was "
                               "published; publish it again.")
        files.append((ADAPTER_ROLE, path.name, sha, size, ADAPTER_FORMAT,
                      target.relative_to(folder).as_posix()))
    return files


def shelve_adapters(store: ContentStore, files: list[TeamFile]) -> list[Path]:
    """Each adapter file of a team take on this machine's adapter shelf, checked against its
    SHA-256 as it is copied (one already there is kept); the shelf paths."""
    shelved = []
    for file in files:
        if file.role != ADAPTER_ROLE:
            continue
        have = find_by_sha256(file.sha256, file.name)
        if have is not None:
            shelved.append(have)
            continue
        target = shelf_path(file.sha256, file.name)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            temp = target.with_name(f".{target.name}.{os.getpid()}.partial")
            store.copy_verified(file.sha256, lambda temp=temp: (_create(temp), temp))
            os.replace(temp, target)
        except OSError as err:
            raise TeamError(sentence(f"Could not keep the adapter {shown(file.name)} in "
                                     f"{shown(target.parent)}", err)) from err
        log.info("Team fetch: adapter %s (%s) shelved", file.name, file.sha256[:12])
        shelved.append(target)
    return shelved


def _create(path: Path) -> int:
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0),
                   0o644)
