"""A take as one JSON object: what `library show ID --json` prints, and `library list --json`
prints an array of, for scripts.

The shape (keys are never renamed or dropped; new ones may be added):
    id          int
    name        str, "" when the take has none
    created     str, ISO 8601 in UTC
    mode        "t2a" | "a2a" (audio-to-audio) | "inpaint" | "imported" (the user's own audio)
    parent      int | null: the take whose audio this one was made from
    model       str: the model set ("imported" for imported audio)
    prompt      str, "" for imported audio
    seconds     float: the length asked for (imported: the length of the audio)
    seed        int | null (null for imported audio)
    rating      int, 0 to 5
    favourite   bool
    tags        [str]
    notes       str
    deleted     bool: the take is in the trash (`library restore` brings it back)
    files       {"audio": {"path": absolute str, "format": "wav16" | "flac" | "wav",
                           "sample_rate": int, "samples": int, "missing": bool}}; `library
                show` adds "damaged": bool and "problem": str | null after reading the file
                against the hash saved with the take
    finishing   object | null: the stored finishing chain ("chain", "loop", "report",
                "loop_points"), null when the take has none
    quality     [str]: quality flag codes (silent, clipping, dc-offset, non-finite,
                trailing-silence), [] when clean or not checked yet
    labels      {"catid", "category", "subcategory", "fx_name", "creator", "source"}: the UCS
                labels the take keeps (str each, "" when not given; category and subcategory
                come from the user's UCS list)
    source      str: "Generated", "Imported audio" (copied into the library) or the folder a
                sound file referenced in place was imported from (`library import`)
    variation   int | null: its number in the set of variations it was made in, null when not
                kept with it (`library show` then prints the one its family gives, and
                "variations": the set's size)
    adapters    [{"file_name", "sha256", "variant", "rank", "strength", "enabled", "path",
                "size"}]: the LoRA/DoRA adapters it was made with, in stack order ([] for none)
    provenance  object: everything that made the take, as the JSON sidecar written beside an
                exported copy (request, backend, engine files with hashes, timings, warnings)

Text is kept as the library holds it; JSON escapes control characters itself.
"""

from __future__ import annotations

from typing import Any

from engines.store.records import TakeRecord


def take_json(record: TakeRecord) -> dict[str, Any]:
    """The take in the shape above (plain JSON types only)."""
    return {
        "id": record.id,
        "name": record.name,
        "created": record.created,
        "mode": record.mode,
        "parent": record.parent_id,
        "model": record.model,
        "prompt": record.prompt,
        "seconds": record.seconds,
        "seed": None if record.is_imported else record.seed,
        "rating": record.rating,
        "favourite": record.favourite,
        "tags": list(record.tags),
        "notes": record.notes,
        "deleted": record.deleted,
        "files": {"audio": {"path": str(record.audio_path), "format": record.file_format,
                            "sample_rate": record.sample_rate, "samples": record.samples,
                            "missing": record.missing}},
        "finishing": record.finishing,
        "quality": list(record.quality),
        "labels": dict(record.labels),
        "source": record.source,
        "variation": record.variation,
        "variations": record.variations,
        "provenance": record.sidecar(),
        "adapters": [{key: value for key, value in entry.items() if key != "role"}
                     for entry in record.adapters],
    }
