"""Browsing the library as a sample browser: Up/Down in its table auditions a take at once
(without bringing it into the session: browsing fifty sounds must not add fifty takes), and
rows drag out as files - the file a session drag gives (the export controller's `file_for`,
so the same names and folders), finished when the take keeps a finishing chain.

How a library record becomes a session Take is app.common.library_take's (re-exported here:
`take_from_record`, `restore_finishing`).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QMimeData, QObject, QUrl, Signal

from app.common.expected_errors import LIBRARY_ERRORS, PLAYBACK_ERRORS
from app.common.library_take import (  # noqa: F401 - restore_finishing is re-exported
    restore_finishing,
    take_from_record,
)
from app.common.notifier import Notifier
from app.common.session import TakeModel
from app.common.session_take import Take
from app.finish.render import raw_audio, render
from app.library.panel import LibraryPanel
from engines.finish.loop import make_loop

log = logging.getLogger(__name__)

DRAG_TAKES_KEPT = 16  # library takes prepared for dragging, so a second drag reuses the file
MODEL_LOOP_RAW = ("Take #{id} went out as its raw file: its loop was written by the model, "
                  "which cannot run during a drag; double-click it to open it in the session, "
                  "where its loop is made again.")


def own_file(record) -> bool:
    """A sound file imported in place, unfinished and there: dragged out as it is (its own
    format and metadata; a drop copies it, nothing writes it)."""
    return (bool(getattr(record, "is_sound_file", False)) and record.finishing is None
            and not record.missing)


class LibraryBrowsing(QObject):
    auditionStarted = Signal()  # a row is playing

    def __init__(self, panel: LibraryPanel, notifier: Notifier, session: TakeModel, library,
                 player, file_for: Callable[[Take], Path] | None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.notifier = notifier
        self.session = session
        self.library = library
        self.player = player
        self.file_for = file_for
        self.panel = panel
        self._drag_takes: OrderedDict[tuple, Take] = OrderedDict()
        # a row's samples: the inspector's (set by the controller), so the waveform beside the
        # table shows the playhead of an Up/Down audition too
        self.audio_of: Callable[[object], object] = lambda record: library.load_audio(record.id)
        self.panel.view.auditionRequested.connect(self.audition_row)
        self.panel.model.drag_source = self.mime_for_records

    # ------------------------------------------------------------------ audition
    def audition_row(self, row: int) -> None:
        """Play the row's take now: from its start, or from the same place while A/B is on
        (comparing the same moment across takes)."""
        record = self.panel.model.record(row)
        if record is None or self.player is None:
            return
        if not self.player.available:
            self.notifier.status(self.player.unavailable_reason
                                 or "No audio output device was found.")
            return
        try:
            pcm = self.audio_of(record)
        except LIBRARY_ERRORS as exc:  # one sentence, the traceback to the log
            self.notifier.failed(f"Could not play library take #{record.id}", exc)
            return
        keep = self.session.hear_finished
        try:
            self.player.load(pcm, keep_position=keep)
            if not keep:
                self.player.seek(0.0)
            self.player.play()
        except PLAYBACK_ERRORS as exc:  # the device vanished: one sentence
            self.notifier.failed("Could not play the take", exc)
            return
        self.auditionStarted.emit()
        self.notifier.status(f"Playing library take #{record.id}: "
                             f"{record.name or record.prompt}", 3000)

    # ------------------------------------------------------------------ drag-out
    def mime_for_records(self, records: list) -> QMimeData | None:
        """File URLs of the rows' drag-out files; None (and one sentence) when one cannot be
        written. Called from Qt's drag machinery, so nothing may escape from here."""
        if self.file_for is None:
            return None
        urls = []
        for record in records:
            try:
                if own_file(record):  # an imported sound goes out as the user's file itself
                    urls.append(QUrl.fromLocalFile(str(record.audio_path)))
                    continue
                take = self.session.for_library_id(record.id) or self._take_for_drag(record)
                urls.append(QUrl.fromLocalFile(str(self.file_for(take))))
            except Exception as exc:  # noqa: BLE001 - inside Qt's drag: an escape aborts the app
                self.notifier.failed(f"Could not write the file of library take #{record.id} "
                                     "for dragging", exc)
                return None
        data = QMimeData()
        data.setUrls(urls)
        return data

    def _take_for_drag(self, record) -> Take:
        """The record as a take whose finished audio (if it has a chain) is ready now; kept
        for a while, so dragging it again gives the same file."""
        key = (record.id, record.content_sha256, repr(record.finishing))
        take = self._drag_takes.get(key)
        if take is not None:
            self._drag_takes.move_to_end(key)
            return take
        take = take_from_record(record, self.library.load_audio(record.id))
        self._finish_now(take)
        self._drag_takes[key] = take
        while len(self._drag_takes) > DRAG_TAKES_KEPT:
            self._drag_takes.popitem(last=False)
        return take

    def _finish_now(self, take: Take) -> None:
        settings = take.finishing
        if settings is None:
            return
        loop = None
        if settings.loop:
            if (take.loop_recipe or {}).get("method") != "crossfade":
                take.finishing = None  # a drag cannot wait for the model
                self.notifier.status(MODEL_LOOP_RAW.format(id=take.library_id))
                return
            loop = make_loop(raw_audio(take.pcm), None, None, settings.loop_seam_s)
        take.loop = loop
        take.finished = render(take.pcm, settings, loop)
