"""Init audio: a take or a dropped/opened file as the start of audio-to-audio, and the spans
painted on the waveform that inpainting regenerates. The generation panel's init box shows it;
the waveform of the take viewer takes the drops and the painted spans; Use as init (takes panel,
Take menu) and File > Open are connected by app.shell.studio."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog

from app.common.expected_errors import FILE_ERRORS, LIBRARY_ERRORS
from app.common.notifier import Notifier
from app.common.session import TakeModel
from app.common.session_take import Take
from app.common.texts import NO_INIT, STRENGTH_HELP
from app.generate.panel import GenerationPanel
from app.widgets.waveform import WaveformView
from engines.audio_io import pcm16_from_float, read_audio
from engines.constants import MAX_INIT_S, SAMPLE_RATE, SAMPLES_PER_LATENT
from engines.error_sentences import shown

AUDIO_FILTER = "Audio files (*.wav *.flac *.ogg *.aif *.aiff *.mp3);;All files (*)"


class InpaintController(QObject):
    libraryChanged = Signal()  # an opened file was recorded in the library

    def __init__(self, panel: GenerationPanel, waveform: WaveformView, notifier: Notifier,
                 session: TakeModel, library, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.panel = panel
        self.waveform = waveform
        self.notifier = notifier
        self.session = session
        self.library = library
        panel.init_noise_slider.valueChanged.connect(self._update_strength_label)
        panel.clear_init_button.clicked.connect(self.clear_init)
        panel.span_mode_check.toggled.connect(waveform.set_span_mode)
        waveform.spansChanged.connect(self._spans_changed)
        waveform.fileDropped.connect(self.open_init_file)
        session.initChanged.connect(self._init_changed)
        session.spansRestored.connect(self._spans_restored)
        # After the takes controller has drawn the take (it connected first): tint what an
        # inpainted take had regenerated.
        session.list.currentItemChanged.connect(self._show_painted)
        session.auditionChanged.connect(self._show_painted)
        self._update_strength_label()
        self._update_init_state()

    def _update_strength_label(self, *_args) -> None:
        value = self.panel.init_noise_slider.value() / 100
        self.panel.init_noise_label.setText(f"{value:.2f} - {STRENGTH_HELP}")

    def _update_init_state(self) -> None:
        w = self.panel
        init_take, spans = self.session.init_take, self.session.spans
        has_init = init_take is not None
        w.clear_init_button.setEnabled(has_init)
        w.span_mode_check.setEnabled(has_init)
        w.init_noise_slider.setEnabled(has_init and not spans)
        if not has_init:
            w.init_label.setText(NO_INIT)
            return
        mode = f"inpainting {len(spans)} span(s)" if spans else "audio-to-audio"
        w.init_label.setText(f"{init_take.title()} ({mode})")

    # ------------------------------------------------------------------ init take
    def use_current_as_init(self) -> None:
        take = self.session.current_take()
        if take is None:
            self.notifier.error("Select a take first, then use it as init audio.")
            return
        self.session.set_init(take)

    def clear_init(self) -> None:
        self.session.clear_init()

    def _init_changed(self, take: Take | None) -> None:
        w = self.panel
        if take is None:
            w.span_mode_check.setChecked(False)
            self.waveform.clear_spans()
            self._update_init_state()
            return
        w.seconds_spin.setValue(min(take.seconds, w.seconds_spin.maximum()))
        self.session.select(take)
        self.waveform.clear_spans()
        self._update_init_state()
        self.notifier.status("Init audio set. Generate for audio-to-audio, or paint spans on "
                             "the waveform to regenerate just those parts.")

    def open_init_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.panel.window(), "Open init audio", "",
                                              AUDIO_FILTER)
        if path:
            self.open_init_file(path)

    def open_init_file(self, path: str) -> Take | None:
        """A dropped or opened file as init audio. A file that cannot be read is one sentence
        (the same read_audio gives the command line); a library that cannot keep it costs
        only the library entry, said after the init is set so the sentence stays visible."""
        try:
            audio = read_audio(path, max_seconds=MAX_INIT_S)  # no model uses more
            take = Take(prompt=Path(path).stem, pcm=pcm16_from_float(audio),
                        seed=None, model="imported", init_path=Path(path))
        except FILE_ERRORS as exc:  # one sentence, the traceback to the log
            self.notifier.failed(f"Could not read {shown(path)}", exc)
            return None
        problem = None
        try:
            take.library_id = self.library.add_imported(take.pcm, str(path), take.prompt).id
            self.libraryChanged.emit()
        except LIBRARY_ERRORS as exc:
            problem = exc
        self.session.add_take(take, select=True)
        self.session.set_init(take)
        if problem is not None:
            self.notifier.failed(f"Could not keep {shown(path)} in the library", problem)
        return take

    # ------------------------------------------------------------------ spans
    def _spans_changed(self, spans: list) -> None:
        session = self.session
        if session.init_take is None:
            return
        if session.current_take() is not session.init_take:
            return
        if session.audible(session.init_take).finished:
            return  # spans are times of the raw take; the finished one is shown
        session.spans = [tuple(s) for s in spans]
        self._update_init_state()

    def _show_painted(self, *_args) -> None:
        take = self.session.current_take()
        raw = take is not None and not self.session.audible(take).finished
        self.waveform.set_painted_spans(painted_spans(take) if raw else [])

    def _spans_restored(self) -> None:
        self.waveform.set_spans(self.session.spans)
        self._update_init_state()


def painted_spans(take: Take) -> list[tuple[float, float]]:
    """The parts (seconds) of `take` that inpainting regenerated: the request's spans as the
    sampler used them, snapped to whole latents; [] for any other take."""
    request = getattr(take.result, "request", None)
    if getattr(request, "mode", None) != "inpaint":
        return []
    latent_s = SAMPLES_PER_LATENT / SAMPLE_RATE
    return [(first * latent_s, min(stop * latent_s, take.seconds))
            for first, stop in request.regen_spans_latent]
