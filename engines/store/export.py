"""Taking takes out of the library: audio files with JSON sidecars, in a folder or one zip.

What goes out is one ExportItem a take (export_plan.py makes them): the take's own file,
copied, or a finished file that the item renders. An export never replaces a file silently:
a name in use (by the audio or by its sidecar) gets _2, _3 ... before its suffix, unless the
caller asked to overwrite. Every file is written under a temporary name and moved into place
whole, so a failure leaves what was there and the takes finished before it.
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engines.errors import StudioError
from engines.failures import sentence, shown
from engines.store.files import slug
from engines.store.records import LibraryError, TakeRecord

Render = Callable[[Path], tuple[Path, dict]]
"""render(target) -> (a complete temporary file beside `target` holding the finished audio,
what the sidecar says about it: {"finishing": ..., "output": {...}}). The caller moves the
temporary into place (then engines.audio_io.atomic.release) or removes it."""


@dataclass(frozen=True)
class ExportItem:
    record: TakeRecord
    name: str  # the file name without its suffix, already safe for any file system
    suffix: str  # ".wav", ".flac", ".ogg"
    render: Render | None = None  # None: the take's own file, copied as it is
    overwrite: bool = False  # replace a file of that name rather than number the new one


def export_stem(record: TakeRecord) -> str:
    """`door-creak-12`: readable, and unique through the id."""
    return f"{slug(record.title())}-{record.id}"


def export_name(record: TakeRecord) -> str:
    """`door-creak-12.wav`; the suffix is the stored file's (imported audio may be .flac)."""
    return export_stem(record) + raw_suffix(record)


def raw_suffix(record: TakeRecord) -> str:
    return record.audio_path.suffix.lower() if record.audio_path.suffix else ".wav"


def raw_items(records: list[TakeRecord]) -> list[ExportItem]:
    """The takes as they are, under their usual export names."""
    return [ExportItem(record, export_stem(record), raw_suffix(record)) for record in records]


def check_exportable(records: list[TakeRecord]) -> None:
    if not records:
        raise LibraryError("No takes were chosen to export; select at least one.")
    for record in records:
        if record.missing:
            raise LibraryError(f"The audio of take #{record.id} is missing, so nothing was "
                               "exported; regenerate it or leave it out.")


def free_target(folder: Path | None, item: ExportItem, taken: set[str]) -> Path:
    """folder/name+suffix, or name_2, name_3 ...: the first whose audio and sidecar names are
    not in `taken` (names already given out in this export, compared without case: some file
    systems and zip readers ignore it) and, in a folder, unused on disk. `folder` None: a name
    inside a new zip, where only `taken` counts."""
    from engines.provenance import sidecar_path

    for number in itertools.count(1):
        stem = item.name if number == 1 else f"{item.name}_{number}"
        audio = Path(folder or "", f"{stem}{item.suffix}")
        if folder is not None and item.overwrite and number == 1:
            return audio
        names = {audio.name.casefold(), sidecar_path(audio).name.casefold()}
        if names & taken or (folder is not None and (
                os.path.lexists(audio) or os.path.lexists(sidecar_path(audio)))):
            continue
        return audio
    raise AssertionError("unreachable")  # itertools.count never ends


def _stopped(what: str, err: BaseException) -> str:
    """`what` and why, as one sentence: a StudioError already says what to do."""
    if isinstance(err, StudioError):
        text = str(err).rstrip(".")
        return f"{what}: {text[:1].lower()}{text[1:]}."
    return sentence(what, err)


def _audio_temp(item: ExportItem, target: Path) -> tuple[Path, dict]:
    """A complete temporary beside `target` with the item's audio, and its sidecar changes."""
    if item.render is not None:
        return item.render(target)
    from engines.audio_io.atomic import create_temp_beside, fsync_file, remove_quietly

    temp = create_temp_beside(target, target.suffix)
    try:
        with open(item.record.audio_path, "rb") as source, open(temp, "wb") as copy:
            while chunk := source.read(1 << 20):
                copy.write(chunk)
        fsync_file(temp)
    except BaseException:
        remove_quietly(temp)
        raise
    return temp, {}


