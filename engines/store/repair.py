"""Putting the library folder right after a crash, or after its database had to be replaced.

What a killed writer can leave (see library.py for why nothing worse is possible): a temporary
file in audio/ (removed), a complete file whose row never committed (adopted back from the note
embedded in it), or a file in the wrong folder because a delete or restore stopped halfway (moved
to where its row's flag says). Files that nothing claims and nothing identifies are set aside in
trash/unlisted/, never deleted; only the file of a take the user emptied out of the trash for
good (see journal.py), left behind by a crash or a failed removal, is removed.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path

import soundfile as sf

from engines.constants import DEFAULT_LIMITER_CEILING
from engines.provenance import codec_tier_of, note_adapters
from engines.store import schema, wavmeta
from engines.store.files import content_sha256, copy_atomic
from engines.store.records import MAX_TAKE_ID

log = logging.getLogger(__name__)

TEMP_PREFIX = ".incoming-"
UNLISTED_DIR = "unlisted"  # inside trash/
RECOVERED_NOTE = ("Recovered from its audio file's embedded note; settings not in the note "
                  "(engine files, timings, tags) were lost.")


def is_corruption(err: sqlite3.DatabaseError) -> bool:
    """Damage (not a lock, a permission or a full disk): the only reason to start over."""
    name = getattr(err, "sqlite_errorname", "")
    if name in ("SQLITE_CORRUPT", "SQLITE_NOTADB"):
        return True
    if isinstance(err, sqlite3.OperationalError):
        return False
    return type(err) is sqlite3.DatabaseError


def copy_aside(db_path: Path) -> Path:
    """Copy a damaged database (and its write-ahead log, which holds its latest changes) to
    `<name>.corrupt-<time>` beside it, for the user to keep; returns the copy's path. The
    damaged file itself stays where it is until its replacement is complete."""
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    aside = db_path.with_name(f"{db_path.name}.corrupt-{stamp}")
    serial = 1
    while aside.exists():
        serial += 1
        aside = db_path.with_name(f"{db_path.name}.corrupt-{stamp}-{serial}")
    copy_atomic(db_path, aside)
    wal = db_path.with_name(db_path.name + "-wal")
    if wal.is_file() and wal.stat().st_size > 0:
        copy_atomic(wal, aside.with_name(aside.name + "-wal"))
    return aside


def list_folders(folders: Iterable[Path]) -> dict[Path, set[str]]:
    """The file names in each folder, after removing unfinished temporary files."""
    listing: dict[Path, set[str]] = {}
    for folder in folders:
        names: set[str] = set()
        for entry in os.scandir(folder):
            if entry.name.startswith(TEMP_PREFIX):
                try:
                    Path(entry.path).unlink(missing_ok=True)
                except OSError:
                    log.warning("Could not remove the unfinished file %s", entry.path,
                                exc_info=True)
                else:
                    log.info("Removed the unfinished file %s", entry.path)
            elif entry.is_file():
                names.add(entry.name)
        listing[folder] = names
    return listing


def settle_files(rows: Iterable[tuple[int, str, int]], listing: dict[Path, set[str]],
                 audio_dir: Path, trash_dir: Path) -> dict[Path, set[str]]:
    """Move each row's file to the folder its deleted flag names; returns the names rows claim
    in each folder."""
    claimed: dict[Path, set[str]] = {audio_dir: set(), trash_dir: set()}
    for take_id, name, deleted in rows:
        if os.sep in name or "/" in name:
            continue  # an absolute path kept from an old library; left where it is
        want, other = (trash_dir, audio_dir) if deleted else (audio_dir, trash_dir)
        claimed[want].add(name)
        if name in listing[want] or name not in listing[other]:
            continue
        try:
            os.replace(other / name, want / name)
        except OSError:
            log.warning("Could not move %s to %s", other / name, want, exc_info=True)
            continue
        listing[other].discard(name)
        listing[want].add(name)
        log.info("Moved the audio of take #%d to %s, where its entry says it is", take_id, want)
    return claimed


TAKE_SUFFIXES = (".wav", ".flac")  # generated takes are WAV; imported audio may be FLAC


def unclaimed(listing: dict[Path, set[str]], claimed: dict[Path, set[str]]) -> list[Path]:
    return [folder / name for folder, names in listing.items()
            for name in sorted(names - claimed.get(folder, set()))
            if name.lower().endswith(TAKE_SUFFIXES)]


def row_from_file(path: Path, *, deleted: bool, now: str) -> dict | None:
    """A `takes` row rebuilt from the note in a take's audio file, or None if it has no usable
    note."""
    note = wavmeta.read_metadata(path)
    if note is None or type(note.get("library_id")) is not int \
            or not 1 <= note["library_id"] <= MAX_TAKE_ID:
        return None
    try:
        with sf.SoundFile(wavmeta.sf_name(path)) as handle:
            frames, rate = handle.frames, handle.samplerate
            audio = handle.read(dtype=wavmeta.stored_dtype(handle.subtype), always_2d=True)
        prompt = str(note.get("prompt", ""))
        parent = note.get("parent_id")
        return {
            "id": note["library_id"], "created": str(note.get("created") or now), "name": "",
            "prompt": prompt, "negative_prompt": str(note.get("negative_prompt", "")),
            "model": str(note.get("model", "")), "decoder": str(note.get("decoder", "")),
            "precision": str(note.get("precision", "")),
            "decoder_tier": codec_tier_of(note),
            "seconds": float(note.get("seconds", frames / max(rate, 1))),
            "steps": int(note.get("steps", 0)), "seed": int(note.get("seed", 0)),
            "cfg": float(note.get("cfg", 1.0)), "apg": float(note.get("apg", 1.0)),
            "init_noise_level": (None if note.get("init_noise_level") is None
                                 else float(note["init_noise_level"])),
            "inpaint_spans": json.dumps([[float(a), float(b)]
                                         for a, b in note.get("inpaint_spans", [])]),
            "limiter_ceiling": float(note.get("limiter_ceiling", DEFAULT_LIMITER_CEILING)),
            "mode": str(note.get("mode", "t2a")), "backend": str(note.get("backend", "")),
            # its adapters, found again by SHA-256 on the adapter shelf (engines.adapter_restore)
            "engine_files": json.dumps([{"role": "adapter", **entry}
                                        for entry in note_adapters(note.get("adapters"))]),
            "audio_file": path.name, "content_sha256": content_sha256(audio),
            "parent_id": parent if isinstance(parent, int) else None, "sample_rate": rate,
            "samples": frames, "deleted": int(deleted), "notes": RECOVERED_NOTE,
            "search_text": schema.search_text(prompt, "", [], RECOVERED_NOTE, None),
        }
    except (sf.SoundFileError, RuntimeError, ValueError, TypeError, OSError, MemoryError,
            OverflowError) as err:
        log.warning("Could not rebuild a library entry from %s (%s)", path, err)
        return None


def remove_purged(path: Path) -> None:
    """Finish emptying the trash: remove the file of a take purged for good (see journal.py)
    that was left behind; one that still cannot be removed is tried again next time."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        log.warning("Could not remove %s, the file of a take deleted for good", path,
                    exc_info=True)
    else:
        log.info("Removed %s, the file of a take deleted for good", path)


def set_aside(path: Path, trash_dir: Path) -> None:
    aside = trash_dir / UNLISTED_DIR
    try:
        aside.mkdir(exist_ok=True)
        os.replace(path, aside / path.name)
    except OSError:
        log.warning("Could not move the stray file %s aside", path, exc_info=True)
    else:
        log.warning("Moved %s, which no library entry claims, to %s", path, aside)
