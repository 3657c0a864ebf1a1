"""The JSON sidecar beside every delivered file. It describes the file it sits beside - rate,
channels, frames, format and sample encoding read back from the file itself, the finishing
chain applied, the loudness and true peak of those samples - and, beside that, the take's
provenance (library id, seed, request, engine files, codec tier)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import soundfile as sf

from engines.audio_io.atomic import create_temp_beside, fsync_file, release, remove_quietly
from engines.delivery.delivery_take import APP_NAME, DeliveryTake, now_iso
from engines.delivery.render import Rendering
from engines.error_sentences import path_text
from engines.finish.finished_take import strict_json

MAX_SIDECAR_BYTES = 4 << 20  # a sidecar is a page of JSON; a bigger one is not one we wrote


def sidecar_path(out: str | os.PathLike[str]) -> Path:
    """`clip.wav` -> `clip.json`, next to the audio."""
    return Path(out).with_suffix(".json")


def read_sidecar(path: Path) -> dict | None:
    """The JSON object in the sidecar at `path`, or None when it is missing, unreadable, too
    large, nested too deep or not an object: a folder someone else filled is read without
    trusting it (a rerun renders such a take again, a publish refuses its file)."""
    try:
        if path.stat().st_size > MAX_SIDECAR_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def file_facts(audio_file: Path, shown_path: str, rendering: Rendering) -> dict[str, Any]:
    """What the file at `audio_file` is, read back from it (not from what was asked for)."""
    info = sf.info(os.fsencode(audio_file))
    return {"path": shown_path, "format": rendering.fmt, "container": info.format,
            "subtype": info.subtype, "sample_rate": int(info.samplerate),
            "channels": int(info.channels), "samples": int(info.frames),
            "seconds": round(info.frames / info.samplerate, 6),
            "loop_points": list(rendering.loop_points) if rendering.loop_points else None}


def build_sidecar(take: DeliveryTake, rendering: Rendering, audio_file: Path,
                  shown_path: str | os.PathLike[str]) -> dict[str, Any]:
    """The sidecar for the file written at `audio_file` (maybe still its temporary), to be
    known as `shown_path` (absolute on disk, relative inside a zip)."""
    shown = Path(shown_path)
    where = path_text(shown.resolve() if shown.is_absolute() else shown)
    labels = {key: value for key, value in vars(take.labels).items() if value}
    return {
        "app": APP_NAME,
        "created": take.created or take.provenance.get("created"),
        "delivered": now_iso(),
        "library_id": take.library_id,
        "output": file_facts(audio_file, where, rendering),
        "measured": {"loudness_lufs": rendering.loudness_lufs,
                     "true_peak_dbtp": rendering.true_peak_dbtp},
        "finishing": rendering.finishing,
        "labels": labels or None,
        **{key: value for key, value in take.provenance.items()
           if key not in ("app", "created", "library_id", "output", "finishing")},
    }


def write_json_temp(path: Path, payload: dict) -> Path:
    """`payload` as JSON in a complete, synced temporary file beside `path`, created with the
    permissions the umask gives (like the audio beside it). The caller moves it into place with
    os.replace (then `atomic.release`), or removes it with `atomic.remove_quietly`."""
    temp = create_temp_beside(path, ".json")
    try:
        with open(temp, "w", encoding="utf-8") as handle:
            # strict JSON: a silent take measures -inf LUFS, which jq and browsers refuse
            json.dump(strict_json(payload), handle, indent=2, ensure_ascii=False)
            handle.write("\n")
        fsync_file(temp)
    except BaseException:
        remove_quietly(temp)
        raise
    return temp


def write_json_atomic(path: Path, payload: dict) -> None:
    temp = write_json_temp(path, payload)
    try:
        os.replace(temp, path)
    except BaseException:
        remove_quietly(temp)
        raise
    release(temp)
