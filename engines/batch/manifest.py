"""DIR/manifest.json: every item of the list with its file, seed, library id, status, timings
and parameters hash, rewritten after every take.

Statuses: "ok" (rendered by this run), "skipped" (rendered by an earlier run with the same
parameters; its file is kept), "failed" (with the reason), "pending" (not rendered yet: the run
was stopped before it; a rerun renders it). A file is good exactly when its status is ok or
skipped.

Crash safety: the manifest is written to a locked temporary beside it, synced, and renamed over
the old one, so a reader (or a rerun after SIGKILL) always finds a complete manifest; and a take
is marked ok only after its file was renamed into place, so it never lists a half-written file.
Entries are serialised once when they change, so rewriting the manifest of a 1,000-item batch
after every take costs a join, not a thousand json.dumps calls.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path
from typing import Any

from engines.audio_io.atomic import (
    create_temp_beside,
    fsync_file,
    release,
    remove_quietly,
    remove_stale_temps,
)
from engines.batch.plan import MANIFEST_NAME, PlannedTake, Problem
from engines.error_sentences import path_text, reason, shown

MANIFEST_VERSION = 1
STATUSES = ("ok", "skipped", "failed", "pending")


class Manifest:
    def __init__(self, out_dir: Path, header: dict[str, Any], entries: list[dict]) -> None:
        self.path = out_dir / MANIFEST_NAME
        self._header = {"app": "SA3 Studio", "manifest_version": MANIFEST_VERSION,
                        "created": _now(), **header}
        self._entries = entries
        self._texts = [_dumps(entry) for entry in entries]

    @classmethod
    def for_plan(cls, out_dir: Path, header: dict[str, Any],
                 entries: list[PlannedTake | Problem]) -> Manifest:
        return cls(out_dir, header, [entry_for(e) for e in entries])

    def entry(self, index: int) -> dict:
        return self._entries[index]

    def update(self, index: int, **changes: Any) -> None:
        self._entries[index].update(changes)
        self._texts[index] = _dumps(self._entries[index])

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for entry in self._entries:
            counts[entry["status"]] = counts.get(entry["status"], 0) + 1
        return counts

    def text(self) -> str:
        head = json.dumps({**self._header, "updated": _now(), "summary": self.counts()},
                          indent=2, ensure_ascii=False)
        items = ",\n    ".join(self._texts)
        body = f'\n    {items}\n  ' if items else ""
        return f'{head[:-2]},\n  "items": [{body}]\n}}\n'

    def save(self) -> None:
        """Replace the manifest atomically (OSError if it cannot be written)."""
        remove_stale_temps(self.path)  # left by a run that was killed while saving
        temp = create_temp_beside(self.path, ".json")
        try:
            with open(temp, "w", encoding="utf-8", errors="backslashreplace") as handle:
                handle.write(self.text())
            fsync_file(temp)
            os.replace(temp, self.path)
        except BaseException:
            remove_quietly(temp)
            raise
        release(temp)


def entry_for(item: PlannedTake | Problem) -> dict:
    """The manifest entry of a planned take (pending, or skipped with what the earlier run
    recorded) or of a problem (failed)."""
    if isinstance(item, Problem):
        return {"name": item.name, "where": item.where, "variation": None, "file": item.file,
                "sidecar": None, "seed": None, "seed_was_random": None, "library_id": None,
                "status": "failed", "reason": item.reason, "params_hash": None,
                "seconds": None, "timings_ms": {}, "warnings": []}
    spec = item.spec
    entry = {"name": spec.name, "where": item.where, "variation": item.variation,
             "file": item.file, "sidecar": None, "seed": item.seed,
             "seed_was_random": item.seed_was_random, "library_id": None,
             "status": "pending", "reason": None, "params_hash": item.params_hash,
             "seconds": None, "timings_ms": {}, "warnings": [], "model": spec.model,
             "prompt": spec.prompt, "category": spec.category or None}
    if item.earlier is not None:
        earlier = item.earlier
        entry.update(status="skipped", sidecar=earlier.get("sidecar"),
                     library_id=earlier.get("library_id"), seconds=earlier.get("seconds"),
                     timings_ms=earlier.get("timings_ms") or {},
                     warnings=earlier.get("warnings") or [])
        for key in ("frames", "bytes"):  # what the next rerun checks the file against
            if key in earlier:
                entry[key] = earlier[key]
    return entry


def read_earlier(out_dir: Path) -> tuple[list[dict], str | None]:
    """The items an earlier run recorded in `out_dir` (none when there was no run), and a
    warning sentence when its manifest could not be read."""
    path = out_dir / MANIFEST_NAME
    try:
        if not path.is_file():
            return [], None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        happened, _ = reason(exc)
        return [], (f"The earlier manifest {shown(path)} could not be read ({happened}), so "
                    "every take is rendered again; it is replaced as the batch runs.")
    items = data.get("items") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return [], (f"The earlier manifest {shown(path)} is not one this command wrote, so "
                    "every take is rendered again; it is replaced as the batch runs.")
    return [item for item in items if isinstance(item, dict)], None


def header_for(list_path: Path, out_dir: Path, settings: dict[str, Any]) -> dict[str, Any]:
    return {"list": path_text(list_path.resolve()), "out": path_text(out_dir.resolve()),
            "settings": settings}


def _dumps(entry: dict) -> str:
    return json.dumps(entry, ensure_ascii=False)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
