"""What the library knows about one take (TakeRecord), and the error its operations raise."""

from __future__ import annotations

import json
import numbers
import os
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from engines.adapter_restore import restored_adapters, stored_adapters
from engines.catalog import codec_tiers, get_model_set, paired_decoder
from engines.constants import CHANNELS
from engines.error_sentences import printable
from engines.errors import RequestError, StudioError
from engines.provenance import tier_entry
from engines.request import AudioInput, GenerationRequest
from engines.store.wavmeta import APP_NAME
from engines.text import storable
from engines.text_display import blank_label_sentence, looks_blank

if TYPE_CHECKING:
    from engines.request import GenerationRequest

IMPORTED = "imported"  # mode and model of audio the user brought in
# The UCS labels a take keeps (schema 4), by the name engines.delivery.delivery_take.Labels
# gives each, and the column that holds it.
LABEL_COLUMNS = {"catid": "ucs_catid", "category": "ucs_category",
                 "subcategory": "ucs_subcategory", "fx_name": "ucs_fx_name",
                 "creator": "ucs_creator", "source": "ucs_source"}
MAX_TAKE_ID = 2**63 - 1  # SQLite's largest integer: no take can have a larger id


class LibraryError(StudioError):
    """A library operation failed; the message is one sentence for the user."""


