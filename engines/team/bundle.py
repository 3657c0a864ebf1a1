"""A local take made ready to publish (TakeBundle): its record and provenance, the designer's
rating, tags and notes, its sound embedding, and its files - delivered by engines.delivery
(through the library's export) into a folder of the outbox and hashed there.

Files of a take: the take as made ("take") and, when it has a stored finishing chain, the take
finished by it ("finished"), each with its JSON sidecar; a take published from a batch folder
also brings the file the batch delivered ("batch"). Every file is named in the store by its
SHA-256; its name here is what a fetch calls it.

The same take is one entry however often and by whomever it is published: its key is the
SHA-256 of its samples and of the settings that made it (not of the local library's id, dates
or paths, which differ between designers' machines).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engines.delivery.names import default_template
from engines.delivery.sidecar import sidecar_path
from engines.similarity.embedding import EMBEDDING_VERSION, take_embedding
from engines.store.export_plan import ExportOptions
from engines.store.files import content_sha256
from engines.store.library import ClipLibrary
from engines.store.records import LibraryError, TakeRecord
from engines.team.adapter_files import adapter_key_part, bundle_adapters
from engines.team.content_store import sha256_of
from engines.team.entries import check_tag
from engines.team.errors import TeamError

log = logging.getLogger(__name__)

KEY_FIELDS = ("prompt", "negative_prompt", "model", "decoder", "precision", "seconds", "steps",
              "seed", "cfg", "apg", "init_noise_level", "inpaint_spans", "mode", "decoder_tier")
AUDIO_FORMATS = {".wav": "wav", ".flac": "flac", ".ogg": "ogg", ".json": "json"}


@dataclass(frozen=True)
class BundleFile:
    role: str  # "take", "finished" or "batch"; "-sidecar" appended for its JSON
    file_name: str
    sha256: str
    size: int
    format: str
    waits_at: str = ""  # where it lies in the outbox folder, relative to it


@dataclass
class TakeBundle:
    """Everything one publish sends; plain data that survives a round trip through JSON."""

    key: str
    fields: dict[str, Any]  # the takes row: name, prompt, seed, model, tier, mode, ...
    provenance: dict[str, Any]
    designer: str
    rating: int
    tags: list[str]
    notes: str
    embedding: list[float]
    files: list[BundleFile] = field(default_factory=list)
    local_id: int | None = None
    staged: str = ""  # its folder in the outbox ("": the key's, as older releases named it)
    # The recipe of `embedding` (EMBEDDING_VERSION when it was made); a bundle queued by a
    # release before versions were sent has none and says 1, "old", so the team re-makes it.
    embedding_version: int = 1

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> TakeBundle:
        data = json.loads(text)
        data["files"] = [BundleFile(**entry) for entry in data.get("files", [])]
        return cls(**data)


def take_key(record: TakeRecord, audio_sha256: str) -> str:
    """The team's key of a take: its samples and what made them, nothing machine-local."""
    made = {name: getattr(record, name) for name in KEY_FIELDS}
    made["inpaint_spans"] = [list(span) for span in record.inpaint_spans]
    if record.adapters:  # only then: takes without adapters keep the keys they had
        made["adapters"] = adapter_key_part(record)
    text = json.dumps({"audio": audio_sha256, "made": made}, sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sound_vector(pcm: np.ndarray, sample_rate: int) -> list[float]:
    """The take's sound embedding from its audio alone (engines.similarity): every team
    take's vector is made the same way on every machine, so any two compare by cosine."""
    return [float(value) for value in take_embedding(pcm, sample_rate)]


def bundle_take(library: ClipLibrary, take_id: int, designer: str,
                folder_for: Callable[[str], Path], batch_file: Path | None = None) -> TakeBundle:
    """Deliver take `take_id`'s files into `folder_for(its key)` (a new folder of this publish
    alone, so publishes of one take at once never touch each other's files) and describe
    them; `batch_file`: the file a batch delivered of it, published beside them."""
    record = library.get(take_id)
    if record.deleted:
        raise LibraryError(f"Take #{record.id} is in the trash, so it was not published; "
                           "restore it first.")
    pcm = library.verified_audio(record.id)  # a damaged file is named, never published
    audio_sha = content_sha256(pcm)
    key = take_key(record, audio_sha)
    folder = folder_for(key)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        files = _delivered(library, record, folder, batch_file)
        # its house sound travels with it
        files += [BundleFile(*fields) for fields in bundle_adapters(record, folder)]
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    provenance = record.sidecar()
    provenance.pop("output", None)  # where the file lies on this machine
    fields = {"name": record.name, "prompt": record.prompt,
              "negative_prompt": record.negative_prompt,
              "seed": None if record.is_imported else record.seed, "model": record.model,
              "tier": record.decoder_tier, "mode": record.mode, "seconds": record.seconds,
              "sample_rate": record.sample_rate, "samples": record.samples,
              "created": record.created, "content_sha256": audio_sha}
    return TakeBundle(key, fields, provenance, designer,
                      record.rating, _team_tags(record.tags), record.notes,
                      sound_vector(pcm, record.sample_rate), files, record.id, folder.name,
                      EMBEDDING_VERSION)


def _team_tags(tags: list[str]) -> list[str]:
    """The take's tags the team library takes (engines.team.entries.check_tag); one it
    refuses stays in the local library only, so the rest of the take is published."""
    kept = []
    for tag in tags:
        try:
            kept.append(check_tag(tag))
        except TeamError as err:
            log.warning("Team publish: a tag was left out: %s", err)
    return kept


def _delivered(library: ClipLibrary, record: TakeRecord, folder: Path,
               batch_file: Path | None) -> list[BundleFile]:
    template = default_template()
    raw_dir, finished_dir = folder / "take", folder / "finished"
    raw_dir.mkdir()
    files = _described("take", library.export([record.id], raw_dir,
                                              ExportOptions(template=template)),
                       "_raw" if record.finished else "")
    if record.finished:
        finished_dir.mkdir()
        files += _described("finished", library.export(
            [record.id], finished_dir, ExportOptions(template=template, use_stored=True)), "")
    if batch_file is not None:
        batch_dir = folder / "batch"
        batch_dir.mkdir()
        copies = []
        for source in (batch_file, sidecar_path(batch_file)):
            if source.is_file():
                _copy_no_link(source, batch_dir / source.name)
                copies.append(batch_dir / source.name)
        have = {f.sha256 for f in files}
        # A batch file the same as one made here (a raw take delivered raw) is that file.
        files += [f for f in _described("batch", copies[:1], "") if f.sha256 not in have]
    return files


def _copy_no_link(source: Path, target: Path) -> None:
    """Copy `source`, refusing a symbolic link put there after the batch folder was checked
    (engines.team.batch_files): only the file itself is published, never what a link names."""
    fd = os.open(source, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0))
    with os.fdopen(fd, "rb") as reading, open(target, "xb") as writing:
        shutil.copyfileobj(reading, writing)


def _described(role: str, audio_paths: list[Path], stem_suffix: str) -> list[BundleFile]:
    """Each delivered audio file and its sidecar, hashed where they lie (a subfolder of the
    bundle's folder); `stem_suffix` tells the raw take from its finished file on a fetch."""
    described = []
    for audio in audio_paths:
        for path, file_role in ((audio, role), (sidecar_path(audio), f"{role}-sidecar")):
            if not path.is_file():
                continue
            sha, size = sha256_of(path)
            name = f"{path.stem}{stem_suffix}{path.suffix}"
            described.append(BundleFile(file_role, name, sha, size,
                                        AUDIO_FORMATS.get(path.suffix.lower(), ""),
                                        f"{path.parent.name}/{path.name}"))
    return described


def file_path(folder: Path, entry: BundleFile) -> Path:
    """Where a bundle's file waits in its outbox folder."""
    return folder / entry.waits_at
