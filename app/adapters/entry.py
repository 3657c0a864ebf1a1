"""One adapter row of the Adapters panel as plain data: the file and what it is (as
engines.adapters.files read it, or as a take or last session recorded it), its strength and
its switch."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engines.adapters.choice import DEFAULT_STRENGTH

# The variants in the words adapter makers use (engines.adapters.variants names them).
VARIANT_WORDS = {"lora": "LoRA", "lora-xs": "LoRA-XS", "dora-rows": "DoRA",
                 "dora-rows-xs": "DoRA-XS", "dora-cols": "DoRA (columns)",
                 "dora-cols-xs": "DoRA-XS (columns)", "bora": "BoRA", "bora-xs": "BoRA-XS"}


@dataclass(frozen=True)
class AdapterEntry:
    path: Path
    file_name: str
    sha256: str = ""
    variant: str = ""
    rank: int = 0
    strength: float = DEFAULT_STRENGTH
    enabled: bool = True
    missing: bool = False  # the file is not where it was recorded (restored settings)

    def details(self) -> str:
        """"LoRA · rank 4": what the row says under its name."""
        parts = [VARIANT_WORDS.get(self.variant, self.variant)] if self.variant else []
        if self.rank:
            parts.append(f"rank {self.rank}")
        if self.missing:
            parts.append("file missing")
        return " · ".join(parts)


def entry_of_info(info, strength: float = DEFAULT_STRENGTH, enabled: bool = True) -> AdapterEntry:
    """The entry of a file engines.adapters.files.read_adapter_info read."""
    return AdapterEntry(Path(info.path), info.file_name, info.sha256, info.variant,
                        int(info.rank), float(strength), bool(enabled))
