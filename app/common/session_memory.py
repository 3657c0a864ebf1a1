"""What the window remembers of the session between runs: which library takes were in the takes
list (every take is kept in the library, so ids are enough) in their order, the selected one,
the init take and the spans painted on it, and the generation panel's settings (prompt,
negative prompt, model, length, steps, seed and lock, CFG, ...: app.generate.panel_settings).

Kept as JSON in session.json in the data folder, replaced whole (a temporary file, then a
rename), so a crash while writing leaves last time's file. Nothing here may stop the window
from opening or closing: a file that cannot be read or written is logged and skipped, and a
value of the wrong type is dropped.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from engines import paths

log = logging.getLogger(__name__)

SESSION_FILE = "session.json"
VERSION = 1


@dataclass
class SessionMemory:
    take_ids: list[int] = field(default_factory=list)  # library ids, in the takes list's order
    selected: int | None = None  # the selected take's library id
    init_id: int | None = None  # the init take's library id
    spans: list[tuple[float, float]] = field(default_factory=list)  # painted on the init take
    settings: dict = field(default_factory=dict)  # the generation panel's

    def is_empty(self) -> bool:
        return not self.take_ids and not self.settings


def session_path() -> Path:
    return paths.data_dir() / SESSION_FILE


def save_session(memory: SessionMemory, path: Path | None = None) -> bool:
    """Write `memory` (a complete new file); False, and a log line, when it could not be."""
    path = path if path is not None else session_path()
    text = json.dumps({"version": VERSION, **asdict(memory)}, indent=1)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".session-", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, path)
        finally:  # a write that failed leaves no temporary file behind (renamed: gone already)
            Path(temporary).unlink(missing_ok=True)
    except OSError:
        log.warning("could not remember the session in %s", path, exc_info=True)
        return False
    return True


def load_session(path: Path | None = None) -> SessionMemory:
    """Last time's session; an empty one when there is none or it cannot be read."""
    path = path if path is not None else session_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return SessionMemory()
    except (OSError, ValueError):
        log.warning("could not read the remembered session %s", path, exc_info=True)
        return SessionMemory()
    if not isinstance(data, dict):
        return SessionMemory()
    settings = data.get("settings")
    return SessionMemory(take_ids=[i for i in _list(data.get("take_ids")) if _is_id(i)],
                         selected=_id(data.get("selected")), init_id=_id(data.get("init_id")),
                         spans=_spans(data.get("spans")),
                         settings=settings if isinstance(settings, dict) else {})


def _list(value) -> list:
    return value if isinstance(value, list) else []


def _is_id(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _id(value) -> int | None:
    return value if _is_id(value) else None


def _spans(value) -> list[tuple[float, float]]:
    spans = []
    for span in _list(value):
        if (isinstance(span, list) and len(span) == 2
                and all(isinstance(v, int | float) and not isinstance(v, bool) for v in span)):
            spans.append((float(span[0]), float(span[1])))
    return spans