@dataclass
class TakeRecord:
    """One take as the library knows it. Plain data: changing it changes nothing on disk."""

    id: int
    created: str  # ISO 8601, UTC
    name: str
    prompt: str
    negative_prompt: str
    model: str
    decoder: str
    precision: str
    seconds: float
    steps: int
    seed: int
    cfg: float
    apg: float
    init_noise_level: float | None
    inpaint_spans: list[tuple[float, float]]
    limiter_ceiling: float
    mode: str  # "t2a" | "a2a" | "inpaint" | "imported"
    backend: str  # the backend that ran it
    timings_ms: dict[str, float]
    engine_files: list[dict]  # {"role", "path", "size", "sha256"}
    audio_path: Path  # absolute
    parent_id: int | None
    init_source: str | None  # the init audio file the user picked, if any
    rating: int
    favourite: bool
    tags: list[str]
    notes: str
    sample_rate: int
    samples: int
    deleted: bool
    seed_was_random: bool = False
    requested_backend: str = "auto"  # what was asked for ("auto" unless the user chose one)
    decoder_tier: str = ""
    warnings: list[str] = field(default_factory=list)
    content_sha256: str = ""  # of the samples as stored, to recognise copies of the file
    # The stored finishing chain (engines.finish.finished_take.FinishedTake.record(): chain, loop,
    # report, loop_points), None when the take has none; the audio file is always the raw take.
    finishing: dict | None = None
    quality: list[str] = field(default_factory=list)  # engines.finish.quality codes
    # The UCS labels it was given (keys of LABEL_COLUMNS, '' when not given): every way out
    # names and labels its files by them unless told otherwise.
    labels: dict[str, str] = field(default_factory=lambda: dict.fromkeys(LABEL_COLUMNS, ""))
    # Its number in the set of variations it was made in, and that set's size; None for takes
    # kept before they were stored (engines.store.families finds them from the take's family).
    variation: int | None = None
    variations: int | None = None
    # The imported folder of a sound file referenced in place (engines.sound_import; its
    # audio_path is then the user's own file, never written); None for the library's own audio.
    source_root: str | None = None

    @property
    def is_sound_file(self) -> bool:
        return self.source_root is not None

    @property
    def source(self) -> str:
        """Where the sound comes from, as the library's Source column shows it."""
        if self.source_root is not None:
            return self.source_root
        return "Imported audio" if self.is_imported else "Generated"

    @property
    def finished(self) -> bool:
        return self.finishing is not None

    @property
    def missing(self) -> bool:
        """The audio file is gone (moved or deleted outside the app), or cannot be looked at."""
        return not os.path.isfile(self.audio_path)  # never raises, unlike Path.is_file

    @property
    def is_imported(self) -> bool:
        return self.mode == IMPORTED

    @property
    def file_format(self) -> str:
        """How the audio file is stored: "wav16" (generated takes), "flac" or "wav" (imports,
        losslessly compressed when FLAC can hold them bit for bit, else 32-bit float WAV)."""
        if self.audio_path.suffix.lower() == ".flac":
            return "flac"
        return "wav" if self.is_imported else "wav16"

    @property
    def adapters(self) -> list[dict]:
        """The adapters it was made with (engines.provenance.adapter_entries), in stack order:
        kept among its engine files as role "adapter"."""
        return stored_adapters(self.engine_files)

    def title(self) -> str:
        return self.name or self.prompt or (Path(self.init_source).name if self.init_source
                                            else f"take {self.id}")

    def request(self, init_audio: AudioInput = None) -> GenerationRequest:
        """Every setting that made this take, with the same seed, as a new request.

        For audio-to-audio and inpainting takes pass the init audio (see
        ClipLibrary.regeneration_request, which finds it); without it the request keeps the
        noise level and spans but does not validate.
        """
        if self.is_imported:
            raise LibraryError(f"Take #{self.id} is imported audio, not a generation, so it has "
                               "no settings to restore; use it as init audio instead.")
        return GenerationRequest(
            prompt=self.prompt, negative_prompt=self.negative_prompt, model=self.model,
            decoder=self.decoder or None, precision=self.precision or None,
            seconds=self.seconds, steps=self.steps, seed=self.seed, cfg=self.cfg, apg=self.apg,
            init_audio=init_audio, init_noise_level=self.init_noise_level,
            inpaint_spans=[tuple(span) for span in self.inpaint_spans],
            limiter_ceiling=self.limiter_ceiling, backend=self.requested_backend or "auto",
            codec_tier=self._codec_tier(),
            # Found by SHA-256; a missing one is a sentence naming it (engines.adapter_restore).
            adapters=restored_adapters(self.adapters),
        )

    def _codec_tier(self) -> str | None:
        """The codec tier the take was decoded with, so a regeneration sounds the same; None
        (the default rule) for takes from before tiers were kept, or with a tier that does not
        pair with the decoder."""
        try:
            decoder = paired_decoder(self.model, self.decoder or None)
        except RequestError:
            return None
        return self.decoder_tier if self.decoder_tier in codec_tiers(decoder) else None

    def sidecar(self, out: Path | None = None) -> dict:
        """Provenance in the shape of engines.provenance's sidecar, plus the library's fields.

        `out` is where the audio copy lies (default: the library file); a relative path is kept
        relative (a zip entry)."""
        out = self.audio_path if out is None else Path(out)
        return {
            "app": APP_NAME,
            "created": self.created,
            "library_id": self.id,
            "output": {"path": str(out.resolve() if out.is_absolute() else out),
                       "format": self.file_format,
                       "sample_rate": self.sample_rate, "samples": self.samples,
                       "channels": CHANNELS,
                       "seconds": round(self.samples / max(self.sample_rate, 1), 6)},
            "request": {
                "prompt": self.prompt, "negative_prompt": self.negative_prompt,
                "model": self.model, "model_label": _model_label(self.model),
                "decoder": self.decoder, "precision": self.precision, "seconds": self.seconds,
                "steps": self.steps, "seed": self.seed, "seed_was_random": self.seed_was_random,
                "cfg": self.cfg, "apg": self.apg,
                "init_audio": {"path": self.init_source, "library_id": self.parent_id}
                if (self.init_source or self.parent_id is not None) else None,
                "init_noise_level": self.init_noise_level,
                "inpaint_spans": [list(span) for span in self.inpaint_spans],
                "limiter_ceiling": self.limiter_ceiling, "mode": self.mode,
                "backend": self.requested_backend,
                **({"adapters": [{k: v for k, v in e.items() if k not in ("role", "size")}
                                 for e in self.adapters]} if self.adapters else {}),
            },
            "seed": self.seed,
            "backend": self.backend,
            "decoder_tier": self.decoder_tier,
            **({"tiers": tier_entry(self.precision, self.decoder, self.decoder_tier)}
               if self.decoder_tier else {}),
            "model_files": self.engine_files,
            "timings_ms": self.timings_ms,
            "warnings": self.warnings,
            "library": {"id": self.id, "name": self.name, "parent_id": self.parent_id,
                        "rating": self.rating, "favourite": self.favourite, "tags": self.tags,
                        "notes": self.notes, "content_sha256": self.content_sha256,
                        "labels": {k: v for k, v in self.labels.items() if v} or None,
                        "variation": self.variation, "variations": self.variations},
            "finishing": self.finishing,
            "quality": list(self.quality),
        }


def _model_label(key: str) -> str:
    if key == IMPORTED:
        return "Imported audio"
    try:
        return get_model_set(key).label
    except StudioError:
        return key


def _json_list(text: str | None) -> list:
    if not text or text == "[]":  # most columns of most rows: skip the parser (a page of
        return []                 # 500 records is built while the user types)
    try:
        value = json.loads(text) if text else []
    except (ValueError, TypeError):  # a row salvaged from a damaged file: show what is left
        return []
    return value if isinstance(value, list) else []


