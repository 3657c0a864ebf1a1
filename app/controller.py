"""Behaviour of the main window: generation, takes, playback, views, init audio, export."""

from __future__ import annotations

import logging
import secrets
from pathlib import Path

from PySide6.QtCore import QEvent, QMimeData, QObject, Qt, QTimer, QUrl
from PySide6.QtGui import QDrag, QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QFileDialog,
    QLineEdit,
    QListWidgetItem,
    QPlainTextEdit,
)

from app.export import drag_file, take_basename, write_take
from app.main_window import NEGATIVE_OFF_HELP, STRENGTH_HELP, MainWindow
from app.takes import Take
from app.worker import Batch, Finished, GpuWorker, Job, WorkerHost
from engines import paths
from engines.catalog import MODEL_SETS, get_model_set
from engines.errors import StudioError
from engines.request import GenerationRequest, validate_request

log = logging.getLogger(__name__)

TAKE_ROLE = Qt.ItemDataRole.UserRole + 1
SEED_RANGE = 2**32
PLAYHEAD_MS = 30
PAGE_LIMIT = 500
AUDIO_FILTER = "Audio files (*.wav *.flac *.ogg *.aif *.aiff *.mp3);;All files (*)"
SAVE_FILTERS = {"WAV 16-bit (*.wav)": "wav16", "WAV 24-bit (*.wav)": "wav24",
                "FLAC (*.flac)": "flac", "OGG Vorbis (*.ogg)": "ogg"}


def _make_generator():
    """Runs on the GPU worker thread (the Generator owns every engine object)."""
    from engines.generator import Generator
    from engines.models.inventory import default_catalog

    return Generator(default_catalog())


