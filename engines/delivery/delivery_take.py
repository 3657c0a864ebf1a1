"""What is delivered: a take (its raw samples and where they came from), optionally finished
by a chain, and the labels the studio gives it. Built from whatever the caller holds - a fresh
GenerationResult (generate, batch, the window) or a library TakeRecord (export, the Library
tab) - so every way out describes the same take the same way.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from engines.audio_io import result_pcm16
from engines.constants import SAMPLE_RATE
from engines.paths import APP_NAME  # the one name files and folders carry
from engines.provenance import take_provenance

if TYPE_CHECKING:
    from engines.finish.finished_take import FinishedTake
    from engines.generation_result import GenerationResult
    from engines.store.records import TakeRecord



@dataclass(frozen=True)
class Labels:
    """Who and what a delivered file says it is, as sound libraries file it: the UCS blocks
    (CatID, FXName, CreatorID, SourceID; category and subcategory from the user's UCS list)
    and the studio's own names (designer, library), from settings and flags."""

    catid: str = ""
    category: str = ""
    subcategory: str = ""
    fx_name: str = ""
    creator: str = ""
    source: str = ""
    designer: str = ""
    library: str = ""
    notes: str = ""


@dataclass(frozen=True, eq=False)
class DeliveryTake:
    """A take on its way out. `pcm` is the raw take, int16 (N, 2) at 44.1 kHz, exactly as
    the library keeps it; `provenance` the sidecar's account of how it was made (request,
    seed, backend, engine files, timings, tiers, library fields); `finished` the take run
    through its finishing chain, when it has one."""

    pcm: np.ndarray
    provenance: dict[str, Any]
    finished: FinishedTake | None = None
    name: str = ""
    # ISO 8601 UTC: when the library kept the take (bext's origination date, the note's
    # "created"). "" for a take no library row holds: its files then carry no clock time, so
    # the same take and chain give the same bytes whenever they are written (batch promises
    # identical files whatever --jobs, and on a rerun with --force).
    created: str = ""
    labels: Labels = field(default_factory=Labels)
    raw_format: str = "wav16"  # the format the take leaves in unfinished (imports: lossless)
    finishing_source: str | None = None  # "stored" chain or "given" by the caller

    @property
    def request(self) -> dict[str, Any]:
        return self.provenance.get("request") or {}

    @property
    def prompt(self) -> str:
        return str(self.request.get("prompt") or "")

    @property
    def seed(self) -> int | None:
        seed = self.provenance.get("seed")
        return seed if type(seed) is int else None

    @property
    def library_id(self) -> int | None:
        value = self.provenance.get("library_id")
        return value if type(value) is int else None

    @property
    def generated(self) -> bool:
        return self.request.get("mode") not in (None, "imported")

    def with_finished(self, finished: FinishedTake | None) -> DeliveryTake:
        return replace(self, finished=finished)

    def with_labels(self, labels: Labels) -> DeliveryTake:
        return replace(self, labels=labels)

    def with_finishing_source(self, source: str) -> DeliveryTake:
        return replace(self, finishing_source=source)

    def reference(self) -> str:
        """A short id that names this take wherever the file goes: the library id, else the
        start of the hash of its samples (bext OriginatorReference has 32 bytes)."""
        if self.library_id is not None:
            return f"SA3-{self.library_id}"
        digest = hashlib.sha256(np.ascontiguousarray(self.pcm).tobytes()).hexdigest()
        return f"SA3-{digest[:16]}"


def now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def from_result(result: GenerationResult, *, record: TakeRecord | None = None,
                init: dict | None = None, name: str = "",
                finished: FinishedTake | None = None) -> DeliveryTake:
    """A take the engine just made. `record`: the library row it was kept as (its id and
    creation time go into every file); `init`: the init file's entry (engines.provenance.
    init_entry, taken before anything was written)."""
    provenance = take_provenance(result, init)
    created = record.created if record is not None else ""
    if created:
        provenance["created"] = created
    provenance["library_id"] = record.id if record is not None else None
    return DeliveryTake(result_pcm16(result), provenance, finished,
                        name or (record.name if record is not None else ""), created)


def from_record(record: TakeRecord, pcm: np.ndarray,
                finished: FinishedTake | None = None) -> DeliveryTake:
    """A take kept in the library, with its samples (verified by the caller)."""
    provenance = record.sidecar()
    provenance.pop("output", None)
    # The chain applied to a file is said per file; the one stored with the take stays under
    # "library".
    provenance["library"]["finishing"] = provenance.pop("finishing", None)
    stored_as = {"flac": "flac", "wav": "wav32f"}.get(record.file_format, "wav16")
    return DeliveryTake(pcm, provenance, finished, record.name, record.created,
                        raw_format=stored_as)


def from_audio(pcm: np.ndarray, *, prompt: str = "", name: str = "", seed: int | None = None,
               model: str = "", source: str | None = None) -> DeliveryTake:
    """Audio the session holds with no full record of its making (an imported file, or a take
    whose library row is gone): its file still says what is known of it."""
    mode = "imported" if seed is None else "t2a"
    provenance = {"app": APP_NAME, "created": now_iso(), "library_id": None,
                  "request": {"prompt": prompt, "mode": mode, "model": model or None,
                              "init_audio": None},
                  "source": source, "seed": seed}
    return DeliveryTake(pcm, provenance, None, name, "")


__all__ = ["APP_NAME", "SAMPLE_RATE", "DeliveryTake", "Labels", "from_audio", "from_record",
           "from_result", "now_iso"]