def _json_dict(text: str | None) -> dict:
    if not text or text == "{}":
        return {}
    try:
        value = json.loads(text) if text else {}
    except (ValueError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def _json_object(text: str | None) -> dict | None:
    """A stored JSON object, or None for NULL and for anything that is not one (damage)."""
    value = _json_dict(text)
    return value or None


def _flag_codes(text: str | None) -> list[str]:
    if not text or text == "[]":
        return []
    return [code for code in _json_list(text) if isinstance(code, str)]


def _spans(text: str | None) -> list[tuple[float, float]]:
    spans = []
    for span in _json_list(text):
        try:
            start, end = span
            spans.append((float(start), float(end)))
        except (ValueError, TypeError):
            continue
    return spans


def take_id_of(value: object) -> int:
    """A take id as given by a caller (int, numpy integer or digits) as an int; LibraryError
    for anything else. Ids outside SQLite's range are returned as they are: no take has them."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value.strip())

    shown = printable(repr(value))
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    raise LibraryError(f"{shown} is not a take id; give a whole number, as `library list` "
                       "shows them.")


def normalize_tags(tags: Iterable[str] | str) -> list[str]:
    """Tags as the library stores them: trimmed, single-spaced, no empties or repeats (any case);
    a string is split at commas."""
    if isinstance(tags, str):
        tags = tags.split(",")
    if not isinstance(tags, Iterable):
        raise LibraryError(f"Tags must be words or short phrases, not {type(tags).__name__}; "
                           "give a list, or one text with commas between the tags.")
    result: list[str] = []
    seen: set[str] = set()
    for tag in tags:
        if not isinstance(tag, str):
            raise LibraryError(f"Tag {tag!r} is not text; give tags as words or short phrases.")
        clean = " ".join(storable(tag).split())
        if clean and clean.lower() not in seen:
            seen.add(clean.lower())
            result.append(clean)
    return result


MAX_LABEL_CHARS = 256  # as engines.delivery.labels: what a bext Description holds


def label_columns(labels: object) -> dict[str, str]:
    """The label columns to set for `labels` (a mapping, or an object with the attributes of
    LABEL_COLUMNS, such as engines.delivery.delivery_take.Labels): only the labels it has, as text
    on one line ('' clears one). LibraryError (one sentence) for a label that is not text or
    is too long to be one."""
    if isinstance(labels, dict):
        given = {key: labels[key] for key in LABEL_COLUMNS if key in labels}
    else:
        given = {key: getattr(labels, key) for key in LABEL_COLUMNS if hasattr(labels, key)}
    columns = {}
    for key, value in given.items():
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise LibraryError(f"The {key.replace('_', ' ')} label must be text, not "
                               f"{type(value).__name__}.")
        clean = " ".join(storable(value).split())
        if len(clean) > MAX_LABEL_CHARS:
            raise LibraryError(f"The {key.replace('_', ' ')} label is {len(clean)} characters "
                               f"long; give at most {MAX_LABEL_CHARS}.")
        if looks_blank(clean):
            raise LibraryError(blank_label_sentence(f"The {key.replace('_', ' ')} label",
                                                    clean))
        columns[LABEL_COLUMNS[key]] = clean
    return columns


def record_from_row(row: sqlite3.Row, audio_dir: Path, trash_dir: Path) -> TakeRecord:
    """A TakeRecord from a `takes` row; the audio lies in trash/ while the take is deleted."""
    if isinstance(row, sqlite3.Row):
        # A Row finds a column by name by comparing it with each column's in turn: once into
        # a dict is about four times quicker for the ~45 lookups below (a page of 500 rows
        # is built while the user types).
        row = dict(zip(row.keys(), row, strict=True))  # type: ignore[assignment]
    folder = trash_dir if row["deleted"] else audio_dir
    return TakeRecord(
        id=row["id"], created=row["created"], name=row["name"], prompt=row["prompt"],
        negative_prompt=row["negative_prompt"], model=row["model"], decoder=row["decoder"],
        precision=row["precision"], seconds=row["seconds"], steps=row["steps"],
        seed=row["seed"], cfg=row["cfg"], apg=row["apg"],
        init_noise_level=row["init_noise_level"],
        inpaint_spans=_spans(row["inpaint_spans"]),
        limiter_ceiling=row["limiter_ceiling"], mode=row["mode"], backend=row["backend"],
        timings_ms=_json_dict(row["timings_ms"]),
        engine_files=_json_list(row["engine_files"]), audio_path=folder / row["audio_file"],
        parent_id=row["parent_id"], init_source=row["init_source"], rating=row["rating"],
        favourite=bool(row["favourite"]), tags=_json_list(row["tags"]), notes=row["notes"],
        sample_rate=row["sample_rate"], samples=row["samples"], deleted=bool(row["deleted"]),
        seed_was_random=bool(row["seed_was_random"]),
        requested_backend=row["requested_backend"], decoder_tier=row["decoder_tier"],
        warnings=_json_list(row["warnings"]), content_sha256=row["content_sha256"],
        finishing=_json_object(row["finishing"]), quality=_flag_codes(row["quality"]),
        labels={key: row[column] or "" for key, column in LABEL_COLUMNS.items()},
        variation=row["variation"], variations=row["variations"],
        source_root=_source_root(row),
    )


def _source_root(row: sqlite3.Row) -> str | None:
    try:
        return row["source_root"]
    except (IndexError, KeyError):  # a library of schema 4 or older, opened read-only
        return None