class StudioController(QObject):
    def __init__(self, window: MainWindow, *, start_worker: bool = True,
                 player=None, make_generator=_make_generator) -> None:
        super().__init__(window)
        self.w = window
        self.takes: dict[int, Take] = {}
        self.init_take: Take | None = None
        self.spans: list[tuple[float, float]] = []
        self.batch_id = 0
        self.running = False
        self.last_request: GenerationRequest | None = None
        from engines.models.inventory import default_catalog

        self.catalog = default_catalog()
        self.library = self._open_library()
        self.deleted_ids: list[int] = []
        self.task_counter = 0
        self.models_dialog = None
        self.player = player if player is not None else self._make_player()
        from app.displaydata import for_result

        self.worker = GpuWorker(make_generator, for_result, self._open_library)
        self.host = WorkerHost(self.worker, self) if start_worker else None
        self._connect()
        self._fill_models()
        self._update_negative_state()
        self._update_strength_label()
        self._update_init_state()
        self._update_playback_state()
        self._connect_library()
        self.refresh_library()
        self.timer = QTimer(self)
        self.timer.setInterval(PLAYHEAD_MS)
        self.timer.timeout.connect(self._tick)
        self.timer.start()
        notice = getattr(self.library, "notice", None)
        self.status(notice or "Ready. Type a prompt and press Ctrl+Enter.")

    # ------------------------------------------------------------------ setup
    @staticmethod
    def _make_player():
        from app.playback import Player

        return Player()

    def _connect(self) -> None:
        w = self.w
        w.generate_button.clicked.connect(self.generate)
        w.reroll_button.clicked.connect(self.reroll)
        w.cancel_button.clicked.connect(self.cancel)
        w.dice_button.clicked.connect(self.roll_dice)
        w.cfg_spin.valueChanged.connect(self._update_negative_state)
        w.init_noise_slider.valueChanged.connect(self._update_strength_label)
        w.model_combo.currentIndexChanged.connect(self._model_changed)
        for button in w.preset_buttons:
            button.clicked.connect(lambda _=False, b=button: w.seconds_spin.setValue(
                float(b.property("seconds"))))
        w.takes_list.currentItemChanged.connect(self._take_selected)
        w.takes_list.itemChanged.connect(self._take_renamed)
        w.takes_list.drag_source = self.mime_for_item
        w.delete_button.clicked.connect(self.delete_current)
        w.delete_action.triggered.connect(self.delete_current)
        w.rename_action.triggered.connect(self.rename_current)
        w.use_init_button.clicked.connect(self.use_current_as_init)
        w.use_init_action.triggered.connect(self.use_current_as_init)
        w.clear_init_button.clicked.connect(self.clear_init)
        w.span_mode_check.toggled.connect(w.waveform.set_span_mode)
        w.waveform.spansChanged.connect(self._spans_changed)
        w.waveform.seekRequested.connect(self.seek)
        w.waveform.fileDropped.connect(self.open_init_file)
        w.waveform.dragOutRequested.connect(self.start_drag_current)
        w.export_button.clicked.connect(self.save_as)
        w.save_action.triggered.connect(self.save_as)
        w.copy_button.clicked.connect(self.copy_current)
        w.copy_action.triggered.connect(self.copy_current)
        w.open_action.triggered.connect(self.open_init_dialog)
        w.quit_action.triggered.connect(w.close)
        w.models_action.triggered.connect(self.open_models_dialog)
        w.play_button.clicked.connect(self.toggle_play)
        w.loop_check.toggled.connect(self._loop_changed)
        w.volume_slider.valueChanged.connect(self._volume_changed)
        self._volume_changed(w.volume_slider.value())
        if self.worker is not None:
            self.worker.progress.connect(self._progress)
            self.worker.takeReady.connect(self._take_ready)
            self.worker.failed.connect(self._failed)
            self.worker.cancelled.connect(self._cancelled)
            self.worker.batchDone.connect(self._batch_done)
        for keys in ("Ctrl+Return", "Ctrl+Enter"):
            shortcut = QShortcut(QKeySequence(keys), w)
            shortcut.setContext(Qt.ShortcutContext.WindowShortcut)
            shortcut.activated.connect(self.generate)
        w.installEventFilter(self)
        QApplication.instance().installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt override
        """Space plays/pauses and L loops, unless the user is typing."""
        if event.type() == QEvent.Type.KeyPress and event.modifiers() in (
                Qt.KeyboardModifier.NoModifier,):
            focus = QApplication.focusWidget()
            typing = isinstance(focus, QLineEdit | QPlainTextEdit | QAbstractSpinBox)
            if focus is not None and focus.window() is self.w and not typing:
                if event.key() == Qt.Key.Key_Space:
                    self.toggle_play()
                    return True
                if event.key() == Qt.Key.Key_L:
                    self.w.loop_check.toggle()
                    return True
        return False

    # ------------------------------------------------------------------ status
    def status(self, text: str, timeout_ms: int = 0) -> None:
        self.w.statusBar().showMessage(text, timeout_ms)

    def error(self, text: str) -> None:
        log.info("shown to the user: %s", text)
        self.status(text)

    # ------------------------------------------------------------------ models
    def _fill_models(self) -> None:
        combo = self.w.model_combo
        combo.blockSignals(True)
        combo.clear()
        model = combo.model()
        for key, model_set in MODEL_SETS.items():
            answer = self.catalog.resolve(key)
            combo.addItem(model_set.label, key)
            index = combo.count() - 1
            item = model.item(index)
            if not answer.runnable:
                item.setEnabled(False)
                combo.setItemData(index, answer.reason, Qt.ItemDataRole.ToolTipRole)
            else:
                combo.setItemData(index, f"Runs on {answer.backend}.",
                                  Qt.ItemDataRole.ToolTipRole)
        demo = combo.findData("demo")
        first_runnable = next((i for i in range(combo.count())
                               if model.item(i).isEnabled() and combo.itemData(i) != "demo"),
                              demo)
        combo.setCurrentIndex(first_runnable)
        combo.blockSignals(False)
        self._model_changed()

    def current_model(self) -> str:
        return self.w.model_combo.currentData() or "demo"

    def _model_changed(self, *_args) -> None:
        key = self.current_model()
        model_set = get_model_set(key)
        w = self.w
        w.decoder_combo.clear()
        w.decoder_combo.addItem(f"Paired ({model_set.default_decoder})", None)
        if key != "demo":
            for decoder in ("same-s", "same-l"):
                w.decoder_combo.addItem(decoder, decoder)
        w.precision_combo.clear()
        w.precision_combo.addItem(f"Default ({model_set.default_precision})", None)
        gpu = self.catalog.gpu
        for precision in ("fp16", "fp32", "fp8"):
            w.precision_combo.addItem(precision, precision)
            index = w.precision_combo.count() - 1
            reason = None
            if key == "demo" and precision != "fp32":
                reason = "The demo model has fp32 weights only."
            elif precision == "fp8" and (gpu is None or not gpu.has_fp8):
                reason = ("fp8 needs FP8 tensor cores (compute capability 8.9 or newer); "
                          "this machine has none.")
            if reason:
                w.precision_combo.model().item(index).setEnabled(False)
                w.precision_combo.setItemData(index, reason, Qt.ItemDataRole.ToolTipRole)
        w.seconds_spin.setMaximum(model_set.max_seconds)
        banner = model_set.label
        if key == "demo":
            banner += " - a procedural stand-in that runs on any CPU."
        w.model_banner.setText(banner)

    # ------------------------------------------------------------------ panel state
    def _update_negative_state(self, *_args) -> None:
        active = self.w.cfg_spin.value() != 1.0
        self.w.negative_edit.setEnabled(active)
        self.w.negative_hint.setVisible(not active)
        self.w.negative_edit.setToolTip("" if active else NEGATIVE_OFF_HELP)

    def _update_strength_label(self, *_args) -> None:
        value = self.w.init_noise_slider.value() / 100
        self.w.init_noise_label.setText(f"{value:.2f} - {STRENGTH_HELP}")

    def _update_init_state(self) -> None:
        w = self.w
        has_init = self.init_take is not None
        w.clear_init_button.setEnabled(has_init)
        w.span_mode_check.setEnabled(has_init)
        w.init_noise_slider.setEnabled(has_init and not self.spans)
        if not has_init:
            w.init_label.setText("None: drop a file on the waveform or use File > Open.")
            return
        mode = (f"inpainting {len(self.spans)} span(s)" if self.spans
                else "audio-to-audio")
        w.init_label.setText(f"{self.init_take.title()} ({mode})")

    def _update_playback_state(self) -> None:
        ok = self.player.available
        self.w.play_button.setEnabled(ok)
        self.w.loop_check.setEnabled(ok)
        if not ok:
            reason = self.player.unavailable_reason or "No audio output device was found."
            self.w.play_button.setToolTip(reason)
            self.status(reason)

    # ------------------------------------------------------------------ requests
    def read_seed(self) -> int | None:
        text = self.w.seed_edit.text().strip()
        if not text:
            return None
        try:
            value = int(text)
        except ValueError:
            raise StudioError(f"The seed '{text}' is not a whole number; type one from 0 to "
                              f"{SEED_RANGE - 1} or clear the field.") from None
        if not 0 <= value < SEED_RANGE:
            raise StudioError(f"The seed {value} is out of range; choose one from 0 to "
                              f"{SEED_RANGE - 1}.")
        return value

    def build_request(self, seed: int, init_audio=None) -> GenerationRequest:
        """The panel as a request; `init_audio` (float) may be passed in so variations share
        one conversion of the init take."""
        w = self.w
        kwargs = dict(
            prompt=w.prompt_edit.toPlainText(), negative_prompt=w.negative_edit.text(),
            model=self.current_model(), decoder=w.decoder_combo.currentData(),
            precision=w.precision_combo.currentData(), seconds=w.seconds_spin.value(),
            steps=w.steps_spin.value(), seed=seed, cfg=w.cfg_spin.value(),
            apg=w.apg_spin.value())
        if self.init_take is not None:
            kwargs["init_audio"] = init_audio if init_audio is not None \
                else self.init_take.float_audio()
            if self.spans:
                kwargs["inpaint_spans"] = list(self.spans)
            else:
                kwargs["init_noise_level"] = w.init_noise_slider.value() / 100
        return GenerationRequest(**kwargs)

    def start_seed(self) -> int:
        seed = self.read_seed()
        if seed is not None and self.w.seed_lock.isChecked():
            return seed
        return secrets.randbelow(SEED_RANGE)

    def generate(self) -> None:
        if self.running:
            self.status("A generation is already running; wait for it or press Cancel.")
            return
        try:
            first = self.start_seed()
            count = self.w.variations_spin.value()
            init = self.init_take.float_audio() if self.init_take is not None else None
            requests = [self.build_request((first + i) % SEED_RANGE, init) for i in range(count)]
            validate_request(requests[0], get_model_set(requests[0].model).max_seconds)
        except StudioError as exc:
            self.error(str(exc))
            return
        self._submit(requests)

    def reroll(self) -> None:
        """Same settings, one take, a new random seed."""
        if self.running:
            return
        try:
            request = self.build_request(secrets.randbelow(SEED_RANGE))
            validate_request(request, get_model_set(request.model).max_seconds)
        except StudioError as exc:
            self.error(str(exc))
            return
        self._submit([request])

    def _submit(self, requests: list[GenerationRequest], replace_id: int | None = None) -> None:
        self.batch_id += 1
        parent = self.init_take.library_id if self.init_take is not None else None
        source = None
        if self.init_take is not None and self.init_take.init_path is not None:
            source = str(self.init_take.init_path)
        jobs = [Job(request=r, index=i, total=len(requests), label=r.prompt,
                    replace_id=replace_id, parent_id=parent, init_source=source)
                for i, r in enumerate(requests)]
        self.running = True
        self.last_request = requests[0]
        self._set_busy(True)
        self.status(f"Generating {len(requests)} take(s)...")
        if self.host is None:
            raise RuntimeError("the GPU worker is not running")
        self.host.submit(Batch(self.batch_id, jobs))

    def cancel(self) -> None:
        if self.running and self.host is not None:
            self.host.cancel()
            self.status("Cancelling after the current step...")

    def roll_dice(self) -> None:
        self.w.seed_edit.setText(str(secrets.randbelow(SEED_RANGE)))

    def _set_busy(self, busy: bool) -> None:
        self.w.generate_button.setEnabled(not busy)
        self.w.reroll_button.setEnabled(not busy)
        self.w.cancel_button.setEnabled(busy)

    # ------------------------------------------------------------------ worker signals
    def _progress(self, batch, index, total, stage, done, steps) -> None:
        what = {"text": "reading the prompt", "encode": "encoding the init audio",
                "sample": f"step {done}/{steps}", "decode": "decoding"}.get(stage, stage)
        self.status(f"Take {index + 1}/{total}: {what}")

    def _take_ready(self, finished: Finished) -> None:
        result = finished.result
        req = result.request
        init_path = self.init_take.init_path if self.init_take is not None else None
        take = Take(prompt=req.prompt, pcm=result.pcm, seed=result.seed, model=req.model,
                    result=result, init_path=init_path, display=finished.display)
        take.library_id = finished.library_id
        if finished.library_error:
            self.error(f"The take is in the session but not in the library: "
                       f"{finished.library_error}")
        self.refresh_library()
        self.add_take(take, select=True)
        self.w.seed_edit.setText(str(result.seed))
        self.w.seed_used_label.setText(f"Seed used: {result.seed}")
        for warning in result.warnings:
            log.info("warning: %s", warning)
        ms = result.timings_ms.get("total", 0.0)
        note = f" ({result.warnings[0]})" if result.warnings else ""
        self.status(f"Take {finished.job.index + 1}/{finished.job.total} ready: seed "
                    f"{result.seed}, {take.seconds:.2f} s in {ms:.0f} ms on {result.backend}"
                    f"{note}")
        if self.w.autoplay_check.isChecked() and self.player.available:
            self.play_from_start()

    def _failed(self, batch: int, message: str) -> None:
        self.error(message)

    def _cancelled(self, batch: int) -> None:
        self.status("Cancelled; takes already finished are kept.")

    def _batch_done(self, batch: int) -> None:
        if batch == self.batch_id:
            self.running = False
            self._set_busy(False)

    # ------------------------------------------------------------------ takes
    def add_take(self, take: Take, select: bool = True) -> QListWidgetItem:
        self.takes[take.take_id] = take
        item = QListWidgetItem(take.title())
        item.setData(TAKE_ROLE, take.take_id)
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsEditable | Qt.ItemFlag.ItemIsDragEnabled)
        item.setToolTip(take.prompt)
        lst = self.w.takes_list
        lst.blockSignals(True)
        lst.addItem(item)
        lst.blockSignals(False)
        if select:
            lst.setCurrentItem(item)
        return item

    def take_for(self, item: QListWidgetItem | None) -> Take | None:
        if item is None:
            return None
        return self.takes.get(item.data(TAKE_ROLE))

    def current_take(self) -> Take | None:
        return self.take_for(self.w.takes_list.currentItem())

    def _take_selected(self, current, _previous) -> None:
        take = self.take_for(current)
        if take is None:
            self.w.waveform.clear()
            self.w.spectrogram.clear()
            self.w.latent_view.clear()
            return
        self.show_take(take)
        if self.player.available:
            self.player.load(take.pcm, keep_position=True)  # instant A/B while playing

    def show_take(self, take: Take) -> None:
        w = self.w
        w.waveform.set_audio(take.pcm, prepared=take.display.get("waveform"))
        if self.init_take is not None and take is self.init_take:
            w.waveform.set_spans(self.spans)
        else:
            w.waveform.clear_spans()
        w.spectrogram.set_audio(take.pcm, prepared=take.display.get("spectrogram"))
        if take.step_latents is not None:
            w.latent_view.set_latents(take.step_latents)
        else:
            w.latent_view.clear()

    def _take_renamed(self, item: QListWidgetItem) -> None:
        take = self.take_for(item)
        if take is None:
            return
        text = item.text()
        if text != take.title():
            take.name = text.strip()
            self.w.takes_list.blockSignals(True)
            item.setText(take.title())
            self.w.takes_list.blockSignals(False)

    def rename_current(self) -> None:
        item = self.w.takes_list.currentItem()
        if item is not None:
            self.w.takes_list.editItem(item)

    def delete_current(self) -> None:
        lst = self.w.takes_list
        row = lst.currentRow()
        if row < 0:
            return
        take = self.take_for(lst.item(row))
        lst.takeItem(row)
        if take is not None:
            self.takes.pop(take.take_id, None)
            if take is self.init_take:
                self.clear_init()
        self.status("Take removed from the session (files already exported stay).")

    # ------------------------------------------------------------------ init audio
    def use_current_as_init(self) -> None:
        take = self.current_take()
        if take is None:
            self.error("Select a take first, then use it as init audio.")
            return
        self.set_init(take)

    def set_init(self, take: Take) -> None:
        self.init_take = take
        self.spans = []
        self.w.seconds_spin.setValue(min(take.seconds, self.w.seconds_spin.maximum()))
        item = self._item_for(take)
        if item is not None:
            self.w.takes_list.setCurrentItem(item)
        self.w.waveform.clear_spans()
        self._update_init_state()
        self.status("Init audio set. Generate for audio-to-audio, or paint spans on the "
                    "waveform to regenerate just those parts.")

    def clear_init(self) -> None:
        self.init_take = None
        self.spans = []
        self.w.span_mode_check.setChecked(False)
        self.w.waveform.clear_spans()
        self._update_init_state()

    def open_init_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.w, "Open init audio", "", AUDIO_FILTER)
        if path:
            self.open_init_file(path)

    def open_init_file(self, path: str) -> Take | None:
        from engines.audio_io import pcm16_from_float, read_audio

        try:
            audio = read_audio(path)
        except StudioError as exc:
            self.error(str(exc))
            return None
        take = Take(prompt=Path(path).stem, pcm=pcm16_from_float(audio), seed=None,
                    model="imported", init_path=Path(path))
        try:
            take.library_id = self.library.add_imported(take.pcm, str(path), take.prompt).id
            self.refresh_library()
        except StudioError as exc:
            self.error(str(exc))
        self.add_take(take, select=True)
        self.set_init(take)
        return take

    def _spans_changed(self, spans: list) -> None:
        if self.init_take is None:
            return
        if self.current_take() is not self.init_take:
            return
        self.spans = [tuple(s) for s in spans]
        self._update_init_state()

    def _item_for(self, take: Take) -> QListWidgetItem | None:
        lst = self.w.takes_list
        for row in range(lst.count()):
            if lst.item(row).data(TAKE_ROLE) == take.take_id:
                return lst.item(row)
        return None

    # ------------------------------------------------------------------ export
    def takes_dir(self) -> Path:
        return paths.library_dir() / "takes"

    def mime_for_take(self, take: Take) -> QMimeData | None:
        try:
            path = drag_file(take, self.takes_dir())
        except StudioError as exc:
            self.error(str(exc))
            return None
        data = QMimeData()
        data.setUrls([QUrl.fromLocalFile(str(path))])
        return data

    def mime_for_item(self, item: QListWidgetItem) -> QMimeData | None:
        take = self.take_for(item)
        return None if take is None else self.mime_for_take(take)

    def start_drag_current(self) -> None:
        take = self.current_take()
        if take is None:
            return
        data = self.mime_for_take(take)
        if data is None:
            return
        drag = QDrag(self.w.waveform)
        drag.setMimeData(data)
        drag.exec(Qt.DropAction.CopyAction)

    def copy_current(self) -> None:
        take = self.current_take()
        if take is None:
            self.error("Select a take to copy.")
            return
        data = self.mime_for_take(take)
        if data is not None:
            data.setText(data.urls()[0].toString())
            QGuiApplication.clipboard().setMimeData(data)
            self.status(f"Copied {data.urls()[0].toLocalFile()} to the clipboard.")

    def save_as(self) -> None:
        take = self.current_take()
        if take is None:
            self.error("Select a take to save.")
            return
        suggested = str(Path.home() / f"{take_basename(take.prompt, take.seed)}.wav")
        path, chosen = QFileDialog.getSaveFileName(self.w, "Save take as", suggested,
                                                   ";;".join(SAVE_FILTERS))
        if path:
            self.save_take(take, Path(path), SAVE_FILTERS.get(chosen))

    def save_take(self, take: Take, path: Path, fmt: str | None = None) -> Path | None:
        from engines.audio_io import format_for_path

        try:
            fmt = fmt or format_for_path(path)
            written = write_take(take, path.parent, fmt, name=path.stem)
        except StudioError as exc:
            self.error(str(exc))
            return None
        except OSError as exc:
            self.error(f"Could not save to {path.parent} ({exc.strerror or exc}); choose "
                       f"another folder.")
            return None
        self.status(f"Saved {written} with its .json sidecar.")
        return written

    # ------------------------------------------------------------------ playback
    def toggle_play(self) -> None:
        if not self.player.available:
            self._update_playback_state()
            return
        take = self.current_take()
        if take is None:
            return
        try:
            if self.player.duration_seconds == 0:
                self.player.load(take.pcm, keep_position=False)
            playing = self.player.toggle()
        except Exception as exc:  # noqa: BLE001 - the device vanished: one sentence, no crash
            log.exception("playback failed")
            self.error(str(exc))
            self._update_playback_state()
            return
        self.w.play_button.setText("Pause" if playing else "Play")

    def play_from_start(self) -> None:
        take = self.current_take()
        if take is None or not self.player.available:
            return
        try:
            self.player.load(take.pcm, keep_position=False)
            self.player.seek(0.0)
            self.player.play()
            self.w.play_button.setText("Pause")
        except Exception as exc:  # noqa: BLE001
            log.exception("playback failed")
            self.error(str(exc))
            self._update_playback_state()

    def seek(self, seconds: float) -> None:
        if self.player.available:
            self.player.seek(seconds)
        self.w.waveform.set_playhead(seconds)

    def _loop_changed(self, on: bool) -> None:
        self.player.loop = on

    def _volume_changed(self, value: int) -> None:
        self.player.volume = value / 100

    def _tick(self) -> None:
        if not self.player.available:
            return
        position = self.player.position_seconds
        self.w.waveform.set_playhead(position)
        self.w.position_label.setText(f"{position:.2f} / {self.player.duration_seconds:.2f} s")
        if not self.player.playing and self.w.play_button.text() == "Pause":
            self.w.play_button.setText("Play")

    # ------------------------------------------------------------------ models
    def open_models_dialog(self):
        from app.model_manager import ModelManagerDialog

        if self.models_dialog is None:
            self.models_dialog = ModelManagerDialog(self, self.w)
        self.models_dialog.show()
        self.models_dialog.raise_()
        return self.models_dialog

    def models_changed(self) -> None:
        """New files or folders: re-read what can run here."""
        from engines.models.inventory import default_catalog

        self.catalog = default_catalog()
        current = self.current_model()
        self._fill_models()
        index = self.w.model_combo.findData(current)
        if index >= 0 and self.w.model_combo.model().item(index).isEnabled():
            self.w.model_combo.setCurrentIndex(index)

    # ------------------------------------------------------------------ library
    @staticmethod
    def _open_library():
        from engines.store.library import ClipLibrary

        return ClipLibrary(paths.library_dir())

    def _connect_library(self) -> None:
        panel = self.w.library_panel
        panel.searchChanged.connect(self.refresh_library)
        panel.loadRequested.connect(self.load_from_library)
        panel.restore_button.clicked.connect(self.restore_selected)
        panel.regenerate_button.clicked.connect(self.regenerate_selected)
        panel.delete_button.clicked.connect(self.delete_selected)
        panel.undo_button.clicked.connect(self.undo_delete)
        panel.export_button.clicked.connect(self.export_selected)
        panel.zip_button.clicked.connect(self.export_selected_zip)
        panel.save_meta_button.clicked.connect(self.save_meta)
        panel.favourite_check.clicked.connect(self.save_meta)
        panel.rating_spin.valueChanged.connect(lambda _v: self.save_meta(quiet=True))
        panel.view.selectionModel().selectionChanged.connect(self._library_selection)
        for key in MODEL_SETS:
            panel.model_filter.addItem(key, key)
        panel.model_filter.addItem("imported", "imported")

    def refresh_library(self, *_args) -> None:
        panel = self.w.library_panel
        query = panel.query()
        try:
            records = self.library.search(**query, limit=PAGE_LIMIT)
            total = self.library.count(**{k: v for k, v in query.items()
                                          if k not in ("sort", "descending")})
        except StudioError as exc:
            self.error(str(exc))
            return
        panel.model.set_records(records)
        shown = f"{len(records)} of {total}" if total > len(records) else f"{total}"
        panel.count_label.setText(f"{shown} take(s) in the library")

    def _library_selection(self, *_args) -> None:
        panel = self.w.library_panel
        record = panel.current_record()
        widgets = (panel.favourite_check, panel.rating_spin, panel.tags_edit, panel.notes_edit)
        for widget in widgets:
            widget.blockSignals(True)
        if record is not None:
            panel.favourite_check.setChecked(record.favourite)
            panel.rating_spin.setValue(record.rating)
            panel.tags_edit.setText(", ".join(record.tags))
            panel.notes_edit.setPlainText(record.notes)
        for widget in widgets:
            widget.blockSignals(False)

    def save_meta(self, *_args, quiet: bool = False) -> None:
        panel = self.w.library_panel
        record = panel.current_record()
        if record is None:
            return
        tags = [t.strip() for t in panel.tags_edit.text().split(",") if t.strip()]
        try:
            self.library.update(record.id, rating=panel.rating_spin.value(),
                                favourite=panel.favourite_check.isChecked(), tags=tags,
                                notes=panel.notes_edit.toPlainText())
        except StudioError as exc:
            self.error(str(exc))
            return
        selected = record.id
        self.refresh_library()
        self._select_library_row(selected)
        if not quiet:
            self.status("Saved.", 2000)

    def _select_library_row(self, take_id: int) -> None:
        panel = self.w.library_panel
        for row, rec in enumerate(panel.model.records):
            if rec.id == take_id:
                panel.view.selectRow(row)
                return

    def _session_take_for(self, take_id: int) -> Take | None:
        return next((t for t in self.takes.values() if t.library_id == take_id), None)

    def load_from_library(self, take_id: int) -> Take | None:
        """Double-click: bring a library take into the session (or select it if there)."""
        existing = self._session_take_for(take_id)
        if existing is not None:
            self.w.takes_list.setCurrentItem(self._item_for(existing))
            return existing
        try:
            record = self.library.get(take_id)
            pcm = self.library.load_audio(take_id)
        except StudioError as exc:
            self.error(str(exc))
            return None
        take = Take(prompt=record.name or record.prompt, pcm=pcm,
                    seed=None if record.model == "imported" else record.seed,
                    model=record.model, library_id=record.id)
        self.add_take(take, select=True)
        self.w.side_tabs.setCurrentIndex(0)
        return take

    def restore_settings(self, record) -> None:
        """Every parameter of a library take back into the generation panel."""
        w = self.w
        w.prompt_edit.setPlainText(record.prompt)
        w.negative_edit.setText(record.negative_prompt)
        index = w.model_combo.findData(record.model)
        if index >= 0:
            w.model_combo.setCurrentIndex(index)
        for combo, value in ((w.decoder_combo, record.decoder),
                             (w.precision_combo, record.precision)):
            found = combo.findData(value)
            combo.setCurrentIndex(found if found >= 0 else 0)
        w.seconds_spin.setValue(record.seconds)
        w.steps_spin.setValue(record.steps)
        w.cfg_spin.setValue(record.cfg)
        w.apg_spin.setValue(record.apg)
        w.seed_edit.setText(str(record.seed))
        w.seed_lock.setChecked(True)
        w.variations_spin.setValue(1)
        if record.parent_id is not None and record.mode != "t2a":
            parent = self.load_from_library(record.parent_id)
            if parent is not None:
                self.set_init(parent)
                self.spans = [tuple(s) for s in record.inpaint_spans]
                w.waveform.set_spans(self.spans)
                self._update_init_state()
        elif self.init_take is not None:
            self.clear_init()
        if record.init_noise_level is not None:
            w.init_noise_slider.setValue(round(record.init_noise_level * 100))
        w.seconds_spin.setValue(record.seconds)

    def restore_selected(self) -> None:
        record = self.w.library_panel.current_record()
        if record is None:
            self.error("Select a take in the library first.")
            return
        if record.model == "imported":
            self.error("That is imported audio, not a generation; double-click it to use it.")
            return
        self.restore_settings(record)
        self.status(f"Settings of library take #{record.id} restored (seed {record.seed}).")

    def regenerate_selected(self) -> None:
        """Re-run a library take exactly (same seed, same latents); a missing file is
        written back into the same library row."""
        record = self.w.library_panel.current_record()
        if record is None or record.model == "imported":
            self.error("Select a generated take in the library to regenerate it.")
            return
        if self.running:
            self.status("A generation is already running; wait for it or press Cancel.")
            return
        self.restore_settings(record)
        try:
            request = self.library.regeneration_request(record.id)
        except StudioError as exc:
            self.error(str(exc))
            return
        self._submit([request], replace_id=record.id if record.missing else None)

    def delete_selected(self) -> None:
        records = self.w.library_panel.selected_records()
        if not records:
            return
        for record in records:
            try:
                self.library.delete(record.id)
            except StudioError as exc:
                self.error(str(exc))
                return
            self.deleted_ids.append(record.id)
        self.w.library_panel.undo_button.setEnabled(True)
        self.refresh_library()
        self.status(f"Moved {len(records)} take(s) to the library trash; Undo brings them back.")

    def undo_delete(self) -> None:
        if not self.deleted_ids:
            return
        take_id = self.deleted_ids.pop()
        try:
            self.library.restore(take_id)
        except StudioError as exc:
            self.error(str(exc))
        self.w.library_panel.undo_button.setEnabled(bool(self.deleted_ids))
        self.refresh_library()
        self.status(f"Library take #{take_id} restored.")

    def export_selected(self, folder: str | None = None) -> list[Path]:
        records = self.w.library_panel.selected_records()
        if not records:
            self.error("Select takes in the library to export.")
            return []
        if not folder:
            folder = QFileDialog.getExistingDirectory(self.w, "Export takes to folder")
        if not folder:
            return []
        try:
            written = self.library.export([r.id for r in records], Path(folder))
        except StudioError as exc:
            self.error(str(exc))
            return []
        self.status(f"Exported {len(written)} take(s) with sidecars to {folder}.")
        return written

    def export_selected_zip(self, path: str | None = None) -> Path | None:
        records = self.w.library_panel.selected_records()
        if not records:
            self.error("Select takes in the library to export.")
            return None
        if not path:
            path, _ = QFileDialog.getSaveFileName(self.w, "Export zip",
                                                  str(Path.home() / "sa3-takes.zip"),
                                                  "Zip archive (*.zip)")
        if not path:
            return None
        try:
            written = self.library.export_zip([r.id for r in records], Path(path))
        except StudioError as exc:
            self.error(str(exc))
            return None
        self.status(f"Exported {len(records)} take(s) to {written}.")
        return written

    # ------------------------------------------------------------------ shutdown
    def shutdown(self) -> None:
        """Stop the worker thread (releasing engines there) and the audio stream; idempotent."""
        if getattr(self, "_shut_down", False):
            return
        self._shut_down = True
        if self.models_dialog is not None:
            self.models_dialog.done(0)
        self.timer.stop()
        if self.host is not None:
            self.host.stop()
            self.host = None
        try:
            self.player.close()
        except Exception:  # noqa: BLE001
            log.exception("closing the audio stream failed")
        QApplication.instance().removeEventFilter(self)
        try:
            self.library.close()
        except Exception:  # noqa: BLE001
            log.exception("closing the library failed")

