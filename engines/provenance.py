"""Provenance of a take: the JSON sidecar written next to every exported audio file."""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import tempfile
from pathlib import Path


def sidecar_path(out: Path) -> Path:
    """`clip.wav` -> `clip.json`, next to the audio."""
    return Path(out).with_suffix(".json")


def _file_entry(role: str, path: Path | None) -> dict | None:
    if path is None:
        return None
    try:
        size = path.stat().st_size
    except OSError:
        size = None
    return {"role": role, "path": str(path), "size": size}


def build_sidecar(result, out: Path, fmt: str, init_audio: Path | str | None = None) -> dict:
    from engines.catalog import get_model_set

    req = result.request
    files = result.files
    entries = [_file_entry("text_encoder", files.text_encoder),
               _file_entry("tokenizer", files.tokenizer), _file_entry("dit", files.dit),
               _file_entry("decoder", files.decoder)]
    if req.mode != "t2a":
        entries.append(_file_entry("encoder", files.encoder))
    init = None
    if init_audio is not None and Path(init_audio).is_file():
        init_audio = Path(init_audio)
        digest = hashlib.sha256(init_audio.read_bytes()).hexdigest()
        init = {"path": str(init_audio.resolve()), "sha256": digest}
    return {
        "app": "SA3 Studio",
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "output": {"path": str(out.resolve()), "format": fmt, "sample_rate": result.sample_rate,
                   "samples": int(result.pcm.shape[0]), "channels": 2,
                   "seconds": round(result.seconds, 6)},
        "request": {
            "prompt": req.prompt, "negative_prompt": req.negative_prompt, "model": req.model,
            "model_label": get_model_set(req.model).label, "decoder": req.decoder,
            "precision": req.precision, "seconds": req.seconds, "steps": req.steps,
            "seed": req.seed, "seed_was_random": req.seed_was_random, "cfg": req.cfg,
            "apg": req.apg, "init_audio": init, "init_noise_level": req.init_noise_level,
            "inpaint_spans": [list(s) for s in req.inpaint_spans],
            "limiter_ceiling": req.limiter_ceiling, "mode": req.mode,
        },
        "seed": result.seed,
        "backend": result.backend,
        "decoder_tier": files.decoder_tier,
        "model_files": [e for e in entries if e is not None],
        "timings_ms": {k: round(v, 3) for k, v in result.timings_ms.items()},
        "warnings": result.warnings,
    }


def write_json_atomic(path: Path, payload: dict) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".partial.json", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, indent=2, ensure_ascii=False)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


