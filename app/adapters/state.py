"""The Adapters panel as data and back: the request's adapters (app.generate.requests), the
remembered settings of the next run (app.generate.panel_settings), and a library take's
adapters put back by Restore settings (app.library.restore). Reading and filling only.

Remembered settings keep what each row showed (name, SHA-256, variant, rank), so the panel
comes back as the window opens without reading any adapter file; the file is read when a
take is asked for, and a file gone meanwhile is a sentence then.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from app.adapters.entry import AdapterEntry
from app.adapters.panel import AdaptersPanel
from engines.adapter_restore import restored_adapters
from engines.adapters.choice import AdapterChoice
from engines.errors import RequestError
from engines.request_adapters import MAX_STRENGTH, MIN_STRENGTH


def panel_adapters(panel: AdaptersPanel) -> tuple[AdapterChoice, ...]:
    """The rows as a request's adapters, in stack order (one switched off rides at strength 0,
    so switching it never changes which graph runs)."""
    return tuple(AdapterChoice(row.entry.path, row.strength.value(),
                               row.enabled_check.isChecked()) for row in panel.rows)


def panel_entries(panel: AdaptersPanel) -> list[AdapterEntry]:
    """The rows as entries, with the strength and switch the widgets hold now."""
    entries = []
    for row in panel.rows:
        e = row.entry
        entries.append(AdapterEntry(e.path, e.file_name, e.sha256, e.variant, e.rank,
                                    row.strength.value(), row.enabled_check.isChecked(),
                                    e.missing))
    return entries


# ---------------------------------------------------------------------- between runs
def adapter_settings(panel: AdaptersPanel) -> list[dict]:
    """What the next run brings back (app.common.session_memory keeps it as JSON)."""
    return [{"path": str(e.path), "file_name": e.file_name, "sha256": e.sha256,
             "variant": e.variant, "rank": e.rank, "strength": e.strength,
             "enabled": e.enabled} for e in panel_entries(panel)]


def apply_adapter_settings(panel: AdaptersPanel, value: object) -> None:
    """Put remembered rows back; an entry of the wrong shape (a damaged file) is skipped,
    and nothing here raises."""
    if not isinstance(value, list):
        return
    entries = [entry for entry in map(_remembered, value) if entry is not None]
    if entries or panel.rows:
        panel.set_entries(entries)


def _remembered(item: object) -> AdapterEntry | None:
    if not isinstance(item, dict) or not isinstance(item.get("path"), str) or not item["path"]:
        return None
    path = Path(item["path"])
    strength = item.get("strength")
    if not _number(strength) or not MIN_STRENGTH <= strength <= MAX_STRENGTH:
        strength = 1.0
    rank = item.get("rank")
    return AdapterEntry(path, _text(item.get("file_name")) or path.name,
                        _text(item.get("sha256")), _text(item.get("variant")),
                        int(rank) if _number(rank) and rank == int(rank) else 0,
                        float(strength), item.get("enabled") is not False,
                        missing=not os.path.isfile(path))


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and \
        math.isfinite(value)


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


# ---------------------------------------------------------------------- a library take's
def restore_adapters(panel: AdaptersPanel, stored: list[dict]) -> list[RequestError]:
    """Make the panel hold the adapters a take was made with (engines.store TakeRecord.adapters:
    found by SHA-256 where they lay, or on the adapter shelf), at their strengths and switches.
    Returns the error of each adapter not found (one sentence naming it and its SHA-256, for
    the notifier to word): its row stays, marked
    missing, so the panel still says what the take was made with and Generate says it too."""
    entries, missing = [], []
    for item in stored:
        try:
            (choice,) = restored_adapters([item])
            found = True
        except RequestError as exc:
            missing.append(exc)
            choice = AdapterChoice(Path(str(item.get("path") or item.get("file_name") or "")),
                                   stored_strength(item), item.get("enabled") is not False)
            found = False
        rank = item.get("rank")
        entries.append(AdapterEntry(
            choice.path, _text(item.get("file_name")) or choice.path.name,
            _text(item.get("sha256")), _text(item.get("variant")),
            int(rank) if _number(rank) else 0, choice.strength, choice.enabled,
            missing=not found))
    panel.set_entries(entries)
    return missing


def stored_strength(item: dict) -> float:
    """A recorded adapter's strength; 1 where a damaged record holds no number."""
    value = item.get("strength")
    return float(value) if _number(value) else 1.0
