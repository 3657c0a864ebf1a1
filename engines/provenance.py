"""Provenance of a take: how it was made (request, seed, backend, engine files, timings,
tiers), the part of every sidecar (engines.delivery.sidecar) that does not depend on the file."""

from __future__ import annotations

import datetime as _dt
import hashlib
from pathlib import Path

from engines.catalog import get_model_set
from engines.catalog.tiers import CODEC_INFO, PRECISION_INFO
from engines.error_sentences import path_text

# The key under which a take's provenance, its sidecar and its embedded note keep the codec tier
# that made the audio (a file format: old files carry it). The request's own `codec_tier` beside
# it is what was asked for (None: the default rule); this is what ran.
CODEC_TIER_KEY = "decoder_tier"


def codec_tier_of(entry: dict) -> str:
    """The codec tier that made a take, read from its provenance, sidecar or embedded note
    ("" where none is recorded)."""
    return str(entry.get(CODEC_TIER_KEY) or "")

_HASH_CHUNK = 1 << 20


def _file_entry(role: str, path: Path | None) -> dict | None:
    if path is None:
        return None
    try:
        size = path.stat().st_size
    except OSError:
        size = None
    return {"role": role, "path": path_text(path), "size": size}


def take_provenance(result, init_audio: Path | str | dict | None = None) -> dict:
    """Every parameter of a take. `init_audio`: the init file, or its `init_entry` taken
    earlier (before the output could have replaced it)."""
    req = result.request
    files = result.files
    entries = [_file_entry("text_encoder", files.text_encoder),
               _file_entry("tokenizer", files.tokenizer), _file_entry("dit", files.dit),
               _file_entry("decoder", files.decoder)]
    if req.mode != "t2a":
        entries.append(_file_entry("encoder", files.encoder))
    init = None
    if isinstance(init_audio, dict):
        init = init_audio
    elif init_audio is not None and Path(init_audio).is_file():
        init = init_entry(Path(init_audio))
    return {
        "app": "SA3 Studio",
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "request": {
            "prompt": req.prompt, "negative_prompt": req.negative_prompt, "model": req.model,
            "model_label": get_model_set(req.model).label, "decoder": req.decoder,
            "precision": req.precision, "seconds": req.seconds, "steps": req.steps,
            "seed": req.seed, "seed_was_random": req.seed_was_random, "cfg": req.cfg,
            "apg": req.apg, "init_audio": init, "init_noise_level": req.init_noise_level,
            "inpaint_spans": [list(s) for s in req.inpaint_spans],
            "limiter_ceiling": req.limiter_ceiling, "mode": req.mode,
            "codec_tier": getattr(req, "codec_tier", None),  # as asked; None: default rule
            **adapters_field(req),
        },
        "seed": result.seed,
        "backend": result.backend,
        CODEC_TIER_KEY: files.codec_tier,
        "tiers": tier_entry(req.precision, req.decoder, files.codec_tier),
        "model_files": [e for e in entries if e is not None],
        "timings_ms": {k: round(v, 3) for k, v in result.timings_ms.items()},
        "warnings": result.warnings,
        **_decoded_from(getattr(result, "details", None) or {}),
    }


def adapter_entries(req) -> list[dict]:
    """Each adapter a validated request ran with, as every record of a take keeps it (sidecar,
    embedded note, library row, team entry): what file it was (name and SHA-256, so the same
    adapter is found again wherever it lies), what it is (variant, rank), how strong it was,
    and where it lay when the take was made."""
    entries = []
    for choice, info in zip(getattr(req, "adapters", ()), getattr(req, "adapter_infos", ()),
                            strict=False):
        entries.append({"file_name": info.file_name, "sha256": info.sha256,
                        "variant": info.variant, "rank": int(info.rank),
                        "strength": float(choice.strength), "enabled": bool(choice.enabled),
                        "path": path_text(choice.path)})
    return entries


NOTE_ADAPTER_KEYS = ("file_name", "sha256", "variant", "rank", "strength", "enabled")


def note_adapters(entries: object) -> list[dict]:
    """The adapters as a file's embedded note carries them: the entries without the path
    (where a file lay on the maker's machine means nothing beside the audio)."""
    if not isinstance(entries, list):
        return []
    return [{key: entry.get(key) for key in NOTE_ADAPTER_KEYS if key in entry}
            for entry in entries if isinstance(entry, dict)]


def library_adapter_files(req) -> list[dict]:
    """The adapters as the library keeps them: engine files of role "adapter" (the take's
    engine_files JSON, so the schema needs no new column), with their size for `library show`."""
    files = []
    for entry in adapter_entries(req):
        try:
            size = Path(entry["path"]).stat().st_size
        except OSError:
            size = None
        files.append({"role": "adapter", "path": entry["path"], "size": size, **entry})
    return files


def adapters_field(req) -> dict:
    """{"adapters": [...]} for a request with adapters, else nothing: a take made without any
    keeps the provenance it always had."""
    entries = adapter_entries(req)
    return {"adapters": entries} if entries else {}


def _decoded_from(details: dict) -> dict:
    """A decode-only comparison take names the take's tier it was decoded again from."""
    return {"decoded_from": details.get("decoded_from")} if details.get("decode_only") else {}


def tier_entry(precision: str, decoder: str, tier: str) -> dict:
    """The DiT precision and codec tier of a take with their speed and quality in words
    (engines.catalog.tiers), so a sidecar explains what was traded without the app at hand."""
    dit = PRECISION_INFO.get(precision)
    codec = CODEC_INFO.get((decoder, tier))
    return {"precision": precision, "precision_summary": dit.summary if dit else None,
            "codec_tier": tier, "codec_summary": codec.summary if codec else None}


def init_entry(path: Path) -> dict | None:
    """The init file as the sidecar records it: where it was and its SHA-256 (read in chunks:
    init files can be long). Taken before anything is written, so an output that replaces its
    own init file still records the input's hash. None when it cannot be read."""
    digest = hashlib.sha256()
    if not path.is_file():  # a pipe or device would block or never end
        return None
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(_HASH_CHUNK):
                digest.update(chunk)
        where = path.resolve()
    except OSError:
        return None
    return {"path": path_text(where), "sha256": digest.hexdigest()}
