"""What the library keeps of one sound file (a SoundEntry): its takes row, the columns a
changed or moved file decides, its sound_files row and the words its search text adds."""

from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path

from engines.sound_import.probe import SoundEntry
from engines.store import schema
from engines.store.records import IMPORTED, LibraryError, TakeRecord, label_columns
from engines.text import storable


def created_of(entry: SoundEntry) -> str:
    """A sound's `created`: when its file was last written (what a designer sorts by), in the
    takes' format (ISO 8601 UTC, milliseconds)."""
    moment = _dt.datetime.fromtimestamp(entry.mtime_ns / 1e9, _dt.UTC)
    return moment.isoformat(timespec="milliseconds")


def sound_labels(entry: SoundEntry) -> dict[str, str]:
    """The label columns the file gives; a label the library would refuse (too long, blank)
    is left out rather than refusing the sound."""
    columns: dict[str, str] = {}
    for key, value in entry.metadata.labels.items():
        try:
            columns.update(label_columns({key: value}))
        except LibraryError:
            continue
    return columns


def search_words(entry: SoundEntry) -> str:
    """Labels, keywords and the file's folders inside its import folder, lower case."""
    meta = entry.metadata
    folders = os.path.relpath(os.path.dirname(entry.path), entry.root)
    parts = [*meta.labels.values(), *meta.keywords]
    if folders != ".":
        parts.append(folders.replace(os.sep, " "))
    return storable(" ".join(" ".join(parts).split())).lower()


def sound_text(entry: SoundEntry, name: str, tags: list[str], notes: str) -> str:
    """The search text of a sound: what every take's has, plus search_words."""
    text = schema.search_text(storable(entry.metadata.description), name, tags, notes,
                              entry.path)
    return "\n".join(part for part in (text, search_words(entry)) if part)


def _file_columns(entry: SoundEntry) -> dict:
    """The takes columns the file decides (for a new row, and again when it changed)."""
    return {"audio_file": entry.path, "init_source": entry.path, "source_root": entry.root,
            "prompt": storable(entry.metadata.description),
            "seconds": entry.frames / entry.sample_rate, "sample_rate": entry.sample_rate,
            "samples": entry.frames, **sound_labels(entry)}


def new_take_row(entry: SoundEntry, take_id: int) -> dict:
    name = " ".join(storable(Path(entry.path).stem).split())
    return {"id": take_id, "created": created_of(entry), "name": name, "model": IMPORTED,
            "mode": IMPORTED, "steps": 0, "seed": 0, "cfg": 0.0, "apg": 0.0,
            "limiter_ceiling": 0.0, "backend": "", "requested_backend": "",
            **_file_columns(entry), "search_text": sound_text(entry, name, [], "")}


def changed_take_columns(entry: SoundEntry, record: TakeRecord, old_path: str) -> dict:
    """The columns of a sound whose file changed or moved. Its name follows the file's new
    name unless the user renamed it; rating, tags, notes and the trash flag stay."""
    name = record.name
    if name == " ".join(storable(Path(old_path).stem).split()):
        name = " ".join(storable(Path(entry.path).stem).split())
    return {**_file_columns(entry), "name": name,
            "search_text": sound_text(entry, name, record.tags, record.notes)}


def file_row(entry: SoundEntry) -> dict:
    return {"path": entry.path, "root": entry.root, "size": entry.size,
            "mtime_ns": entry.mtime_ns, "fingerprint": entry.fingerprint,
            "format": entry.format, "subtype": entry.subtype, "channels": entry.channels,
            "sample_rate": entry.sample_rate, "frames": entry.frames,
            "metadata": json.dumps(entry.metadata.groups, ensure_ascii=True),
            "words": search_words(entry)}
