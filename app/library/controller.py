"""The Library tab's behaviour: search, tags/notes/rating, loading old takes into the session,
restoring their settings into the generation panel, regenerating them, trash with undo, and
export."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from app.common.gpu_service import GpuService
from app.common.notifier import Notifier
from app.common.session import TakeModel
from app.common.take import Take
from app.common.texts import LIST_RUNNING
from app.common.tiers import choose
from app.generate.panel import GenerationPanel
from app.library.browsing import LibraryBrowsing, restore_finishing, take_from_record
from app.library.export import LibraryExporter
from app.library.panel import LibraryPanel
from engines.catalog import MODEL_SETS

__all__ = ["LibraryController", "restore_finishing"]

log = logging.getLogger(__name__)

PAGE_LIMIT = 500


class LibraryController(QObject):
    """`player` auditions rows (Up/Down); `file_for(take)` is the file a session drag gives
    (app.export.controller), which library rows drag out too. Restore settings fills
    `generation` (the generation panel)."""

    takeLoaded = Signal(object)  # a library take was brought into the session (and selected)
    auditionStarted = Signal()  # a row is playing (Up/Down in the table)

    def __init__(self, panel: LibraryPanel, generation: GenerationPanel, notifier: Notifier,
                 session: TakeModel, gpu: GpuService, library, parent: QObject | None = None,
                 *, player=None, file_for: Callable[[Take], Path] | None = None) -> None:
        super().__init__(parent)
        self.generation = generation
        self.notifier = notifier
        self.session = session
        self.gpu = gpu
        self.library = library
        self.deleted_ids: list[int] = []
        self.panel = panel
        panel.searchChanged.connect(self.refresh_library)
        panel.loadRequested.connect(self.load_from_library)
        panel.restore_button.clicked.connect(self.restore_selected)
        panel.regenerate_button.clicked.connect(self.regenerate_selected)
        panel.delete_button.clicked.connect(self.delete_selected)
        panel.undo_button.clicked.connect(self.undo_delete)
        panel.save_meta_button.clicked.connect(self.save_meta)
        panel.favourite_check.clicked.connect(self.save_meta)
        panel.rating_spin.valueChanged.connect(lambda _v: self.save_meta(quiet=True))
        panel.view.selectionModel().selectionChanged.connect(self._library_selection)
        self.browsing = LibraryBrowsing(panel, notifier, session, library, player, file_for, self)
        self.browsing.auditionStarted.connect(self.auditionStarted)
        self.exporter = LibraryExporter(panel, notifier, gpu, library, self)
        self.export_selected = self.exporter.export_selected
        self.export_selected_zip = self.exporter.export_selected_zip
        for key in MODEL_SETS:
            panel.model_filter.addItem(key, key)
        panel.model_filter.addItem("imported", "imported")
        self.refresh_library()

    # ------------------------------------------------------------------ the list
    def refresh_library(self, *_args) -> None:
        panel = self.panel
        try:
            panel.set_tiers(self.library.tiers())
        except Exception:  # noqa: BLE001 - the filter keeps its old list; the search goes on
            log.info("could not list the library's codec tiers", exc_info=True)
        query = panel.query()
        try:
            records = self.library.search(**query, limit=PAGE_LIMIT)
            total = self.library.count(**{k: v for k, v in query.items()
                                          if k not in ("sort", "descending")})
        except Exception as exc:  # noqa: BLE001 - one sentence, the traceback to the log
            self.notifier.failed("Could not search the library", exc)
            return
        panel.model.set_records(records)
        shown = f"{len(records)} of {total}" if total > len(records) else f"{total}"
        panel.count_label.setText(f"{shown} take(s) in the library")

    def _library_selection(self, *_args) -> None:
        panel = self.panel
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
        panel = self.panel
        record = panel.current_record()
        if record is None:
            return
        tags = [t.strip() for t in panel.tags_edit.text().split(",") if t.strip()]
        try:
            self.library.update(record.id, rating=panel.rating_spin.value(),
                                favourite=panel.favourite_check.isChecked(), tags=tags,
                                notes=panel.notes_edit.toPlainText())
        except Exception as exc:  # noqa: BLE001
            self.notifier.failed(f"Could not save the rating, tags and notes of take "
                                 f"#{record.id}", exc)
            return
        in_session = self.session.for_library_id(record.id)
        if in_session is not None:  # its row in the takes list shows the new stars
            in_session.rating = panel.rating_spin.value()
            self.session.show_row(in_session)
        selected = record.id
        self.refresh_library()
        self._select_library_row(selected)
        if not quiet:
            self.notifier.status("Saved.", 2000)

    def _select_library_row(self, take_id: int) -> None:
        panel = self.panel
        for row, rec in enumerate(panel.model.records):
            if rec.id == take_id:
                panel.view.selectRow(row)
                return

    # ------------------------------------------------------------------ back into the session
    def load_from_library(self, take_id: int) -> Take | None:
        """Double-click: bring a library take into the session (or select it if there)."""
        existing = self.session.for_library_id(take_id)
        if existing is not None:
            self.session.select(existing)
            return existing
        try:
            record = self.library.get(take_id)
            pcm = self.library.load_audio(take_id)
        except Exception as exc:  # noqa: BLE001
            self.notifier.failed(f"Could not load library take #{take_id}", exc)
            return None
        take = take_from_record(record, pcm)
        self.session.add_take(take, select=True)
        self.takeLoaded.emit(take)
        return take

    def restore_settings(self, record) -> None:
        """Every parameter of a library take back into the generation panel."""
        w = self.generation
        w.prompt_edit.setPlainText(record.prompt)
        w.negative_edit.setText(record.negative_prompt)
        index = w.model_combo.findData(record.model)
        if index >= 0:
            w.model_combo.setCurrentIndex(index)
        found = w.decoder_combo.findData(record.decoder)
        w.decoder_combo.setCurrentIndex(found if found >= 0 else 0)
        # each choice refills the next (app.generate.tier_combos): decoder, precision, codec tier
        choose(w.precision_combo, record.precision)
        choose(w.codec_tier_combo, record.decoder_tier)
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
                self.session.set_init(parent)
                self.session.restore_spans(record.inpaint_spans)
        elif self.session.init_take is not None:
            self.session.clear_init()
        if record.init_noise_level is not None:
            w.init_noise_slider.setValue(round(record.init_noise_level * 100))
        w.seconds_spin.setValue(record.seconds)

    def restore_selected(self) -> None:
        record = self.panel.current_record()
        if record is None:
            self.notifier.error("Select a take in the library first.")
            return
        if record.model == "imported":
            self.notifier.error("That is imported audio, not a generation; double-click it to "
                                "use it.")
            return
        self.restore_settings(record)
        self.notifier.status(f"Settings of library take #{record.id} restored (seed "
                             f"{record.seed}).")

    def regenerate_selected(self) -> None:
        """Re-run a library take exactly (same seed, same latents); a missing file is
        written back into the same library row."""
        record = self.panel.current_record()
        if record is None or record.model == "imported":
            self.notifier.error("Select a generated take in the library to regenerate it.")
            return
        if self.gpu.running:
            self.notifier.status("A generation is already running; wait for it or press "
                                 "Cancel.")
            return
        if self.gpu.list_running:
            self.notifier.status(LIST_RUNNING)
            return
        self.restore_settings(record)
        try:
            request = self.library.regeneration_request(record.id)
        except Exception as exc:  # noqa: BLE001
            self.notifier.failed(f"Could not regenerate take #{record.id}", exc)
            return
        parent_id, source = self.session.init_lineage()
        self.gpu.submit([request], replace_id=record.id if record.missing else None,
                        parent_id=parent_id, init_source=source)

    # ------------------------------------------------------------------ trash
    def delete_selected(self) -> None:
        records = self.panel.selected_records()
        if not records:
            return
        moved, problem = 0, None
        for record in records:
            try:
                self.library.delete(record.id)
            except Exception as exc:  # noqa: BLE001 - the takes moved so far stay undoable
                problem = (record.id, exc)
                break
            self.deleted_ids.append(record.id)
            moved += 1
        self.panel.undo_button.setEnabled(bool(self.deleted_ids))
        self.refresh_library()
        if problem is not None:
            self.notifier.failed(f"Could not move take #{problem[0]} to the library trash",
                                 problem[1])
            return
        self.notifier.status(f"Moved {moved} take(s) to the library trash; Undo brings "
                             f"them back.")

    def undo_delete(self) -> None:
        if not self.deleted_ids:
            return
        take_id = self.deleted_ids[-1]
        try:
            self.library.restore(take_id)
        except Exception as exc:  # noqa: BLE001 - it stays in the trash; Undo can retry
            self.notifier.failed(f"Could not restore library take #{take_id}", exc)
            return
        self.deleted_ids.pop()
        self.panel.undo_button.setEnabled(bool(self.deleted_ids))
        self.refresh_library()
        self.notifier.status(f"Library take #{take_id} restored.")


    def shutdown(self) -> None:
        """The window is closing: the table's thumbnail threads stop."""
        self.panel.model.thumbnails.shutdown()
