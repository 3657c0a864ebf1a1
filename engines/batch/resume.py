"""Which takes an earlier run made can be trusted on a rerun: only those whose file is there
whole and is the take the manifest describes.

A file that merely exists is not enough: a copy cut short (0 bytes, a truncated transfer), a
file replaced by another, or a manifest edited by hand would otherwise be skipped, and the
rerun would record a seed or parameters its file was not made with. So a take counts as done
when its audio opens with the frames (and bytes) the manifest recorded, and its sidecar names
the seed and the parameters hash of the manifest's entry. Anything else is rendered again.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import soundfile as sf

from engines.batch.plan import DONE
from engines.delivery.sidecar import read_sidecar

log = logging.getLogger(__name__)


def verified(out_dir: Path, earlier: list[dict]) -> tuple[list[dict], int]:
    """`earlier` with every done entry that fails the checks marked pending (its seed is kept,
    so a random seed is drawn again only where the sidecar never recorded one), and how many
    were marked."""
    checked, doubtful = [], 0
    for entry in earlier:
        if entry.get("status") in DONE:
            why = _doubt(out_dir, entry)
            if why is not None:
                log.info("not resuming %s: %s", entry.get("file"), why)
                entry = {**entry, "status": "pending"}
                doubtful += 1
        checked.append(entry)
    return checked, doubtful


def file_facts(path: Path) -> dict[str, int]:
    """What a rerun (and `team publish --batch`) checks a written file against: its size
    and audio frames."""
    with open(path, "rb") as handle:
        frames = sf.info(handle).frames
    return {"frames": int(frames), "bytes": path.stat().st_size}


def _doubt(out_dir: Path, entry: dict) -> str | None:
    """Why the entry's take cannot be trusted, or None when it checks out."""
    name = entry.get("file")
    if not isinstance(name, str) or not name or Path(name).name != name:
        return "the manifest names no file in the folder"
    try:
        facts = file_facts(out_dir / name)
    except Exception as exc:  # noqa: BLE001 - unreadable for any reason: render it again
        return f"the audio does not open ({type(exc).__name__})"
    if facts["frames"] <= 0:
        return "the audio has no frames"
    for key in ("frames", "bytes"):
        if isinstance(entry.get(key), int) and entry[key] != facts[key]:
            return f"it has {facts[key]} {key}, the manifest says {entry[key]}"
    sidecar = _sidecar(out_dir, entry, name)
    if sidecar is None:
        return "its sidecar is missing or not a JSON object"
    return _sidecar_doubt(sidecar, entry, facts)


def _sidecar(out_dir: Path, entry: dict, name: str) -> dict | None:
    sidecar = entry.get("sidecar")
    if not isinstance(sidecar, str) or Path(sidecar).name != sidecar:
        sidecar = Path(name).with_suffix(".json").name
    return read_sidecar(out_dir / sidecar)


def _sidecar_doubt(sidecar: dict[str, Any], entry: dict, facts: dict[str, int]) -> str | None:
    if sidecar.get("seed") != entry.get("seed"):
        return f"its sidecar says seed {sidecar.get('seed')!r}, the manifest {entry.get('seed')!r}"
    batch = sidecar.get("batch")
    if not isinstance(batch, dict) or batch.get("params_hash") != entry.get("params_hash"):
        return "its sidecar was made with other parameters than the manifest says"
    output = sidecar.get("output")
    samples = output.get("samples") if isinstance(output, dict) else None
    if isinstance(samples, int) and samples != facts["frames"]:
        return f"it has {facts['frames']} frames, its sidecar says {samples}"
    return None
