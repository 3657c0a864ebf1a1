"""Find similar off the GUI thread: the takes that sound most like a take or an audio file
(engines.store.sound_search), on a thread of its own.

A search first embeds every take kept without a sound embedding (takes from before sound search,
engines.store.embedding_backfill): on an old library that pass reads every take's audio, so it
reports how far it is (`progress`) and the window shows a progress bar. A SQLite connection
serves only the thread that opened it, so this thread opens a ClipLibrary of its own on first
use and closes it as the thread ends. Latents come from the codec encoders that run here on the
CPU (engines.similarity.encoding), loaded once.

Searches are numbered; the controller drops an answer that is not the latest asked for.
Closing the window stops a pass between two takes (what it embedded is kept).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from app.common.threads import stop_thread
from engines import paths
from engines.models.inventory import default_catalog
from engines.similarity.encoding import LatentEncoders
from engines.store.library import ClipLibrary
from engines.store.sound_search import SimilarTake, similar_takes, similar_to_audio, similar_to_file

log = logging.getLogger(__name__)

RESULTS = 50  # takes listed by a sound search, closest first
PROGRESS_EVERY_S = 0.1  # the pass reports at most this often


@dataclass(frozen=True)
class SoundQuery:
    """What to search by: a kept take (`take_id`), an audio file (`path`) or audio in memory
    (`audio`, float32 (N, 2) at 44.1 kHz); `label` says it in the window."""

    serial: int
    label: str
    take_id: int | None = None
    path: Path | None = None
    audio: np.ndarray | None = field(default=None, repr=False)
    limit: int = RESULTS


@dataclass(frozen=True)
class SoundAnswer:
    query: SoundQuery
    found: list[SimilarTake]


class _Stopped(Exception):
    """The window is closing: the pass stops between two takes."""


class _SearchWorker(QObject):
    progress = Signal(int, int)  # done, total of the embedding pass
    answered = Signal(object)  # SoundAnswer
    failed = Signal(object, object)  # SoundQuery, the exception (worded by the notifier)

    def __init__(self) -> None:
        super().__init__()
        self.stop = threading.Event()
        self._library: ClipLibrary | None = None
        self._encoders: LatentEncoders | None = None
        self._spaces: list[str] = []
        self._said_at = 0.0

    @Slot(object)
    def search(self, query: SoundQuery) -> None:
        try:
            library = self._open()
            encoders = self._encoders_for(library)
            if query.take_id is not None:
                found = similar_takes(library, query.take_id, query.limit, encoders=encoders,
                                      progress=self._report)
            elif query.path is not None:
                found = similar_to_file(library, query.path, query.limit, encoders=encoders,
                                        progress=self._report)
            else:
                found = similar_to_audio(library, query.audio, query.limit, encoders=encoders)
        except _Stopped:
            return
        except Exception as exc:  # noqa: BLE001 - top of the search thread: one sentence
            self.failed.emit(query, exc)
            return
        self.answered.emit(SoundAnswer(query, found))

    def _open(self) -> ClipLibrary:
        if self._library is None:
            self._library = ClipLibrary(paths.library_dir())
        return self._library

    def _encoders_for(self, library: ClipLibrary) -> LatentEncoders:
        spaces = library.latent_spaces()
        if self._encoders is None or spaces != self._spaces:
            self._encoders = LatentEncoders(default_catalog(), spaces)
            self._spaces = spaces
        return self._encoders

    def _report(self, done: int, total: int) -> None:
        if self.stop.is_set():
            raise _Stopped()
        now = time.monotonic()
        if done == total or now - self._said_at >= PROGRESS_EVERY_S:
            self._said_at = now
            self.progress.emit(done, total)

    def close(self) -> None:
        """On the worker's thread, as it ends (the connection is that thread's)."""
        library, self._library = self._library, None
        if library is not None:
            try:
                library.close()
            except Exception:  # noqa: BLE001 - closing goes on
                log.warning("closing the sound search's library failed", exc_info=True)


class SoundSearch(QObject):
    """The sound search thread as the library controller uses it (started on first use)."""

    progress = Signal(int, int)  # done, total of the embedding pass
    answered = Signal(object)  # SoundAnswer, on the GUI thread
    failed = Signal(object, object)  # SoundQuery, the exception
    _asked = Signal(object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.serial = 0
        self._thread: QThread | None = None
        self._worker = _SearchWorker()
        self._closed = False
        self._worker.progress.connect(self.progress)
        self._worker.answered.connect(self.answered)
        self._worker.failed.connect(self.failed)

    def ask(self, label: str, *, take_id: int | None = None, path: Path | None = None,
            audio: np.ndarray | None = None) -> SoundQuery | None:
        """Start a search (answered by `answered` or `failed`); None once shut down."""
        if self._closed:
            return None
        if self._thread is None:
            self._start()
        self.serial += 1
        query = SoundQuery(self.serial, label, take_id, path, audio)
        self._asked.emit(query)
        return query

    def _start(self) -> None:
        thread = self._thread = QThread(self)
        thread.setObjectName("soundSearchThread")
        self._worker.moveToThread(thread)
        self._asked.connect(self._worker.search)
        # `finished` is emitted on the worker's own thread: its connection is closed there
        thread.finished.connect(self._worker.close, Qt.ConnectionType.DirectConnection)
        thread.start()

    def shutdown(self) -> None:
        """Stop a pass under way (between two takes), end the thread; idempotent."""
        self._closed = True
        self._worker.stop.set()
        if self._thread is not None:
            stop_thread(self._thread)
