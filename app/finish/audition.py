"""Hearing a loop's wrap point: its last seconds played into its first ones.

Hear wrap switches the player's looping on, seeks to WRAP_AUDITION_S before the end of the
finished loop (which A/B has put in the player), plays across the wrap and pauses after twice
that, putting the Loop (L) box back as it was. Turning looping on with L while a finished loop
is heard seeks the same way, so the seam is what plays next.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer

from app.common.expected_errors import PLAYBACK_ERRORS
from app.common.notifier import Notifier
from app.common.session import TakeModel
from app.takes.viewer import TakeViewer

WRAP_AUDITION_S = 2.0  # played before and after the wrap point


class WrapAudition(QObject):
    def __init__(self, viewer: TakeViewer, notifier: Notifier, session: TakeModel, player,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.viewer = viewer
        self.notifier = notifier
        self.session = session
        self.player = player
        self._timer = QTimer(self, singleShot=True)
        self._timer.timeout.connect(self._end)
        self._loop_was = False
        viewer.loop_check.toggled.connect(self._playback_loop_toggled)

    def start(self) -> None:
        """Play across the wrap of the finished loop the player holds, then pause."""
        if not self.player.available:
            self.notifier.error(self.player.unavailable_reason
                                or "No audio output device was found.")
            return
        self._loop_was = self.viewer.loop_check.isChecked()
        self.viewer.loop_check.setChecked(True)
        try:
            self._seek_before_wrap()
            self.player.play()
        except PLAYBACK_ERRORS as exc:  # the device vanished: one sentence
            self.notifier.failed("Could not play the loop", exc)
            return
        self.viewer.play_button.setText("Pause")
        self._timer.start(round(2 * WRAP_AUDITION_S * 1000))

    def running(self) -> bool:
        return self._timer.isActive()

    def stop(self) -> None:
        self._timer.stop()

    def _seek_before_wrap(self) -> None:
        self.player.seek(max(self.player.duration_seconds - WRAP_AUDITION_S, 0.0))

    def _end(self) -> None:
        self.player.pause()
        self.viewer.loop_check.setChecked(self._loop_was)

    def _playback_loop_toggled(self, on: bool) -> None:
        take = self.session.current_take()
        if (on and take is not None and take.finishing is not None and take.finishing.loop
                and self.session.audible(take).finished and not self._timer.isActive()
                and self.player.available):
            self._seek_before_wrap()
