"""A take's adapters in words, the same in every front end: `library show`'s lines, and the
short "a.safetensors:0.8 b.safetensors:0.5" form a sound list's `lora` column and a table
cell use."""

from __future__ import annotations

from engines.number_text import short


def adapters_short(entries: list[dict]) -> str:
    """"a.safetensors:0.8 b.safetensors:0.5" (an adapter switched off reads :0), or ""."""
    items = []
    for entry in entries:
        strength = entry.get("strength", 1.0) if entry.get("enabled", True) else 0.0
        items.append(f"{entry.get('file_name') or '?'}:{_number(strength)}")
    return " ".join(items)


def adapter_lines(entries: list[dict]) -> list[str]:
    """One `library show` line per adapter: name, strength, variant, rank, SHA-256, path."""
    lines = []
    for entry in entries:
        off = "" if entry.get("enabled", True) else " (switched off)"
        lines.append(f"  adapter      {entry.get('file_name') or '?'} at strength "
                     f"{_number(entry.get('strength', 1.0))}{off}, {entry.get('variant') or '?'} "
                     f"rank {entry.get('rank', '?')}, sha256 {entry.get('sha256') or '?'} "
                     f"({entry.get('path') or '-'})")
    return lines


def _number(value: object) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{float(value):g}"
    return short(value) if isinstance(value, int) else str(value)
