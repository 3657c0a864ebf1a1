"""The Library page's inspector: the selected row's waveform to play and scrub
(`libraryPreview`: a click plays from there, a drag scrubs, the playhead follows the player)
and its facts in words (`libraryFacts`, app.library.inspector_facts). Space on the table plays
the selected row, or pauses it while it plays.

The waveform is the row's peaks drawn off the GUI thread by the table's thumbnail cache (a
larger size, its own key); the audio is read once per selected row and shared with the table's
Up/Down audition (`audio_of`), so the playhead shows whichever of the two started it.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut

from app.common.expected_errors import LIBRARY_ERRORS, PLAYBACK_ERRORS
from app.common.notifier import Notifier
from app.common.thumbnails import file_peaks
from app.library.inspector_facts import fact_rows, facts_of_record
from app.library.inspector_loudness import LoudnessReadings, file_reader
from app.library.panel import LibraryPanel
from app.library.table import fit_peaks
from app.widgets.preview_wave import PREVIEW_SIZE

log = logging.getLogger(__name__)

PLAYHEAD_MS = 30  # as the Take page's playhead
MISSING_TEXT = "The audio file is missing"


def _key(record) -> tuple:
    return (record.id, record.content_sha256)


class LibraryInspector(QObject):
    playingStarted = Signal()  # a row is playing (the transport says Pause)

    def __init__(self, panel: LibraryPanel, library, player, notifier: Notifier,
                 readings: LoudnessReadings, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.panel = panel
        self.library = library
        self.player = player
        self.notifier = notifier
        self.readings = readings
        self.record = None
        self._audio: tuple[tuple, object] | None = None  # (key, pcm) of the row read last
        self.thumbnails = panel.model.thumbnails
        self.thumbnails.ready.connect(self._thumbnail_ready)
        readings.measured.connect(self._measured)
        panel.preview.playFrom.connect(self.play_from)
        panel.preview.scrubTo.connect(self.scrub_to)
        self.space = QShortcut(QKeySequence(Qt.Key.Key_Space), panel.view)
        self.space.setContext(Qt.ShortcutContext.WidgetShortcut)
        self.space.activated.connect(self.toggle_selected)
        self.timer = QTimer(self, interval=PLAYHEAD_MS)
        self.timer.timeout.connect(self._tick)
        self.timer.start()

    # ------------------------------------------------------------------ what it shows
    def show_record(self, record) -> None:
        """The selected row (None: nothing selected, never the previous row's facts)."""
        self.record = record
        preview, facts = self.panel.preview, self.panel.facts
        if record is None:
            preview.clear()
            facts.show_rows([])
            return
        duration = record.samples / max(record.sample_rate, 1)
        if record.missing:
            preview.show_sound(duration, None, MISSING_TEXT)
        else:
            preview.show_sound(duration, self._pixmap(record), "Drawing the waveform...")
            self.readings.request(_key(record), file_reader(record.audio_path))
        self._show_facts()
        self._tick()

    def _show_facts(self) -> None:
        record = self.record
        key = _key(record)
        made = facts_of_record(record, self.readings.figures(key), self._sound_file(record))
        made.unmeasured = record.missing or self.readings.unreadable(key)
        self.panel.facts.show_rows(fact_rows(made))

    def _sound_file(self, record):
        """What the library read from an imported file's header (its format, channels)."""
        if not record.is_sound_file:
            return None
        try:
            return self.library.sound_file(record.id)
        except LIBRARY_ERRORS:  # the facts word the row without it
            log.info("no header facts for sound #%s", record.id, exc_info=True)
            return None

    def _pixmap(self, record):
        path, stored = record.audio_path, None
        if record.is_sound_file:  # a file on a slow drive is not read again for its peaks
            try:
                stored = self.library.sound_peaks(record.id)
            except LIBRARY_ERRORS:
                log.info("no stored peaks for sound #%s", record.id, exc_info=True)
        peaks = ((lambda columns: fit_peaks(stored, columns)) if stored is not None
                 else (lambda columns: file_peaks(path, columns)))
        return self.thumbnails.pixmap(("preview", record.id, record.content_sha256),
                                      PREVIEW_SIZE, peaks)

    def _thumbnail_ready(self, key) -> None:
        record = self.record
        if record is not None and key == ("preview", record.id, record.content_sha256):
            self.panel.preview.set_pixmap(self._pixmap(record))

    def _measured(self, key) -> None:
        if self.record is not None and key == _key(self.record):
            self._show_facts()

    # ------------------------------------------------------------------ playing
    def audio_of(self, record):
        """The row's samples (int16 (N, 2)), read once while it stays the one played."""
        key = _key(record)
        if self._audio is None or self._audio[0] != key:
            self._audio = (key, self.library.load_audio(record.id))
        return self._audio[1]

    def _playable(self):
        """The selected row's samples, loaded into the player; None (and one sentence) when
        nothing can play."""
        record = self.record
        if record is None or self.player is None:
            return None
        if not self.player.available:
            self.notifier.status(self.player.unavailable_reason
                                 or "No audio output device was found.")
            return None
        try:
            pcm = self.audio_of(record)
        except LIBRARY_ERRORS as exc:  # one sentence, the traceback to the log
            self.notifier.failed(f"Could not play library take #{record.id}", exc)
            return None
        if not self.player.holds(pcm):
            self.player.load(pcm, keep_position=False)
        return pcm

    def play_from(self, seconds: float) -> None:
        """A click on the waveform: play the row from there."""
        try:
            if self._playable() is None:
                return
            self.player.seek(seconds)
            self.player.play()
        except PLAYBACK_ERRORS as exc:  # the device vanished: one sentence
            self.notifier.failed("Could not play the take", exc)
            return
        self.panel.preview.set_playhead(seconds)
        self.playingStarted.emit()

    def scrub_to(self, seconds: float) -> None:
        """A drag over the waveform: what plays follows the pointer."""
        if self.player is not None and self.player.playing and self.record is not None \
                and self._audio is not None and self.player.holds(self._audio[1]):
            self.player.seek(seconds)
            self.panel.preview.set_playhead(seconds)
        else:
            self.play_from(seconds)

    def toggle_selected(self) -> None:
        """Space on the table: pause the row while it plays, else play it (on from where it
        was paused, or from its start)."""
        if self.player is not None and self._audio is not None and self.record is not None \
                and self._audio[0] == _key(self.record) and self.player.holds(self._audio[1]):
            try:
                playing = self.player.toggle()
            except PLAYBACK_ERRORS as exc:
                self.notifier.failed("Could not play the take", exc)
                return
            if playing:
                self.playingStarted.emit()
            return
        self.play_from(0.0)

    def _tick(self) -> None:
        """The playhead on the waveform while the selected row is what the player holds."""
        player, audio = self.player, self._audio
        if not self.panel.isVisible() or player is None or not player.known:
            return
        ours = (self.record is not None and audio is not None
                and audio[0] == _key(self.record) and player.holds(audio[1]))
        self.panel.preview.set_playhead(player.position_seconds if ours else None)

    def shutdown(self) -> None:
        self.timer.stop()
        self.readings.shutdown()
