"""The Library page's behaviour: search by words and filters (the count says how many of the
library match), by sound (Find similar, app.library.find_similar), tags/notes/rating, renaming,
loading old takes into the session, restoring their settings and regenerating them
(app.library.restore), trash with undo, and export."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal

from app.common.expected_errors import LIBRARY_ERRORS, SETTINGS_ERRORS
from app.common.gpu_service import GpuService
from app.common.notifier import Notifier
from app.common.session import TakeModel
from app.common.session_take import Take
from app.generate.panel import GenerationPanel
from app.library.browsing import LibraryBrowsing, restore_finishing, take_from_record
from app.library.export import LibraryExporter
from app.library.find_similar import SimilarResults
from app.library.import_controller import SoundFolderImport
from app.library.import_rows import ImportedRows
from app.library.inspector import LibraryInspector
from app.library.inspector_loudness import LoudnessReadings
from app.library.paged_listing import PagedListing, count_text
from app.library.panel import LibraryPanel
from app.library.restore import SettingsRestore
from engines.catalog import MODEL_SETS
from engines.delivery.labels import label_changes, unchecked_catid

__all__ = ["LibraryController", "count_text", "restore_finishing"]

log = logging.getLogger(__name__)


class LibraryController(QObject):
    """`player` auditions rows (Up/Down); `file_for(take)` is the file a session drag gives
    (app.export.controller), which library rows drag out too. Restore settings fills
    `generation` (the generation panel)."""

    takeLoaded = Signal(object)  # a library take was brought into the session (and selected)
    auditionStarted = Signal()  # a row is playing (Up/Down in the table)
    libraryShown = Signal()  # Find similar listed its results: show the Library page

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
        self._closed = False  # shut down: the library is closed, nothing may read it
        self.panel = panel
        self.settings = SettingsRestore(generation, notifier, session, gpu, library,
                                        self.load_from_library, self)
        self.similar = SimilarResults(panel, notifier, library, self)
        self.similar.shown.connect(self.libraryShown)
        panel.searchChanged.connect(self._search_changed)
        panel.loadRequested.connect(self.load_from_library)
        panel.restore_button.clicked.connect(self.restore_selected)
        panel.regenerate_button.clicked.connect(self.regenerate_selected)
        panel.delete_button.clicked.connect(self.delete_selected)
        panel.undo_button.clicked.connect(self.undo_delete)
        panel.similar_button.clicked.connect(self.find_similar_selected)
        panel.save_meta_button.clicked.connect(self.save_meta)
        panel.favourite_check.clicked.connect(self.save_meta)
        panel.rating_spin.valueChanged.connect(lambda _v: self.save_meta(quiet=True))
        panel.view.selectionModel().selectionChanged.connect(self._library_selection)
        panel.model.renameRequested.connect(self.rename)
        self._connect_menu()
        self.browsing = LibraryBrowsing(panel, notifier, session, library, player, file_for, self)
        self.browsing.auditionStarted.connect(self.auditionStarted)
        self.readings = LoudnessReadings(self)  # shared with the Session tab's facts
        self.inspector = LibraryInspector(panel, library, player, notifier, self.readings, self)
        self.inspector.playingStarted.connect(self.auditionStarted)
        self.browsing.audio_of = self.inspector.audio_of
        self.exporter = LibraryExporter(panel, notifier, gpu, library, self)
        self.export_selected = self.exporter.export_selected
        self.export_selected_zip = self.exporter.export_selected_zip
        # imported sound folders: File > Import sound folder..., the Source filter, the rows
        self.importer = SoundFolderImport(panel.import_progress, panel.source_filter, notifier,
                                          library, self)
        self.importer.libraryChanged.connect(self.refresh_library)
        self.importer.started.connect(self.libraryShown)
        self.imported_rows = ImportedRows(panel, notifier, session, self.load_from_library, self)
        panel.model.stored_peaks = getattr(library, "sound_peaks", None)
        self.listing = PagedListing(panel.model, panel.count_label, notifier, library, self)
        for key in MODEL_SETS:
            panel.model_filter.addItem(key, key)
        panel.model_filter.addItem("imported", "imported")
        self._list()
        # The filters' lists read the whole library (slow on a big one): filled once the page
        # is painted, and again when the library changes. A timer shutdown can stop: the
        # window may close before the page is painted, and the library closes with it.
        self._fill_timer = QTimer(self, singleShot=True, interval=0)
        self._fill_timer.timeout.connect(self._fill_filter_lists)
        self._fill_timer.start()

    def _connect_menu(self) -> None:
        panel = self.panel
        panel.load_action.triggered.connect(self._load_selected)
        panel.similar_action.triggered.connect(self.find_similar_selected)
        panel.rename_action.triggered.connect(self.rename_selected)
        panel.restore_action.triggered.connect(self.restore_selected)
        panel.regenerate_action.triggered.connect(self.regenerate_selected)
        panel.delete_action.triggered.connect(self.delete_selected)

    # ------------------------------------------------------------------ the list
    def _search_changed(self) -> None:
        """Words or a filter changed: the search's rows, not the sound search's."""
        self.similar.leave()  # (which asks again through here when it was listed)
        self._list()  # the filters' lists change only with the library (refresh_library)

    def refresh_library(self, *_args) -> None:
        """The library changed: the tier filter's list, then the rows."""
        if self._closed:  # a late word from the importer or the team: the library is closed
            return
        self.panel.model.forget_file_state()
        self._fill_filter_lists(sources=False)  # (the importer's own signal refreshes those)
        self._list()

    def _fill_filter_lists(self, sources: bool = True) -> None:
        if self._closed:
            return
        try:
            self.panel.set_tiers(self.library.tiers())
        except LIBRARY_ERRORS:  # the filter keeps its old list; the search goes on
            log.info("could not list the library's codec tiers", exc_info=True)
        if sources:
            self.importer.refresh_sources()

    def _list(self) -> None:
        panel = self.panel
        if self.similar.active:
            self.similar.reload()
            self._library_selection()
            return
        if self.listing.show(panel.query()):  # the first page (app.library.paged_listing)
            self._library_selection()  # a refresh leaves no row selected: no details either

    def _library_selection(self, *_args) -> None:
        self.panel.show_details(self.panel.current_record())
        self.inspector.show_record(self.panel.current_record())
        self.imported_rows.selection_changed(self.panel.current_record())

    def save_meta(self, *_args, quiet: bool = False) -> None:
        panel = self.panel
        record = panel.current_record()
        if record is None:
            return
        tags = [t.strip() for t in panel.tags_edit.text().split(",") if t.strip()]
        edited = {key: value for key, value in panel.label_values().items()
                  if value != record.labels.get(key, "")}
        try:  # a CatID the user's UCS list lacks is refused before anything is saved
            labels = label_changes(**edited) if edited else {}
            unchecked = unchecked_catid([labels.get("catid", "")])
        except SETTINGS_ERRORS as exc:  # one sentence, with the closest CatIDs
            self.notifier.failed(f"Could not keep the labels of take #{record.id}", exc)
            return
        try:
            self.library.update(record.id, rating=panel.rating_spin.value(),
                                favourite=panel.favourite_check.isChecked(), tags=tags,
                                notes=panel.notes_edit.toPlainText())
            if labels:
                self.library.set_labels(record.id, labels)
        except LIBRARY_ERRORS as exc:
            self.notifier.failed(f"Could not save the rating, tags, notes and labels of take "
                                 f"#{record.id}", exc)
            return
        in_session = self.session.for_library_id(record.id)
        if in_session is not None:  # its row in the takes list shows the new stars
            in_session.rating = panel.rating_spin.value()
            self.session.show_row(in_session)
        self._refresh_keeping(record.id)
        if unchecked is not None:
            self.notifier.status(unchecked)  # in the window's words
        elif not quiet:
            self.notifier.status("Saved.", 2000)

    def _refresh_keeping(self, take_id: int) -> None:
        """Refresh, and select take `take_id` again if it is still listed."""
        self.refresh_library()
        row = self.panel.model.row_of(take_id)
        if row >= 0:
            self.panel.view.selectRow(row)

    # ------------------------------------------------------------------ names
    def rename_selected(self) -> bool:
        """F2 on the library table: edit the selected take's name in place."""
        view = self.panel.view
        row = view.currentIndex().row()
        if row < 0 and self.panel.selected_records():
            row = self.panel.model.row_of(self.panel.selected_records()[0].id)
        return view.rename_row(row)

    def rename(self, take_id: int, name: str) -> None:
        """Keep a take's new name in the library ("" or its prompt: the prompt names it), and
        give it to the session's take, whose files are named again on the next drag."""
        try:
            record = self.library.get(take_id)
            stored = "" if name == record.prompt else name
            self.library.update(take_id, name=stored)
        except LIBRARY_ERRORS as exc:  # one sentence; the old name stays
            self.notifier.failed(f"Could not rename take #{take_id}", exc)
            return
        in_session = self.session.for_library_id(take_id)
        if in_session is not None:
            in_session.name = stored
            in_session.forget_files()
            self.session.show_row(in_session)
        self._refresh_keeping(take_id)
        self.notifier.status(f"Take #{take_id} is now named \u201c{stored}\u201d." if stored
                             else f"Take #{take_id} has no name now; its prompt names it.")

    def take_renamed(self, take: Take) -> None:
        """A session take was renamed (F2 in the takes list): the library keeps the name."""
        if take.library_id is None:
            return
        try:
            self.library.update(take.library_id, name=take.name)
        except LIBRARY_ERRORS as exc:  # the session keeps the name either way
            self.notifier.failed(f"Could not keep the new name of take #{take.library_id} in "
                                 "the library", exc)
            return
        self._refresh_keeping(take.library_id)

    # ------------------------------------------------------------------ by sound
    def find_similar_selected(self) -> None:
        self.similar.like_record(self.panel.current_record())

    def find_similar_take(self, take: Take | None) -> None:
        """Find similar on a session take (the Take menu, the takes list's menu)."""
        self.similar.like_take(take)

    # ------------------------------------------------------------------ back into the session
    def _load_selected(self) -> None:
        record = self.panel.current_record()
        if record is not None:
            self.load_from_library(record.id)

    def load_from_library(self, take_id: int) -> Take | None:
        """Double-click: bring a library take into the session (or select it if there)."""
        existing = self.session.for_library_id(take_id)
        if existing is not None:
            self.session.select(existing)
            self.takeLoaded.emit(existing)
            return existing
        try:
            record = self.library.get(take_id)
            pcm = self.library.load_audio(take_id)
        except LIBRARY_ERRORS as exc:
            self.notifier.failed(f"Could not load library take #{take_id}", exc)
            return None
        take = take_from_record(record, pcm)
        self.session.add_take(take, select=True)
        self.takeLoaded.emit(take)
        return take

    def restore_settings(self, record) -> None:
        self.settings.restore_settings(record)

    def restore_selected(self) -> None:
        self.settings.restore(self.panel.current_record())

    def regenerate_selected(self) -> None:
        self.settings.regenerate(self.panel.current_record())

    # ------------------------------------------------------------------ trash
    def delete_selected(self) -> None:
        records = self.panel.selected_records()
        if not records:
            return
        moved, problem = 0, None
        for record in records:
            try:
                self.library.delete(record.id)
            except LIBRARY_ERRORS as exc:  # the takes moved so far stay undoable
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
        except LIBRARY_ERRORS as exc:  # it stays in the trash; Undo can retry
            self.notifier.failed(f"Could not restore library take #{take_id}", exc)
            return
        self.deleted_ids.pop()
        self.panel.undo_button.setEnabled(bool(self.deleted_ids))
        self.refresh_library()
        self.notifier.status(f"Library take #{take_id} restored.")

    def shutdown(self) -> None:
        """The window is closing: the sound search and the thumbnail threads stop, and so do
        the timers that would read the library after it is closed."""
        self._closed = True
        self._fill_timer.stop()
        self.listing.shutdown()
        self.similar.shutdown()
        self.inspector.shutdown()
        self.importer.shutdown()
        self.panel.model.thumbnails.shutdown()