def item_sidecar(item: ExportItem, out: Path, changes: dict) -> dict:
    """The take's sidecar for the file at `out`. Its "finishing" tells how that file was
    finished (None for a copy of the take; a stored chain then stays under "library")."""
    sidecar = item.record.sidecar(out)
    sidecar["output"].update(changes.get("output", {}))
    sidecar["library"]["finishing"] = sidecar["finishing"]
    sidecar["finishing"] = changes.get("finishing")
    return sidecar


Written = Callable[[TakeRecord, Path, dict], None]
"""written(record, path, sidecar): told of each take once it is written (in a zip: its name
there, told once the whole zip is in place)."""


def export_to_folder(items: list[ExportItem], folder: Path,
                     written_cb: Written | None = None) -> list[Path]:
    """Write each item and its sidecar into `folder`; returns the audio paths (each sidecar is
    the same name ending in .json)."""
    from engines.audio_io.atomic import release, remove_quietly
    from engines.provenance import sidecar_path, write_json_atomic

    folder = Path(folder)
    if not folder.is_dir():
        raise LibraryError(f"The folder {shown(folder)} does not exist; choose an existing "
                           "folder to export into.")
    check_exportable([item.record for item in items])
    written: list[Path] = []
    taken: set[str] = set()
    try:
        for item in items:
            temp, changes = _audio_temp(item, free_target(folder, item, taken))
            try:
                # Looked at again after the (maybe long) render: another program may have
                # taken the name meanwhile.
                target = free_target(folder, item, taken)
                os.replace(temp, target)
            finally:
                remove_quietly(temp)  # a no-op once moved
                release(temp)
            sidecar = item_sidecar(item, target.absolute(), changes)
            try:
                write_json_atomic(sidecar_path(target), sidecar)
            except BaseException:
                target.unlink(missing_ok=True)  # no audio without its sidecar
                raise
            taken |= {target.name.casefold(), sidecar_path(target).name.casefold()}
            written.append(target)
            if written_cb is not None:
                written_cb(item.record, target, sidecar)
    except (OSError, UnicodeError, StudioError) as err:
        raise LibraryError(_stopped(f"Exporting to {shown(folder)} stopped after "
                                    f"{len(written)} of {len(items)} takes", err)) from err
    return written


def export_to_zip(items: list[ExportItem], zip_path: Path,
                  written_cb: Written | None = None) -> Path:
    """One zip with the items and their sidecars, written under a temporary name first;
    finished audio is rendered beside the zip and removed once it is in."""
    from engines.audio_io.atomic import release, remove_quietly

    zip_path = Path(zip_path)
    if not zip_path.parent.is_dir():
        raise LibraryError(f"The folder {shown(zip_path.parent)} does not exist; choose an "
                           "existing folder for the zip.")
    check_exportable([item.record for item in items])
    temp = zip_path.with_name(f".{zip_path.name}.{secrets.token_hex(4)}.partial")
    taken: set[str] = set()
    done: list[tuple[TakeRecord, Path, dict]] = []
    try:
        with zipfile.ZipFile(temp, "w") as archive:
            for item in items:
                name = free_target(None, item, taken).name
                taken |= {name.casefold(), Path(name).with_suffix(".json").name.casefold()}
                changes: dict = {}
                if item.render is None:
                    archive.write(item.record.audio_path, name,
                                  compress_type=zipfile.ZIP_STORED)
                else:
                    rendered, changes = item.render(zip_path.with_name(name))
                    try:
                        archive.write(rendered, name, compress_type=zipfile.ZIP_STORED)
                    finally:
                        remove_quietly(rendered)
                        release(rendered)
                sidecar = item_sidecar(item, Path(name), changes)
                payload = json.dumps(sidecar, indent=2, ensure_ascii=False) + "\n"
                archive.writestr(Path(name).with_suffix(".json").name, payload,
                                 compress_type=zipfile.ZIP_DEFLATED)
                done.append((item.record, Path(name), sidecar))
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
