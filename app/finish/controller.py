"""The Finish panel's behaviour (issue 11): the selected take's finishing chain, its presets,
the trim and fade handles on the waveform, loops, A/B and the loudness readout.

The raw take is never changed. Its chain (FinishSettings) is kept on the session's Take and,
for a take the library holds, in the library (`set_finishing`); the finished audio is derived
from the raw take (or the loop made of it) and the chain on a thread pool
(app.common.background_jobs, app.finish.render) and comes back by signal. Each render is
numbered per take, and an answer that is not the latest asked for that take is dropped: the
user moved on meanwhile.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from functools import partial

from PySide6.QtCore import QObject, QTimer, Signal

from app.common.background_jobs import BackgroundJobs, JobOutcome
from app.common.expected_errors import LIBRARY_ERRORS
from app.common.gpu_service import GpuService
from app.common.library_access import UnavailableLibrary
from app.common.notifier import Notifier
from app.common.session import TakeModel
from app.common.session_take import Take
from app.finish.audition import WrapAudition
from app.finish.handles import FinishHandles
from app.finish.loop import LoopMaker
from app.finish.panel import FinishPanel
from app.finish.preset_picker import RAW, PresetPicker
from app.finish.render import figures, full_readout, prewarm_loudness, raw_audio, readout, render
from app.takes.viewer import TakeViewer
from engines.constants import SAMPLE_RATE
from engines.finish.settings import FinishSettings

log = logging.getLogger(__name__)

RENDER_DELAY_MS = 150  # a spin box being stepped or typed in renders once it settles
EDGE_S = 1e-3  # a trim handle this close to the take's edge means "no manual point"
# The raw readout waits until the new take is drawn: measuring it at once competes with the
# GUI thread for the GIL just when the window paints the take (bench/bench_gui_stall.py).
FIGURES_DELAY_MS = 250
PREWARM_DELAY_MS = 300  # once the window is up, load the loudness code off the GUI thread


def _is_raw(settings: FinishSettings) -> bool:
    """A chain that changes nothing: the take leaves as its raw 16-bit WAV, as before."""
    return settings.is_identity and settings.format == "wav16"


class FinishController(QObject):
    finishedReady = Signal(object)  # a take whose finished audio for its chain arrived
    figuresReady = Signal(object)  # a take whose raw loudness figures were measured

    """The Finish panel's behaviour; the trim and fade handles are drawn on the take viewer's
    waveform, and Hear wrap plays through its transport."""

    def __init__(self, panel: FinishPanel, viewer: TakeViewer, notifier: Notifier,
                 session: TakeModel, gpu: GpuService, player, library,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.notifier = notifier
        self.session = session
        self.player = player
        self.library = library
        self.panel = panel
        self.jobs = BackgroundJobs(self)
        self.loops = LoopMaker(notifier, session, gpu, library, self.jobs, self)
        self.handles = FinishHandles(viewer.waveform.plot_items(), self)
        self._serial = 0
        self._closed = False
        self._pending: dict[int, int] = {}  # take id -> the render it waits for
        self._raw_figures: dict[int, tuple] = {}
        self._measuring: set[int] = set()  # take ids whose raw figures are being measured
        self._marks = (0.0, 0.0)  # the kept part (s) the trim handles show
        self._timer = QTimer(self, singleShot=True, interval=RENDER_DELAY_MS)
        self._timer.timeout.connect(self.apply_now)
        self.audition = WrapAudition(viewer, notifier, session, player, self)
        self.presets = PresetPicker(panel, notifier, self.apply_now,
                                    lambda: self.current() is not None)
        panel.edited.connect(self._timer.start)
        panel.reset_trim_button.clicked.connect(self.reset_trim_points)
        panel.loop_button.clicked.connect(lambda _checked: self.apply_now())
        panel.remake_loop_button.clicked.connect(self.remake_loop)
        panel.hear_wrap_button.clicked.connect(self.hear_wrap)
        panel.ab_button.toggled.connect(self._ab_toggled)
        self.handles.moved.connect(self._handle_moved)
        session.list.currentItemChanged.connect(self._take_selected)
        session.auditionChanged.connect(lambda _take: self._update_handles())
        self.jobs.done.connect(self._job_done)
        self.loops.made.connect(self._loop_made)
        self.loops.failed.connect(self._loop_failed)
        self._show(None)
        QTimer.singleShot(PREWARM_DELAY_MS, self, self._prewarm)

    def _prewarm(self) -> None:
        """Import scipy and pyloudnorm on a pool thread while the user types the first prompt:
        imported with the first take, they held the GIL for 100-150 ms as it was drawn."""
        self.jobs.submit(("prewarm", None), prewarm_loudness)

    # ------------------------------------------------------------------ the selected take
    def _take_selected(self, current, previous) -> None:
        if self._timer.isActive():  # an edit still waiting belongs to the take left behind
            self._timer.stop()
            left = self.session.take_for(previous)
            if left is not None:
                self._render(left, self.panel.settings())
        self._show(self.session.take_for(current))

    def _show(self, take: Take | None) -> None:
        panel = self.panel
        panel.setEnabled(take is not None)
        settings = take.finishing if take is not None and take.finishing else None
        panel.set_settings(settings or FinishSettings(preset=RAW))
        panel.show_preset((settings.preset or "") if settings else RAW)
        if (take is not None and settings is not None and not self._has_audio(take)
                and take.take_id not in self._pending):
            self._render(take, settings)  # a chain restored from the library
        self._update_label(take)
        self._update_handles()
        self._update_loop_widgets(take)

    def current(self) -> Take | None:
        return self.session.current_take()

    @staticmethod
    def _has_audio(take: Take) -> bool:
        return take.finished is not None and take.finished.matches(take.finishing, take.loop)

    # ------------------------------------------------------------------ the chain
    def apply_now(self) -> None:
        """Put the panel's values into the selected take's chain and finish it off-thread."""
        self._timer.stop()
        take = self.current()
        if take is not None:
            self._render(take, self.panel.settings())

    def _render(self, take: Take, settings: FinishSettings) -> None:
        try:
            settings.validate()
        except ValueError as exc:  # one sentence; the chain stays as it was
            self.notifier.failed("Could not use these finishing settings", exc)
            return
        if settings.loop and not self._loop_fits(take, settings):
            take.finishing = settings  # rendered once the loop is made
            self._make_loop(take, settings)
            return
        if _is_raw(settings):
            take.finishing = take.finished = None
            self._pending.pop(take.take_id, None)
            self._persist(take)
            self._after_change(take)
            return
        take.finishing = settings
        if self._has_audio(take):
            self._after_change(take)
            return
        self._serial += 1
        self._pending[take.take_id] = self._serial
        loop = take.loop if settings.loop else None
        self.jobs.submit(("render", take.take_id, self._serial),
                         partial(render, take.pcm, settings, loop))
        if take is self.current():
            label = self.panel.loudness_label
            shown = label.text().split(" (")[0]
            label.setText(f"{shown} (finishing...)" if "LUFS" in shown else "Finishing...")

    def _after_change(self, take: Take) -> None:
        self.session.audition_changed(take)
        if take is self.current():
            self._update_label(take)
            self._update_handles()
            self._update_loop_widgets(take)

    def _job_done(self, outcome: JobOutcome) -> None:
        if self._closed:
            return
        kind, take_id = outcome.key[0], outcome.key[1]
        take = self.session.takes.get(take_id)
        if take is None or kind not in ("render", "figures"):
            return
        if kind == "figures":
            self._measuring.discard(take_id)
            if outcome.error is None:
                self._raw_figures[take_id] = outcome.value
                if take is self.current() and take.finishing is None:
                    self._update_label(take)
                self.figuresReady.emit(take)
            return
        if self._pending.get(take_id) != outcome.key[2]:
            return  # stale: the chain changed after this render was asked for
        del self._pending[take_id]
        if outcome.error is not None:
            self.notifier.failed("Could not finish the take", outcome.error)
            if take is self.current():
                self._update_label(take)
            return
        take.finished = outcome.value
        self._raw_figures[take_id] = take.finished.before
        self._persist(take)
        self._after_change(take)
        self.finishedReady.emit(take)

    def _persist(self, take: Take) -> None:
        """Keep the chain with the library's take (None when it leaves raw again)."""
        setter = getattr(self.library, "set_finishing", None)
        if take.library_id is None or setter is None or isinstance(self.library,
                                                                   UnavailableLibrary):
            return
        record = take.finished.finished_take.record() if take.finishing is not None else None
        try:
            setter(take.library_id, record)
        except LIBRARY_ERRORS as exc:  # the session keeps the chain either way
            self.notifier.failed("Could not keep the finishing chain in the library", exc)

    # ------------------------------------------------------------------ readout and handles
    def _update_label(self, take: Take | None) -> None:
        label = self.panel.loudness_label
        if take is None:
            label.setText("-")
            return
        if take.finishing is not None and self._has_audio(take):
            text, tip = full_readout(take.finished)
            label.setText(text)
            label.setToolTip(tip)
            for warning in take.finished.finished_take.warnings:  # said, not hidden
                self.notifier.status(warning)
            return
        figs = self._raw_figures.get(take.take_id)
        if figs is None:
            label.setText("Measuring...")
            if take.take_id not in self._measuring:
                self._measuring.add(take.take_id)
                self.jobs.submit(("figures", take.take_id),
                                 partial(lambda pcm: figures(raw_audio(pcm), SAMPLE_RATE),
                                         take.pcm), after_ms=FIGURES_DELAY_MS)
        else:
            label.setText(readout(figs, None))

    def _update_handles(self) -> None:
        take = self.current()
        settings = take.finishing if take is not None else None
        shown = (take is not None and not self.session.audible(take).finished
                 and not (settings is not None and settings.loop))
        self.handles.set_shown(shown)
        if take is None:
            return
        values = self.panel.settings()
        start, end = values.trim_in_s or 0.0, values.trim_out_s or take.seconds
        if self._has_audio(take) and "trim" in take.finished.finished_take.finished.report:
            trim = take.finished.finished_take.finished.report["trim"]
            start, end = trim["start_frame"] / SAMPLE_RATE, trim["end_frame"] / SAMPLE_RATE
        self._marks = (start, end)
        self.handles.set_marks(take.seconds, start, end, values.fade_in_ms, values.fade_out_ms)

    def _handle_moved(self, kind: str, seconds: float) -> None:
        take = self.current()
        if take is None:
            return
        start, end = self._marks
        if kind == "trim_in":
            point = min(seconds, end - 0.01)
            self.panel.set_hidden(trim_in_s=None if point <= EDGE_S else max(point, 0.0))
        elif kind == "trim_out":
            point = max(seconds, start + 0.01)
            self.panel.set_hidden(trim_out_s=None if point >= take.seconds - EDGE_S else point)
        else:
            spin = self.panel.fade_in_spin if kind == "fade_in" else self.panel.fade_out_spin
            length = seconds - start if kind == "fade_in" else end - seconds
            spin.blockSignals(True)
            spin.setValue(max(length, 0.0) * 1000)
            spin.blockSignals(False)
        self.apply_now()

    def reset_trim_points(self) -> None:
        self.panel.set_hidden(trim_in_s=None, trim_out_s=None)
        self.apply_now()

    # ------------------------------------------------------------------ loops
    def _loop_fits(self, take: Take, settings: FinishSettings) -> bool:
        loop = take.loop
        return loop is not None and loop.report.get("requested_seam_s") == settings.loop_seam_s

    def _make_loop(self, take: Take, settings: FinishSettings) -> None:
        method = (take.loop_recipe or {}).get("method") or \
            self.panel.loop_method_combo.currentData()
        if self.loops.make(take, settings.loop_seam_s, method) is None:
            self._loop_failed(take)
        elif take is self.current():
            self._update_loop_widgets(take)

    def remake_loop(self) -> None:
        """Make the selected take's loop again (the model picks a new seed)."""
        take = self.current()
        if take is None or self.loops.is_making(take):
            return
        take.loop = None
        self.panel.loop_button.setChecked(True)
        self.apply_now()

    def _loop_made(self, take: Take, loop) -> None:
        take.loop = loop
        if take.finishing is None or not take.finishing.loop:
            self._after_change(take)  # the chain left the loop meanwhile: kept aside
            return
        settings = replace(take.finishing, loop=True,
                           loop_seam_s=loop.report.get("requested_seam_s",
                                                       take.finishing.loop_seam_s))
        how = "the model" if loop.method == "model" else "crossfade"
        self.notifier.status(f"Loop made by {how}: {len(loop.audio) / SAMPLE_RATE:.2f} s, "
                             "with loop points; Hear wrap plays across its seam.")
        if take is self.current():
            self.panel.loop_button.setChecked(True)
            self.panel.ab_button.setChecked(True)  # hear what was just made
        self._render(take, settings)

    def _loop_failed(self, take: Take) -> None:
        if take.finishing is not None and take.finishing.loop:
            take.finishing = replace(take.finishing, loop=False)
            self._render(take, take.finishing)
        if take is self.current():
            self.panel.loop_button.setChecked(False)
            self._update_loop_widgets(take)

    def _update_loop_widgets(self, take: Take | None) -> None:
        panel = self.panel
        making = self.loops.is_making(take)
        looped = take is not None and take.finishing is not None and take.finishing.loop
        panel.loop_button.setText("Making loop..." if making else
                                  "Looped" if looped else "Make loop")
        panel.loop_button.setEnabled(take is not None and not making)
        panel.remake_loop_button.setEnabled(bool(looped) and not making)
        panel.hear_wrap_button.setEnabled(bool(looped) and not making)
        panel.skip_for_loop(bool(looped) or making)

    # ------------------------------------------------------------------ hearing it
    def _ab_toggled(self, finished: bool) -> None:
        self.session.set_hear_finished(finished)
        take = self.current()
        if finished and take is not None and take.finishing is None:
            self.notifier.status("This take has no finishing chain yet, so it plays raw; "
                                 "choose a preset or change a value to finish it.")

    def hear_wrap(self) -> None:
        """Play the selected take's loop across its wrap point (app.finish.audition)."""
        take = self.current()
        if take is None or take.finishing is None or not take.finishing.loop:
            self.notifier.error("Make a loop first: Hear wrap plays its last 2 s into its first "
                                "2 s.")
            return
        if not self._has_audio(take):
            self.notifier.error("The loop is still being made or finished; try Hear wrap again "
                                "in a moment.")
            return
        self.panel.ab_button.setChecked(True)  # the player now holds the finished loop
        self.audition.start()

    # ------------------------------------------------------------------ presets (PresetPicker)
    @property
    def last_preset(self) -> str:
        return self.presets.last_preset

    def choose_preset(self, name: str) -> None:
        self.presets.choose(name)

    def offer_preset(self, name: str) -> bool:
        return self.presets.offer(name)

    def finish_new_take(self, take: Take) -> None:
        """A take was just generated (and selected): finished with the preset chosen last."""
        if take is self.current() and take.finishing is None:
            self.presets.apply_to_new_take()

    def save_preset_as(self, name: str) -> str | None:
        return self.presets.save_as(name)

    def delete_current_preset(self) -> None:
        self.presets.delete_current()

    def shutdown(self) -> None:
        self._timer.stop()
        self.audition.stop()
        self.jobs.shutdown()
        self._closed = True  # an answer still queued finds the library closed: dropped
