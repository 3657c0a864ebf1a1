"""The session's takes and playback: choosing, showing, renaming and removing takes, and
playing the selected one (Space plays/pauses, L loops, a click on the waveform seeks, Up/Down
in the takes list auditions the next take at once, from its start - or from the same place
while A/B compares finished audio, or between a take and its codec tier comparisons, so the
same moment is heard in each take).

What is played and shown for a take is `session.audible(take)`: its raw audio, or its finished
audio while A/B is on finished (app.finish.controller switches it). The views are the takes
panel and the take viewer; Rename and Delete in the Take menu are connected by app.shell.studio.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QLineEdit,
    QListWidgetItem,
    QPlainTextEdit,
)

from app.common.expected_errors import PLAYBACK_ERRORS
from app.common.notifier import Notifier
from app.common.session import TakeModel
from app.common.session_take import Take
from app.takes.panel import SessionPanel
from app.takes.viewer import TakeViewer
from engines.constants import SAMPLE_RATE

log = logging.getLogger(__name__)

PLAYHEAD_MS = 30


class TakesController(QObject):
    takeRenamed = Signal(object)  # a take's name was edited in the takes list (F2)

    def __init__(self, panel: SessionPanel, viewer: TakeViewer, notifier: Notifier,
                 session: TakeModel, player, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.panel = panel
        self.viewer = viewer
        self.notifier = notifier
        self.session = session
        self.player = player
        self._within_tier_group = False  # the last selection moved inside a tier group
        panel.takes_list.currentItemChanged.connect(self._take_selected)
        panel.takes_list.itemChanged.connect(self._take_renamed)
        panel.takes_list.auditionRequested.connect(self.audition_current)
        panel.delete_button.clicked.connect(self.delete_current)
        panel.rename_action.triggered.connect(self.rename_current)
        panel.delete_action.triggered.connect(self.delete_current)
        viewer.waveform.seekRequested.connect(self.seek)
        viewer.play_button.clicked.connect(self.toggle_play)
        viewer.loop_check.toggled.connect(self._loop_changed)
        viewer.volume_slider.valueChanged.connect(self._volume_changed)
        session.auditionChanged.connect(self._audition_changed)
        self._volume_changed(viewer.volume_slider.value())
        # Space and L reach whichever widget has the focus: the application's filter sees
        # them first, for every widget of this window.
        QApplication.instance().installEventFilter(self)
        # Whether Play can work is shown once the output was looked up: the window starts that
        # after its first paint (app.shell.studio), off this thread; the timer below notices.
        self._playback_state_shown = False
        self._said_unavailable: str | None = None  # the reason the status bar gave last
        self.timer = QTimer(self)
        self.timer.setInterval(PLAYHEAD_MS)
        self.timer.timeout.connect(self._tick)
        self.timer.start()

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt override
        """Space plays/pauses and L loops, unless the user is typing."""
        # Every event of the application passes here: the isinstance test first, it is far
        # cheaper than reading the type (building a window sends thousands of events).
        if not isinstance(event, QKeyEvent):
            return False
        if event.type() == QEvent.Type.KeyPress and event.modifiers() in (
                Qt.KeyboardModifier.NoModifier,):
            focus = QApplication.focusWidget()
            typing = isinstance(focus, QLineEdit | QPlainTextEdit | QAbstractSpinBox)
            if focus is not None and focus.window() is self.viewer.window() and not typing:
                if event.key() == Qt.Key.Key_Space:
                    self.toggle_play()
                    return True
                if event.key() == Qt.Key.Key_L:
                    self.viewer.loop_check.toggle()
                    return True
        return False

    # ------------------------------------------------------------------ takes
    def _take_selected(self, current, previous) -> None:
        take = self.session.take_for(current)
        before = self.session.take_for(previous)
        # a tier comparison of the same latents is heard from the same place (issue 14)
        self._within_tier_group = (take is not None and before is not None
                                   and take.tier_group is not None
                                   and take.tier_group == before.tier_group)
        if take is None:
            self.viewer.waveform.clear()
            self.viewer.spectrogram.clear()
            self.viewer.latent_view.clear()
            self._show_position(0.0, 0.0)
            return
        # (which tiers and engine files made it: the Advanced group says, not the status bar)
        self.show_take(take)
        if self.player.available:
            # instant A/B while playing
            self.player.load(self.session.audible(take).audio, keep_position=True)

    def _audition_changed(self, take: Take) -> None:
        """Raw <-> finished, or new finished audio: show and play it from the same place."""
        if take is not self.session.current_take():
            return
        self.show_take(take)
        if self.player.available:
            try:
                self.player.load(self.session.audible(take).audio, keep_position=True)
            except PLAYBACK_ERRORS as exc:  # one sentence, no crash
                self.notifier.failed("Could not switch the audio that plays", exc)

    def show_take(self, take: Take) -> None:
        w = self.viewer
        shown = self.session.audible(take)
        if shown.finished:
            # Inpaint spans are times of the raw take: hidden here, without telling anyone
            # (the init take keeps them), and before the audio, which would re-snap them.
            blocked = w.waveform.blockSignals(True)
            try:
                w.waveform.clear_spans()
                w.waveform.set_audio(shown.audio, prepared=shown.display.get("waveform"))
            finally:
                w.waveform.blockSignals(blocked)
        else:
            w.waveform.set_audio(shown.audio, prepared=shown.display.get("waveform"))
            if self.session.init_take is not None and take is self.session.init_take:
                w.waveform.set_spans(self.session.spans)
            else:
                w.waveform.clear_spans()
        w.spectrogram.set_audio(shown.audio, prepared=shown.display.get("spectrogram"))
        if not self.player.available or not self.player.playing:
            self._show_position(self.viewer.waveform.playhead(), len(shown.audio) / SAMPLE_RATE)
        if take.step_latents is not None and len(take.step_latents):  # a list's takes: none
            w.latent_view.set_latents(take.step_latents)
        else:
            w.latent_view.clear()

    def _take_renamed(self, item: QListWidgetItem) -> None:
        take = self.session.take_for(item)
        if take is None:
            return
        text = item.text()
        if text != take.title():
            take.name = text.strip()
            take.forget_files()  # its dragged files carry the old name
            self.session.show_row(take)  # an emptied name shows the prompt again
            self.takeRenamed.emit(take)

    def rename_current(self) -> None:
        item = self.panel.takes_list.currentItem()
        if item is not None:
            self.panel.takes_list.editItem(item)

    def delete_current(self) -> None:
        row = self.panel.takes_list.currentRow()
        if row < 0:
            return
        self.session.remove_row(row)
        self.notifier.status("Take removed from the session (files already exported stay).")

    # ------------------------------------------------------------------ playback
    def _update_playback_state(self) -> None:
        ok = self.player.available
        self.viewer.play_button.setEnabled(ok)
        self.viewer.loop_check.setEnabled(ok)
        self.viewer.no_audio_label.setVisible(not ok)
        if not ok:
            reason = self.player.unavailable_reason or "No audio output device was found."
            self.viewer.play_button.setToolTip(reason)
            self.viewer.no_audio_label.setToolTip(reason)
            if reason != self._said_unavailable:  # once, not at every press of Space
                self._said_unavailable = reason
                self.notifier.notice(reason)  # never over the error or result just shown

    def toggle_play(self) -> None:
        if not self.player.available:
            self._update_playback_state()
            return
        take = self.session.current_take()
        if take is None:
            return
        try:
            if self.player.duration_seconds == 0:
                self.player.load(self.session.audible(take).audio, keep_position=False)
            playing = self.player.toggle()
        except PLAYBACK_ERRORS as exc:  # the device vanished: one sentence, no crash
            log.exception("playback failed")
            self.notifier.error(str(exc))
            self._update_playback_state()
            return
        self.viewer.play_button.setText("Pause" if playing else "Play")

    def play_from_start(self) -> None:
        take = self.session.current_take()
        if take is None or not self.player.available:
            return
        try:
            self.player.load(self.session.audible(take).audio, keep_position=False)
            self.player.seek(0.0)
            self.player.play()
            self.show_playing()
        except PLAYBACK_ERRORS as exc:
            log.exception("playback failed")
            self.notifier.error(str(exc))
            self._update_playback_state()

    def audition_current(self) -> None:
        """Up/Down reached another take (already loaded by the selection): play it now, from
        its start unless A/B is on finished audio or the two takes are tiers of the same
        latents (then from the same place)."""
        if self.session.hear_finished or self._within_tier_group:
            self._play_here()
        else:
            self.play_from_start()

    def _play_here(self) -> None:
        if self.session.current_take() is None or not self.player.available:
            return
        try:
            self.player.play()
            self.show_playing()
        except PLAYBACK_ERRORS as exc:  # the device vanished: one sentence, no crash
            log.exception("playback failed")
            self.notifier.error(str(exc))
            self._update_playback_state()

    def autoplay(self, _take: Take | None = None) -> None:
        """A new take arrived: play it from the start if Auto-play is on."""
        if self.viewer.autoplay_check.isChecked() and self.player.available:
            self.play_from_start()

    def seek(self, seconds: float) -> None:
        if self.player.available:
            self.player.seek(seconds)
        self.viewer.waveform.set_playhead(seconds)
        if not self.player.available:
            self._show_position(seconds, self.viewer.waveform.duration)

    def _loop_changed(self, on: bool) -> None:
        self.player.loop = on

    def _volume_changed(self, value: int) -> None:
        self.player.volume = value / 100

    def _tick(self) -> None:
        if not self.player.known:
            return  # still being looked up: reading `available` now would wait for it
        if not self._playback_state_shown:
            self._playback_state_shown = True
            self._update_playback_state()
        if not self.player.available:
            return
        position = self.player.position_seconds
        self.viewer.waveform.set_playhead(position)
        length = self.player.duration_seconds
        if length <= 0:  # nothing loaded yet: the selected take's length
            length = self.viewer.waveform.duration
        self._show_position(position, length)
        if not self.player.playing and self.viewer.play_button.text() == "Pause":
            self.viewer.play_button.setText("Play")

    def _show_position(self, position: float, length: float) -> None:
        self.viewer.position_label.setText(f"{min(position, length):.2f} / {length:.2f} s")

    def show_playing(self) -> None:
        """Someone started the player (an audition of a take or a library row): the button
        says Pause until it stops."""
        self.viewer.play_button.setText("Pause")

    def shutdown(self) -> None:
        self.timer.stop()
        QApplication.instance().removeEventFilter(self)
