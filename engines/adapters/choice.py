"""An adapter a request asks for: a file and its strength. The one form every front end builds
(`--lora FILE[:STRENGTH]`, a sound list's `lora` column, the window's Adapters panel) and the
generator hands to the backend."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_STRENGTH = 1.0


@dataclass(frozen=True)
class AdapterChoice:
    path: Path
    strength: float = DEFAULT_STRENGTH
    enabled: bool = True  # the window's on/off: an adapter switched off weighs nothing

    @property
    def effective_strength(self) -> float:
        return self.strength if self.enabled else 0.0
