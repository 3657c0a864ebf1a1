"""Keeping a batch's takes in the sound library. Only the parent process writes (SQLite, one
writer), through one ClipLibrary opened for the whole batch.

The library failing never costs a file: a library that cannot be opened is one warning (and the
batch goes on without it), a take that cannot be kept is a warning for that take, and the file
is written all the same.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from engines.audio_io import read_audio
from engines.constants import SAMPLE_RATE
from engines.error_sentences import path_text, reason
from engines.errors import StudioError
from engines.paths import library_dir
from engines.request import init_frames_needed
from engines.store.library import ClipLibrary

if TYPE_CHECKING:
    from engines.generation_result import GenerationResult
    from engines.store.records import TakeRecord

log = logging.getLogger(__name__)

Warn = Callable[[str], None]


class LibraryKeeper:
    def __init__(self, enabled: bool, warn: Warn) -> None:
        self._enabled = enabled
        self._warn = warn
        self._library: ClipLibrary | None = None
        self._init_takes: dict[Path, int] = {}  # init file -> its imported take's id

    def keep(self, result: GenerationResult, *, name: str, init_audio: Path | None,
             category: str, finishing: dict | None, labels: object = None,
             variation: tuple[int, int] = (1, 1)) -> TakeRecord | None:
        """The TakeRecord the take was kept as (with its UCS labels and its number in its
        row's variations, (n, of)), or None (not kept; warned)."""
        library = self._open()
        if library is None:
            return None
        try:
            parent_id = None
            source = None
            if init_audio is not None:
                source = path_text(init_audio.resolve())
                parent_id = self._init_take(library, init_audio, source, result)
            record = library.add(result, parent_id=parent_id, name=name, init_source=source,
                                 labels=labels, variation=variation[0],
                                 variations=variation[1])
        except Exception as exc:  # the library must never cost the take: see the docstring
            log.warning("could not keep %s in the library", name, exc_info=True)
            self._warn(f"{name} was not kept in the library, only written to the output "
                       f"folder: {_why(exc)}.")
            return None
        self._extras(library, record, category, finishing)
        return record

    def _init_take(self, library: ClipLibrary, init_audio: Path, source: str,
                   result: GenerationResult) -> int:
        """The init file as an imported take (the parent of takes made from it), read once."""
        if init_audio not in self._init_takes:
            # Only the part the take was made from: a 30-minute file is not copied whole.
            used_s = init_frames_needed(result.request.seconds) / SAMPLE_RATE
            origin = library.identify(init_audio)  # a take exported earlier, if it is one
            self._init_takes[init_audio] = library.add_imported(
                read_audio(init_audio, max_seconds=used_s), source,
                parent_id=origin.id if origin is not None else None).id
        return self._init_takes[init_audio]

    def _extras(self, library: ClipLibrary, record: TakeRecord, category: str,
                finishing: dict | None) -> None:
        """The finishing chain and the category tag: nice to have, so a failure is a warning."""
        try:
            if finishing is not None and hasattr(library, "set_finishing"):
                library.set_finishing(record.id, finishing)
            if category:
                library.update(record.id, tags=[*record.tags, category])
        except Exception as exc:  # the take is kept; only these extras are missing
            log.warning("could not add the finishing or tag of take #%d", record.id,
                        exc_info=True)
            self._warn(f"Take #{record.id} is kept in the library without its finishing "
                       f"record or category tag: {_why(exc)}.")

    def _open(self) -> ClipLibrary | None:
        if not self._enabled:
            return None
        if self._library is None:
            try:
                self._library = ClipLibrary(library_dir())
            except Exception as exc:  # never lose the takes: see the module docstring
                log.warning("could not open the library", exc_info=True)
                self._enabled = False
                self._warn(f"The library could not be opened, so this batch's takes are only "
                           f"written to the output folder: {_why(exc)}.")
                return None
            if self._library.notice:
                self._warn(self._library.notice)
            if self._library.read_only:  # every add would be refused: say it once (notice)
                self._enabled = False
                self.close()
                return None
        return self._library

    def close(self) -> None:
        library, self._library = self._library, None
        if library is not None:
            try:
                library.close()
            except Exception:  # closing must not turn a finished batch into a failure
                log.warning("could not close the library", exc_info=True)


def _why(exc: BaseException) -> str:
    """The failure as the end of a sentence: a StudioError's own words, else the reason."""
    if isinstance(exc, StudioError):
        return str(exc).rstrip(".")
    happened, todo = reason(exc)
    return f"{happened}; {todo}"
