"""Taking takes out of the library: audio files with JSON sidecars, in a folder or one zip,
through the one delivery layer (engines.delivery): the same bytes, names, sidecars and
embedded metadata as every other way out.

What goes out is one ExportItem a take (export_plan.py makes them): the take as it was made,
or finished by a chain. A take's audio is checked against the hash recorded when it was saved
before anything is written (a damaged file is named, never exported). An export never replaces
a file silently: a name in use (by the audio or by its sidecar) gets _2, _3 ... before its
suffix, unless the caller asked to overwrite. A failure leaves what was there and the takes
finished before it.
"""

from __future__ import annotations

import json
import os
import secrets
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engines.audio_io.atomic import release, remove_quietly
from engines.audio_io.formats import suffix_for
from engines.delivery.deliver import deliver, deliver_new, prepare
from engines.delivery.delivery_take import DeliveryTake
from engines.delivery.guard import Protected
from engines.delivery.names import free_name
from engines.delivery.sidecar import sidecar_path
from engines.error_sentences import sentence, shown
from engines.errors import StudioError
from engines.finish.finished_take import strict_json
from engines.store.records import LibraryError, TakeRecord


@dataclass(frozen=True)
class ExportItem:
    record: TakeRecord
    name: str  # the file name without its suffix
    fmt: str  # a delivery format (engines.audio_io.formats)
    overwrite: bool = False  # replace a file of that name rather than number the new one


TakeOf = Callable[[ExportItem], DeliveryTake]
"""take_of(item) -> the item's take, its audio verified and finished as the item says."""

Written = Callable[[TakeRecord, Path, dict], None]
"""written(record, path, sidecar): told of each take once it is written (in a zip: its name
there, told once the whole zip is in place)."""


def check_exportable(records: list[TakeRecord]) -> None:
    if not records:
        raise LibraryError("No takes were chosen to export; select at least one.")
    for record in records:
        if record.missing:
            raise LibraryError(f"The audio of take #{record.id} is missing, so nothing was "
                               "exported; regenerate it or leave it out.")


def _stopped(what: str, err: BaseException) -> str:
    """`what` and why, as one sentence: a StudioError already says what to do."""
    if isinstance(err, StudioError):
        text = str(err).rstrip(".")
        return f"{what}: {text[:1].lower()}{text[1:]}."
    return sentence(what, err)


def export_to_folder(items: list[ExportItem], folder: Path, take_of: TakeOf,
                     written_cb: Written | None = None,
                     protected: Protected | None = None) -> list[Path]:
    """Write each item and its sidecar into `folder`; returns the audio paths (each sidecar is
    the same name ending in .json)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise LibraryError(f"The folder {shown(folder)} does not exist; choose an existing "
                           "folder to export into.")
    check_exportable([item.record for item in items])
    if protected is not None:  # refused before any take is read or written
        protected.check_folder(folder, "export folder")
    written: list[Path] = []
    taken: set[str] = set()
    try:
        for item in items:
            take = take_of(item)
            if item.overwrite:
                done = deliver(take, folder / f"{item.name}{suffix_for(item.fmt)}",
                               fmt=item.fmt, protected=protected)
            else:
                done = deliver_new(take, folder, item.name, fmt=item.fmt, protected=protected,
                                   taken=taken)
            written.append(done.path)
            if written_cb is not None:
                written_cb(item.record, done.path, done.sidecar)
    except (OSError, UnicodeError, StudioError) as err:
        raise LibraryError(_stopped(f"Exporting to {shown(folder)} stopped after "
                                    f"{len(written)} of {len(items)} takes", err)) from err
    return written


def export_to_zip(items: list[ExportItem], zip_path: Path, take_of: TakeOf,
                  written_cb: Written | None = None,
                  protected: Protected | None = None) -> Path:
    """One zip with the items and their sidecars, written under a temporary name first; each
    file is made beside the zip and removed once it is in."""
    zip_path = Path(zip_path)
    if not zip_path.parent.is_dir():
        raise LibraryError(f"The folder {shown(zip_path.parent)} does not exist; choose an "
                           "existing folder for the zip.")
    check_exportable([item.record for item in items])
    if protected is not None:
        protected.check(zip_path, "zip")
    temp = zip_path.with_name(f".{zip_path.name}.{secrets.token_hex(4)}.partial")
    taken: set[str] = set()
    done: list[tuple[TakeRecord, Path, dict]] = []
    try:
        with zipfile.ZipFile(temp, "w") as archive:
            for item in items:
                name = free_name(None, item.name, suffix_for(item.fmt), taken)
                taken |= {name.name.casefold(), sidecar_path(name).name.casefold()}
                audio, sidecar = _zip_entry(take_of(item), item, zip_path.with_name(name.name),
                                            name)
                try:
                    archive.write(audio, name.name, compress_type=zipfile.ZIP_STORED)
                finally:
                    remove_quietly(audio)
                    release(audio)
                payload = json.dumps(strict_json(sidecar), indent=2, ensure_ascii=False) + "\n"
                archive.writestr(sidecar_path(name).name, payload,
                                 compress_type=zipfile.ZIP_DEFLATED)
                done.append((item.record, name, sidecar))
        os.replace(temp, zip_path)
    except BaseException as err:
        try:
            temp.unlink(missing_ok=True)
        except OSError:
            pass
        if isinstance(err, (OSError, UnicodeError, zipfile.BadZipFile, StudioError)):
            raise LibraryError(_stopped(f"Could not write {shown(zip_path)}, so nothing was "
                                        "changed", err)) from err
        raise
    if written_cb is not None:
        for record, name, sidecar in done:
            written_cb(record, name, sidecar)
    return zip_path


def _zip_entry(take: DeliveryTake, item: ExportItem, beside: Path,
               name: Path) -> tuple[Path, dict[str, Any]]:
    temp, sidecar, _ = prepare(take, beside, item.fmt, shown_as=name)
    return temp, sidecar
