"""Live audition (issue 23): while the Live switch is on, every pause in typing and every change
of a knob renders the take again and plays it, looping, from where the playhead is, crossfaded
from the render before (app.common.playback). The seed is locked, so only the user's edits
change the sound.

Renders go through the one GPU worker and engines.live's latest-wins scheduler: at most one in
flight and one pending, a newer change supersedes the pending one, and a render that went stale
while it ran is dropped, never played. Live renders fill one live slot - the waveform, the
spectrogram and the latent view show it (app.live.views) - and never enter the session or the
library; Keep
(Enter while live) hands the one playing to the worker, which records it as an ordinary take.
"""

from __future__ import annotations

import logging
import secrets
import statistics
from collections import deque
from time import perf_counter

from PySide6.QtCore import QObject, QTimer, Signal

from app.common.expected_errors import PLAYBACK_ERRORS
from app.common.gpu_jobs import LIVE, keep_job, live_job
from app.common.gpu_service import GpuService
from app.common.notifier import Notifier
from app.common.playback import Player
from app.common.session import TakeModel
from app.generate.panel import GenerationPanel
from app.generate.requests import SEED_RANGE, panel_request, read_seed
from app.live.keys import EnterKeeps
from app.live.readout import HeardRender, latency_words, slow_words
from app.live.render import LiveAsk, LiveRender, render_live
from app.live.views import LiveViews
from app.takes.viewer import TakeViewer
from engines.errors import StudioError
from engines.live.scheduler import FAILED, RECENT_RENDERS, LiveOutcome, LiveScheduler

log = logging.getLogger(__name__)

# Typing at about 8 characters a second leaves 100-150 ms between keys inside a word and more
# between words; 200 ms waits out most in-word gaps (bench/bench_live.py measures the choice).
TYPING_DEBOUNCE_MS = 200
KNOB_DEBOUNCE_MS = 30  # one arrow click or a slider's burst of values: one change
PAUSE_DEBOUNCE_MS = 600  # when live is slower than typing: a real pause in typing only
SHOW_AFTER_MS = 15  # the views are drawn once the player has its next block (11.6 ms) going
HEARD_POLL_MS = 5  # how often the readout asks the player (the time itself is the callback's)
HEARD_WAIT_S = 5.0  # a render not heard by then (paused player) stops being waited for
HISTORY = 1000
RULE_AFTER_RENDERS = 3  # renders finished before "slower than typing" is judged


