"""The live slot in the take viewer: the waveform shows each played live render, and whichever
of the spectrogram and the latent view is in sight shows it too (the other one when its tab is
chosen: work nobody looks at is skipped while live renders come several a second). The
spectrogram is made on a thread of its own; one that a newer render overtook is never shown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject

from app.common.background_jobs import BackgroundJobs, JobOutcome
from app.takes.viewer import TakeViewer
from app.widgets.spectrogram import prepare_spectrogram

if TYPE_CHECKING:
    from app.live.render import LiveRender

# The spectrogram waits a little: while the user types, the next render (which competes for the
# same two cores) usually comes first, and a spectrogram it overtook is never computed.
SPECTROGRAM_AFTER_MS = 150


class LiveViews(QObject):
    def __init__(self, viewer: TakeViewer, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.viewer = viewer
        self.shown: LiveRender | None = None  # the render in the views, until a take is picked
        self._shown_in: set[str] = set()  # which of the spectrogram and latent views show it
        self._spectrograms = BackgroundJobs(self, threads=1)
        self._spectrograms.done.connect(self._spectrogram_ready)
        viewer.tabs.currentChanged.connect(lambda _index: self._show_tab())

    def show(self, render: LiveRender) -> None:
        self.shown, self._shown_in = render, set()
        self.viewer.waveform.set_audio(render.result.pcm, prepared=render.waveform)
        self._show_tab()

    def forget(self, *_args) -> None:
        """The views show something else now (a take picked in the list)."""
        self.shown = None

    def _show_tab(self) -> None:
        render, views = self.shown, self.viewer
        if render is None:
            return
        result = render.result
        if views.tabs.currentWidget() is views.latent_view:
            if "latent" not in self._shown_in and result.step_latents is not None \
                    and len(result.step_latents):
                self._shown_in.add("latent")
                views.latent_view.set_latents(result.step_latents)
        elif "spectrogram" not in self._shown_in:
            self._shown_in.add("spectrogram")
            pcm = result.pcm
            self._spectrograms.submit(render, lambda: prepare_spectrogram(pcm)
                                      if render is self.shown else None,
                                      after_ms=SPECTROGRAM_AFTER_MS)

    def _spectrogram_ready(self, answer: JobOutcome) -> None:
        render = self.shown
        if render is not None and answer.key is render and answer.value is not None:
            self.viewer.spectrogram.set_audio(render.result.pcm, prepared=answer.value)

    def shutdown(self) -> None:
        self._spectrograms.shutdown()
