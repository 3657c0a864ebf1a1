"""Taking takes out of the library: audio copies with JSON sidecars, in a folder or one zip."""

from __future__ import annotations

import json
import os
import secrets
import zipfile
from pathlib import Path

from engines.failures import sentence, shown
from engines.store.files import copy_atomic, slug
from engines.store.records import LibraryError, TakeRecord


def export_name(record: TakeRecord) -> str:
    """`door-creak-12.wav`: readable, and unique through the id; the suffix is the stored
    file's (imported audio may be .flac)."""
    suffix = record.audio_path.suffix.lower() if record.audio_path.suffix else ".wav"
    return f"{slug(record.title())}-{record.id}{suffix}"


def check_exportable(records: list[TakeRecord]) -> None:
    if not records:
        raise LibraryError("No takes were chosen to export; select at least one.")
    for record in records:
        if record.missing:
            raise LibraryError(f"The audio of take #{record.id} is missing, so nothing was "
                               "exported; regenerate it or leave it out.")


def export_to_folder(records: list[TakeRecord], folder: Path) -> list[Path]:
    """Copy each take (its WAV keeps the embedded note) and write its sidecar beside it."""
    from engines.provenance import sidecar_path, write_json_atomic

    folder = Path(folder)
    if not folder.is_dir():
        raise LibraryError(f"The folder {shown(folder)} does not exist; choose an existing "
                           "folder to export into.")
    check_exportable(records)
    written: list[Path] = []
    try:
        for record in records:
            target = folder / export_name(record)
            copy_atomic(record.audio_path, target)
            write_json_atomic(sidecar_path(target), record.sidecar(target))
            written.append(target)
    except (OSError, UnicodeError) as err:
        raise LibraryError(sentence(f"Exporting to {shown(folder)} stopped after "
                                    f"{len(written)} of {len(records)} takes", err)) from err
    return written


def export_to_zip(records: list[TakeRecord], zip_path: Path) -> Path:
    """One zip with the takes and their sidecars, written under a temporary name first."""
    zip_path = Path(zip_path)
    if not zip_path.parent.is_dir():
        raise LibraryError(f"The folder {shown(zip_path.parent)} does not exist; choose an "
                           "existing folder for the zip.")
    check_exportable(records)
    temp = zip_path.with_name(f".{zip_path.name}.{secrets.token_hex(4)}.partial")
    try:
        with zipfile.ZipFile(temp, "w") as archive:
            for record in records:
                name = export_name(record)
                archive.write(record.audio_path, name, compress_type=zipfile.ZIP_STORED)
                payload = json.dumps(record.sidecar(Path(name)), indent=2,
                                     ensure_ascii=False) + "\n"
                archive.writestr(Path(name).with_suffix(".json").name, payload,
                                 compress_type=zipfile.ZIP_DEFLATED)
        os.replace(temp, zip_path)
    except BaseException as err:
        try:
            temp.unlink(missing_ok=True)
        except OSError:
            pass
        if isinstance(err, (OSError, UnicodeError, zipfile.BadZipFile)):
            raise LibraryError(sentence(f"Could not write {shown(zip_path)}, so nothing was "
                                        "changed", err)) from err
        raise
    return zip_path
