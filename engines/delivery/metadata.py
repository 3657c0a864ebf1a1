"""The one metadata builder: what a delivered file says about itself, in every place the
tools of the trade look.

- INFO title and the app's JSON note (engines.delivery.note): how the take was made.
- BWF `bext` (EBU Tech 3285 v2): Description (the prompt), Originator, OriginatorReference
  (library id or take hash), origination date and time (when the take was made, so the same
  take gives the same bytes whenever it is exported), loudness and true peak of the file's
  samples, and CodingHistory lines for the model and every finishing step.
- iXML USER fields and the Sony ASWG extension (engines.delivery.ixml), which Soundminer,
  BaseHead and REAPER's Media Explorer read.
- FLAC and Ogg: the same fields as Vorbis comments.
Loop points (smpl and cue, or LOOPSTART/LOOPLENGTH) are added by the writer.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from engines.audio_io.formats import FORMATS
from engines.delivery.delivery_take import APP_NAME, DeliveryTake
from engines.delivery.ixml import ixml_document
from engines.delivery.note import build_comment, title_for
from engines.delivery.render import Rendering
from engines.delivery.riff import bext_payload
from engines.delivery.writer import FileTags
from engines.finish.loudness import to_db
from engines.provenance import codec_tier_of, note_adapters

_NOTE_REQUEST_KEYS = ("negative_prompt", "model", "decoder", "precision", "steps", "cfg",
                      "apg", "seconds", "mode", "init_noise_level", "inpaint_spans",
                      "limiter_ceiling")
_BITS = {"PCM_16": 16, "PCM_24": 24, "FLOAT": 32}


def note_meta(take: DeliveryTake, rendering: Rendering) -> dict[str, Any]:
    """The fields of the JSON note, the same whichever way the take leaves."""
    request = take.request
    meta: dict[str, Any] = {key: request.get(key) for key in _NOTE_REQUEST_KEYS}
    if not meta.get("inpaint_spans"):
        meta["inpaint_spans"] = None
    library = take.provenance.get("library") or {}
    meta.update(library_id=take.library_id, parent_id=library.get("parent_id"),
                created=take.created or None, prompt=take.prompt or None, seed=take.seed,
                decoder_tier=codec_tier_of(take.provenance) or None,
                backend=take.provenance.get("backend"))
    meta["adapters"] = note_adapters(request.get("adapters")) or None
    if rendering.finishing is not None and take.finished is not None:
        meta["finish"] = take.finished.note()
    return meta


def file_tags(take: DeliveryTake, rendering: Rendering) -> FileTags:
    note = build_comment(note_meta(take, rendering))
    title = title_for(take.name, take.prompt)
    container = FORMATS[rendering.fmt].format
    if container == "WAV":
        chunks = ((b"bext", bext_payload(**bext_fields(take, rendering))),
                  (b"iXML", ixml_document(user_fields(take), aswg_fields(take, rendering))))
        return FileTags(title=title, comment=note, wav_chunks=chunks)
    return FileTags(title=title, comment=note, vorbis=vorbis_values(take, rendering))


def origination(take: DeliveryTake) -> _dt.datetime | None:
    """When the library kept the take (UTC); None when no row holds it (see take.created)."""
    try:
        when = _dt.datetime.fromisoformat(take.created)
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=_dt.UTC)


def coding_history(take: DeliveryTake, rendering: Rendering) -> list[str]:
    """EBU R 98-style lines: where the audio came from, then each finishing step, each ending
    in the format the file now has."""
    request = take.request
    source = (f"T={APP_NAME} {request.get('model')} model, seed {take.seed}"
              if take.generated else f"T={APP_NAME} import")
    lines = [f"A=PCM,F=44100,W=16,M=stereo,{source}"]
    if rendering.finishing is not None:
        report = rendering.finishing.get("report") or {}
        spec = FORMATS[rendering.fmt]
        bits = _BITS.get(spec.subtype)
        mode = "mono" if rendering.channels == 1 else "stereo"
        steps = ", ".join(report.get("done") or []) or "format"
        loop = rendering.finishing.get("loop")
        if loop:
            steps += f", loop by {loop.get('method')}"
        coding = "A=PCM" if bits else f"A={spec.subtype}"
        width = f",W={bits}" if bits else ""
        lines.append(f"{coding},F={rendering.rate}{width},M={mode},T={APP_NAME} finishing: "
                     f"{steps}")
    return lines


def bext_fields(take: DeliveryTake, rendering: Rendering) -> dict[str, Any]:
    return {"description": take.prompt or take.name, "originator": APP_NAME,
            "originator_reference": take.reference(), "origination": origination(take),
            "coding_history": coding_history(take, rendering),
            "loudness_value": rendering.loudness_lufs, "max_true_peak": rendering.true_peak_dbtp}


def user_fields(take: DeliveryTake) -> dict[str, str]:
    labels = take.labels
    return {"DESCRIPTION": take.prompt, "CATEGORY": labels.category,
            "SUBCATEGORY": labels.subcategory, "CATID": labels.catid,
            "FXNAME": labels.fx_name or take.name, "DESIGNER": labels.designer,
            "LIBRARY": labels.library, "NOTES": labels.notes,
            "ORIGINATOR": APP_NAME, "ORIGINATORREFERENCE": take.reference()}


def aswg_fields(take: DeliveryTake, rendering: Rendering) -> dict[str, Any]:
    labels = take.labels
    fields: dict[str, Any] = {
        "isGenerated": take.generated, "isLoop": rendering.loop_points is not None,
        # ASWG maxPeak is the highest sample in dBFS (not the true peak, which bext carries)
        "loudness": rendering.loudness_lufs, "maxPeak": _sample_peak_db(rendering),
        "catId": labels.catid, "category": labels.category, "subCategory": labels.subcategory,
        "fxName": labels.fx_name or take.name, "library": labels.library,
        "creatorId": labels.creator, "sourceId": labels.source,
        "notes": labels.notes, "originator": labels.designer,
    }
    return {key: value for key, value in fields.items() if value not in (None, "")}


def vorbis_values(take: DeliveryTake, rendering: Rendering) -> dict[str, Any]:
    labels = take.labels
    return {"description": take.prompt, "category": labels.category,
            "subcategory": labels.subcategory, "catid": labels.catid,
            "fx_name": labels.fx_name or take.name, "designer": labels.designer,
            "library": labels.library, "notes": labels.notes, "originator": APP_NAME,
            "originator_reference": take.reference(),
            "date": when.date().isoformat() if (when := origination(take)) else None,
            "loudness": rendering.loudness_lufs, "true_peak": rendering.true_peak_dbtp,
            "is_loop": rendering.loop_points is not None, "is_generated": take.generated}


def _sample_peak_db(rendering: Rendering) -> float | None:
    import numpy as np

    audio = rendering.audio
    peak = float(np.max(np.abs(audio))) if audio.size else 0.0
    if audio.dtype == np.int16:
        peak /= 32767.0
    value = to_db(peak)
    return None if value is None else round(value, 2)
