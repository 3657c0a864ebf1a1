"""The app's settings file, `<data>/settings.json`: one JSON object, read leniently and written
atomically.

A damaged settings file (not JSON, not a JSON object, not UTF-8, a folder in its place) never
stops the app: it is set aside as `settings.json.damaged-<time>` so nothing the user had is
deleted, defaults are used, and one sentence says so. Such sentences wait in `take_notices()`
until the command line prints them or the window shows them.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

from engines.error_sentences import os_reason, printable
from engines.number_text import json_loads
from engines.private_files import PRIVATE_FILE_MODE, make_private, write_private_text

log = logging.getLogger(__name__)

SETTINGS_FILE = "settings.json"

_notices: list[str] = []
_lock = threading.Lock()


def settings_path(data_dir: Path) -> Path:
    return Path(data_dir) / SETTINGS_FILE


def take_notices() -> list[str]:
    """Sentences about settings problems met since the last call (each said once)."""
    with _lock:
        notices = list(_notices)
        _notices.clear()
    return notices


def _notice(text: str) -> None:
    log.warning("%s", text)
    with _lock:
        if text not in _notices:
            _notices.append(text)


def read_settings(data_dir: Path) -> dict[str, Any]:
    """The settings as a dict; {} when there are none yet, or when the file was damaged (then
    it is set aside and a notice is queued)."""
    path = settings_path(data_dir)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except IsADirectoryError:
        return _set_aside(path, "a folder stands where the settings file belongs")
    except OSError as err:
        happened, _ = os_reason(err)
        _notice(f"The settings file {printable(path)} could not be read ({happened}); "
                "defaults are used for this run.")
        return {}
    try:
        data = json_loads(raw.decode("utf-8"))  # integers of any length read (number_text)
    except (UnicodeDecodeError, ValueError):
        return _set_aside(path, "it is not valid JSON")
    except RecursionError:  # [[[[...]]]] nested past what the parser can follow
        return _set_aside(path, "it nests JSON too deeply")
    if not isinstance(data, dict):
        return _set_aside(path, f"it holds a JSON {type(data).__name__}, not an object")
    make_private(path, PRIVATE_FILE_MODE)  # an older release wrote it readable by others
    return data


def _set_aside(path: Path, why: str) -> dict[str, Any]:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.name}.damaged-{stamp}")
    for count in range(2, 100):  # one set aside earlier in the same second is kept too
        if not aside.exists():
            break
        aside = path.with_name(f"{path.name}.damaged-{stamp}-{count}")
    try:
        os.replace(path, aside)
    except OSError as err:
        happened, _ = os_reason(err)
        _notice(f"The settings file {printable(path)} is damaged ({why}) and could not be set "
                f"aside ({happened}); defaults are used until you move it away.")
        return {}
    if aside.is_file():  # the copy may hold the team's publisher line: for the user alone
        make_private(aside, PRIVATE_FILE_MODE)
    _notice(f"The settings file was damaged ({why}); it was kept as {printable(aside)} and "
            "defaults are used.")
    return {}


def update_settings(data_dir: Path, changes: dict[str, Any]) -> None:
    """Merge `changes` into the settings file, written through a temporary file and a rename.
    Raises OSError when the folder cannot be written (callers turn it into a sentence)."""
    path = settings_path(data_dir)
    data = read_settings(data_dir)
    data.update(changes)
    # private: it may hold the team's publisher line (a password)
    write_private_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
