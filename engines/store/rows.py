"""What the library records about a take: its row in the takes table, and the note embedded in
its audio file (so that a take can be rebuilt from the file alone; see repair.py)."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engines.adapter_restore import stored_adapters
from engines.audio_io import float_from_pcm16
from engines.constants import SAMPLE_RATE
from engines.finish.quality import quality_flags
from engines.provenance import note_adapters
from engines.store import schema
from engines.store.files import content_sha256
from engines.store.records import IMPORTED, TakeRecord, label_columns
from engines.text import storable

if TYPE_CHECKING:
    from engines.generation_result import GenerationResult

# The row's settings the embedded note repeats (besides library_id, and inpaint_spans if any).
_NOTE_KEYS = ("created", "prompt", "negative_prompt", "seed", "model", "decoder", "precision",
              "decoder_tier", "steps", "cfg", "apg", "seconds", "mode", "init_noise_level",
              "limiter_ceiling", "backend", "parent_id")


def created_now() -> str:
    """A take's `created` column for a take kept now: ISO 8601 in UTC, to the millisecond."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


def result_row(result: GenerationResult, pcm: np.ndarray, engine_files: list[dict], *,
               created: str, parent_id: int | None, name: str,
               init_source: str | None) -> dict:
    """The row (without id and audio file) of a generated take whose audio is `pcm`."""
    req = result.request
    name = " ".join(storable(str(name)).split())
    init_source = storable(str(init_source)) if init_source else None
    prompt = storable(req.prompt)
    return {
        "created": created, "name": name, "prompt": prompt,
        "negative_prompt": storable(req.negative_prompt), "model": req.model,
        "decoder": req.decoder, "precision": req.precision, "seconds": float(req.seconds),
        "steps": int(req.steps), "seed": int(result.seed),
        "seed_was_random": int(bool(req.seed_was_random)), "cfg": float(req.cfg),
        "apg": float(req.apg), "init_noise_level": req.init_noise_level,
        "inpaint_spans": json.dumps([list(span) for span in req.inpaint_spans]),
        "limiter_ceiling": float(req.limiter_ceiling), "mode": req.mode,
        "backend": result.backend, "requested_backend": req.backend,
        "decoder_tier": getattr(result.files, "codec_tier", "") or "",
        "timings_ms": json.dumps({k: round(float(v), 3)
                                  for k, v in result.timings_ms.items()}),
        "engine_files": json.dumps(engine_files),
        "warnings": json.dumps([str(w) for w in result.warnings]),
        "content_sha256": content_sha256(pcm), "parent_id": parent_id,
        "init_source": init_source, "sample_rate": int(result.sample_rate),
        "samples": int(pcm.shape[0]),
        "search_text": schema.search_text(prompt, name, [], "", init_source),
        # Computed on the worker with the take (Generator.generate); a result made some other
        # way has none, and is kept as checked and clean like the worker's would be.
        "quality": json.dumps(flag_codes(getattr(result, "quality", None))),
    }


def result_row_extras(labels: object, variation: int | None,
                      variations: int | None) -> dict:
    """The columns a generated take's row adds when its maker knows them: the UCS labels
    it was given (records.label_columns), and its place in the set of variations it was made
    in (only when 1 <= variation <= variations)."""
    row = label_columns(labels) if labels is not None else {}
    if isinstance(variation, int) and isinstance(variations, int) \
            and 1 <= variation <= variations:
        row.update(variation=int(variation), variations=int(variations))
    return row


def imported_row(audio: np.ndarray, digest: str, source: str, name: str, *, created: str,
                 parent_id: int | None) -> dict:
    """The row (without id and audio file) of the user's own audio, kept as it came. A file
    name that is not valid UTF-8 is kept with \\xff escapes (so regenerating from it needs
    the file chosen again)."""
    source = storable(str(source))
    name = " ".join(storable(str(name)).split()) or Path(source).name
    return {
        "created": created, "name": name, "prompt": "", "model": IMPORTED, "mode": IMPORTED,
        "seconds": audio.shape[0] / SAMPLE_RATE, "steps": 0, "seed": 0, "cfg": 0.0,
        "apg": 0.0, "limiter_ceiling": 0.0, "backend": "", "requested_backend": "",
        "content_sha256": digest, "init_source": source, "sample_rate": SAMPLE_RATE,
        "samples": int(audio.shape[0]), "parent_id": parent_id,
        "search_text": schema.search_text("", name, [], "", source),
        "quality": json.dumps(audio_flags(audio)),
    }


def flag_codes(codes: object) -> list[str]:
    """Quality flag codes as the library stores them: text only, in the order given."""
    if not isinstance(codes, (list, tuple)):
        return []
    return [str(code) for code in codes if isinstance(code, str)]


def audio_flags(audio: np.ndarray) -> list[str]:
    """The quality flags of a take's stored samples (int16, or float for imported audio)."""
    if audio.dtype == np.int16:
        audio = float_from_pcm16(audio)
    return quality_flags(audio)


def note_for_row(row: dict, take_id: int) -> dict:
    """The note embedded in a new take's audio file."""
    note = {**{k: row.get(k) for k in _NOTE_KEYS}, "library_id": take_id}
    if row.get("inpaint_spans", "[]") != "[]":
        note["inpaint_spans"] = json.loads(row["inpaint_spans"])
    adapters = note_adapters(stored_adapters(json.loads(row.get("engine_files") or "[]")))
    if adapters:  # so a take rebuilt from its file (repair.py) still names its adapters
        note["adapters"] = adapters
    return note


def note_for_regenerated(take_id: int, record: TakeRecord, backend: str,
                         codec_tier: str | None = None) -> dict:
    """The note embedded in the new audio file of a regenerated take (same row, new file);
    `codec_tier`: the codec tier the regeneration used (default: the record's)."""
    return {"library_id": take_id, "created": record.created, "prompt": record.prompt,
            "negative_prompt": record.negative_prompt, "seed": record.seed,
            "model": record.model, "decoder": record.decoder,
            "precision": record.precision,
            "decoder_tier": (codec_tier or record.decoder_tier) or None,
            "steps": record.steps, "cfg": record.cfg,
            "apg": record.apg, "seconds": record.seconds, "mode": record.mode,
            "init_noise_level": record.init_noise_level,
            "limiter_ceiling": record.limiter_ceiling, "backend": backend,
            "parent_id": record.parent_id,
            "inpaint_spans": [list(s) for s in record.inpaint_spans] or None}