class LiveController(QObject):
    heard = Signal(object)  # HeardRender: a live render's first sample was played
    playingStarted = Signal()  # live audition started the player (the Play button says Pause)
    liveChanged = Signal(bool)  # live audition went on or off (the status bar's Live word)

    def __init__(self, panel: GenerationPanel, viewer: TakeViewer, notifier: Notifier,
                 session: TakeModel, gpu: GpuService, player: Player,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.panel, self.viewer, self.notifier = panel, viewer, notifier
        self.session, self.gpu, self.player = session, gpu, player
        self.scheduler: LiveScheduler[LiveAsk, LiveRender] = LiveScheduler()
        self.live = False
        self.typing_debounce_ms = TYPING_DEBOUNCE_MS
        self.current: LiveRender | None = None  # the live slot: the render playing now
        self.current_serial = 0  # its change's serial (HeardRender.serial once heard)
        self.history: deque[HeardRender] = deque(maxlen=HISTORY)
        self._kept: LiveRender | None = None
        self._seed = 0
        self._restore = (False, False)  # seed lock and loop as they were before live
        self._last_change = 0.0
        self._init_float: tuple[object, object] | None = None  # (init take, its float audio)
        self.slow = False  # live is slower than typing here: it renders on real pauses only
        self._awaiting: tuple[int, LiveOutcome, float] | None = None
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.timeout.connect(self._submit)
        self._heard_poll = QTimer(self)
        self._heard_poll.setInterval(HEARD_POLL_MS)
        self._heard_poll.timeout.connect(self._poll_heard)
        self.views = LiveViews(viewer, self)
        panel.live_toggle.toggled.connect(self.set_live)
        panel.keep_live_button.clicked.connect(self.keep)
        for edit in (panel.prompt_edit, panel.negative_edit, panel.seed_edit):
            edit.textChanged.connect(self._typed)
        for spin in (panel.seconds_spin, panel.steps_spin, panel.cfg_spin, panel.apg_spin,
                     panel.init_noise_slider):
            spin.valueChanged.connect(self._knob)
        for combo in (panel.model_combo, panel.decoder_combo, panel.precision_combo,
                      panel.codec_tier_combo):
            combo.currentIndexChanged.connect(self._knob)
        # an adapter's strength slider or switch, or a file added or removed: a knob too
        panel.adapters_panel.changed.connect(self._knob)
        session.initChanged.connect(self._knob)
        session.spansRestored.connect(self._knob)
        session.list.currentItemChanged.connect(self.views.forget)  # a picked take shows now
        gpu.progress.connect(self._progress)
        self._enter = EnterKeeps(panel.window, lambda: self.live, self.keep, self)

    # ------------------------------------------------------------------ the switch
    def set_live(self, on: bool) -> None:
        if bool(on) == self.live:
            return
        if on:
            self._start()
        else:
            self._stop()
        blocked = self.panel.live_toggle.blockSignals(True)
        self.panel.live_toggle.setChecked(self.live)
        self.panel.live_toggle.blockSignals(blocked)
        self.liveChanged.emit(self.live)

    def _start(self) -> None:
        try:
            seed = read_seed(self.panel)
        except StudioError as exc:
            self.notifier.error(str(exc))
            return
        self._seed = secrets.randbelow(SEED_RANGE) if seed is None else seed
        self._restore = (self.panel.seed_lock.isChecked(), self.viewer.loop_check.isChecked())
        self.panel.seed_edit.setText(str(self._seed))
        self.panel.seed_lock.setChecked(True)
        self.viewer.loop_check.setChecked(True)
        self.live = True
        self.notifier.status(f"Live audition on: the seed is locked at {self._seed}, so only "
                             f"your edits change the sound; each pause in typing plays the take "
                             f"again, looping. Enter keeps it.")
        self._changed(0)

    def _stop(self) -> None:
        self.live = False
        self._debounce.stop()
        self._heard_poll.stop()
        self._awaiting = None
        self.scheduler.withdraw()  # nothing pending is rendered, nothing running is played
        self.current = None
        self.panel.seed_lock.setChecked(self._restore[0])
        self.viewer.loop_check.setChecked(self._restore[1])
        self.panel.keep_live_button.setEnabled(False)
        self.panel.live_latency_label.setText("")
        self.notifier.status("Live audition off; what played is not kept (Keep it while live "
                             "next time).")

    # ------------------------------------------------------------------ changes
    def _typed(self, *_args) -> None:
        self._changed(self.typing_debounce_ms)

    def _knob(self, *_args) -> None:
        self._changed(KNOB_DEBOUNCE_MS)

    def _changed(self, wait_ms: int) -> None:
        if not self.live:
            return
        self._last_change = perf_counter()
        if self.slow:  # typing renders on real pauses; a dragged knob on its pauses too
            wait_ms = PAUSE_DEBOUNCE_MS if wait_ms >= self.typing_debounce_ms else \
                max(wait_ms, self.typing_debounce_ms)
        self._debounce.start(wait_ms)

    def _submit(self) -> None:
        if not self.live:
            return
        try:
            seed = read_seed(self.panel)
            if seed is not None:
                self._seed = seed
            request = panel_request(self.panel, self.session, self._seed, self._init_audio())
        except StudioError as exc:
            self._say(str(exc))
            return
        parent_id, source = self.session.init_lineage()
        self.scheduler.submit(LiveAsk(request, parent_id, source), changed_at=self._last_change)
        try:
            self.gpu.submit(live_job(self.scheduler, render_live))
        except StudioError as exc:  # the worker is gone (the window is closing)
            log.info("live render not submitted: %s", exc)

    def _init_audio(self):
        """The init take as float, converted once per init take rather than per change."""
        take = self.session.init_take
        if take is None:
            return None
        if self._init_float is None or self._init_float[0] is not take:
            self._init_float = (take, take.float_audio())
        return self._init_float[1]

    # ------------------------------------------------------------------ renders
    def _progress(self, progress) -> None:
        if progress.key.kind == LIVE and isinstance(progress.value, LiveOutcome):
            self._rendered(progress.value)

    def _rendered(self, outcome: LiveOutcome) -> None:
        self._update_slow()
        if outcome.kind == FAILED and self.live:
            error = outcome.error or RuntimeError("the render ended without a result")
            self._say(self.notifier.failed("Could not render the live take", error))
            return
        if not outcome.played or not self.live:  # stale, or live was switched off meanwhile
            return
        render: LiveRender = outcome.result
        self.current, self.current_serial = render, outcome.job.serial
        self.panel.keep_live_button.setEnabled(True)
        self._play(render, outcome, perf_counter())
        # drawn a moment later: the audio callback takes the new render first, and drawing
        # (pyqtgraph, tens of ms on this machine) never holds the first sample back
        QTimer.singleShot(SHOW_AFTER_MS, self,
                          lambda: self.views.show(render) if render is self.current else None)

    def _play(self, render: LiveRender, outcome: LiveOutcome, delivered: float) -> None:
        if not self.player.available:
            self._record(outcome, delivered, None)
            return
        try:
            serial = self.player.crossfade_to(render.result.pcm)
            if not self.player.playing:
                self.player.play()
                self.playingStarted.emit()
        except PLAYBACK_ERRORS as exc:  # the device went away: one sentence
            self._say(self.notifier.failed("Could not play the live take", exc))
            return
        self._awaiting = (serial, outcome, delivered)
        self._heard_poll.start()

    def _poll_heard(self) -> None:
        if self._awaiting is None:
            self._heard_poll.stop()
            return
        serial, outcome, delivered = self._awaiting
        heard_at = self.player.first_sample_at(serial)
        if heard_at is None:
            if perf_counter() - delivered > HEARD_WAIT_S:
                self._awaiting = None
            return
        self._awaiting = None
        self._heard_poll.stop()
        self._record(outcome, delivered, heard_at)

    def _record(self, outcome: LiveOutcome, delivered: float, heard_at: float | None) -> None:
        request = outcome.job.request
        heard = HeardRender(request.serial, request.changed_at, request.submitted_at,
                            outcome.finished_at, delivered, heard_at, outcome.render_ms)
        self.history.append(heard)
        self._show_readout()
        self.heard.emit(heard)

    def _show_readout(self) -> None:
        """The newest latency, and while live is slower than typing, that it is."""
        words = latency_words(self.history[-1]) if self.history else ""
        if self.slow:
            words = f"{words} {slow_words(self._typical_render_ms())}".strip()
        self.panel.live_latency_label.setText(words)

    def _typical_render_ms(self) -> float:
        recent = self.scheduler.stats().render_ms[-RECENT_RENDERS:]
        return statistics.median(recent) if recent else 0.0

    def _update_slow(self) -> None:
        # A few renders first: the first one of a model set also loads it (seconds, once).
        finished = len(self.scheduler.stats().render_ms)
        slow = (finished >= RULE_AFTER_RENDERS
                and self.scheduler.slower_than_typing(self.typing_debounce_ms))
        if slow == self.slow:
            return
        self.slow = slow
        if not self.live:
            return
        self._show_readout()
        self.notifier.status(slow_words(self._typical_render_ms()) if slow else
                             "Live keeps up with typing again: it renders at every short pause.")

    def _say(self, text: str) -> None:
        self.panel.live_latency_label.setText(text)
        self.notifier.status(text)

    # ------------------------------------------------------------------ keep
    def keep(self) -> None:
        """The live take playing now joins the session and the library, once."""
        render = self.current
        if not self.live or render is None:
            self.notifier.status("Nothing live to keep: turn Live on and let a take play first.")
            return
        if render is self._kept:
            self.notifier.status("This live take is kept already; change something to keep "
                                 "another.")
            return
        self._kept = render
        self.panel.keep_live_button.setEnabled(False)
        try:
            self.gpu.submit(keep_job(render.result, render.ask.parent_id,
                                     render.ask.init_source))
        except StudioError as exc:
            self.notifier.failed("Could not keep the live take", exc)
            return
        self.notifier.status(f"Keeping the live take (seed {render.result.seed}) in the session "
                             f"and the library...")

    def shutdown(self) -> None:
        """Nothing more is rendered or played; the spectrogram thread ends."""
        self.live = False
        self._debounce.stop()
        self._heard_poll.stop()
        self.scheduler.withdraw()
        self.scheduler.close()
        self.views.shutdown()
        self._enter.shutdown()
