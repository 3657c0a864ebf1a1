"""Quality flags for takes that have none yet: those kept before the library stored flags
(schema 2 and older) and those a rebuild brought back without them. New takes arrive with
theirs (the worker measures every take; imports are measured when they are kept).

Measuring reads the whole take (about 25 ms for 10 s of audio), so a library of thousands of
old takes is not measured in one go when it opens: `check_quality` stops after a time budget
and the next open goes on where it stopped. Takes whose audio is missing or unreadable stay
unmeasured (NULL) and are looked at again when they can be read.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import soundfile as sf

from engines.store import wavmeta
from engines.store.database import LibraryDatabase
from engines.store.folders import LibraryFolders
from engines.store.records import LibraryError
from engines.store.rows import audio_flags

log = logging.getLogger(__name__)

CHECK_ON_OPEN_S = 2.0  # what opening a library may spend on measuring old takes
_BATCH = 32  # takes measured per write transaction: short locks, few commits


def file_flags(path: Path) -> list[str] | None:
    """The quality flags of the take stored in `path`, or None when it cannot be read."""
    if not os.path.isfile(path):
        return None
    try:
        with sf.SoundFile(wavmeta.sf_name(path)) as handle:
            audio = handle.read(dtype=wavmeta.stored_dtype(handle.subtype), always_2d=True)
    except (sf.SoundFileError, RuntimeError, ValueError, TypeError, OSError,
            MemoryError) as err:
        log.warning("Could not measure the quality of %s (%s)", path, err)
        return None
    return audio_flags(audio)


class QualityCheck:
    """Measuring takes kept without quality flags (at opening, and when asked)."""

    def __init__(self, db: LibraryDatabase, folders: LibraryFolders) -> None:
        self._db = db
        self._folders = folders

    def check_quality(self, budget_s: float | None = None) -> int:
        """Measure and store the flags of takes that have none, oldest first, until
        `budget_s` seconds have gone (None: all of them); returns how many were measured.
        A read-only library is left as it is."""
        if self._db.read_only:
            return 0
        # Sound files referenced in place are the user's recordings, not takes to check; and
        # decoding a whole folder of them at every open would be far too slow.
        rows = self._db.rows("SELECT id, audio_file, deleted FROM takes WHERE quality IS NULL "
                          "AND source_root IS NULL ORDER BY id")
        if not rows:
            return 0
        started = time.perf_counter()
        measured: list[tuple[str, int]] = []
        done = 0
        for row in rows:
            if budget_s is not None and time.perf_counter() - started > budget_s:
                break
            folder = self._folders.audio_folder(row["deleted"])
            flags = file_flags(folder / row["audio_file"])
            if flags is not None:
                measured.append((json.dumps(flags), row["id"]))
            if len(measured) >= _BATCH:
                if not self._store_flags(measured):
                    return done
                done, measured = done + len(measured), []
        if self._store_flags(measured):
            done += len(measured)
        log.info("Measured the quality of %d takes; %d have no flags yet", done,
                 len(rows) - done)
        return done

    def _store_flags(self, measured: list[tuple[str, int]]) -> bool:
        """Keep measured flags; False when the library could not be written."""
        if not measured:
            return True
        try:
            with self._db.write():
                # Only where still unmeasured: another copy of the app may have been quicker.
                self._db.conn.executemany("UPDATE takes SET quality = ? WHERE id = ? AND "
                                       "quality IS NULL", measured)
        except LibraryError:
            # Measuring is housekeeping: a full disk or a busy database must not keep the
            # library from opening. The takes stay unmeasured; the next open tries again.
            log.warning("Could not keep the quality flags of %d takes", len(measured),
                        exc_info=True)
            return False
        return True
