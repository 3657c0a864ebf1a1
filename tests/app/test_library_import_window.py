"""Imported sound folders in the window (issue 34): File > Import sound folder... lists the
designer's own files in the Library page beside the takes, with a Source column, search,
filters, Find similar, drag-out, play and Use as init audio - and never changes a file.

The window runs offscreen on a data folder of the test's own, with a player on a stand-in
stream (no audio device needed); the folder dialog is answered by the test."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtWidgets import QFileDialog

from app.library.table import PROMPT, SOURCE
from tests.app.test_browser import RecordingPlayer
from tests.browser_support import FULL_HD, settle, show_at
from tests.gui_support import child
from tests.team_support import add_take, engine_files

WAIT_MS = 60_000
DOORS = ("DOORWood_Creaky Door Open_HB_SFXLIB.wav", "DOORWood_Creaky Door Close_HB_SFXLIB.wav",
         "DOORMetl_Slam Heavy_HB_SFXLIB.wav")


def _write_sounds(folder: Path) -> list[Path]:
    """Three UCS-named WAVs, a 48 kHz mono FLAC and an Ogg: the kinds a sound folder holds."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(3)
    paths = []
    for index, name in enumerate(DOORS):
        tone = np.sin(2 * np.pi * (120 + 90 * index) * np.arange(22050) / 44100)
        audio = (0.4 * tone[:, None] * np.ones((1, 2))).astype(np.float32)
        sf.write(folder / name, audio, 44100, subtype="PCM_16")
        paths.append(folder / name)
    rain = (0.2 * rng.standard_normal((24000, 1))).astype(np.float32)
    sf.write(folder / "rain on a tin roof.flac", rain, 48000)
    sf.write(folder / "wind gust.ogg", (0.3 * rng.standard_normal((22050, 2))).astype("f4"),
             44100)
    return sorted([*paths, folder / "rain on a tin roof.flac", folder / "wind gust.ogg"])


def _hashes(paths: list[Path]) -> dict[Path, tuple[str, int]]:
    return {p: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns) for p in paths}


@pytest.fixture
def studio(qtbot, tmp_path, monkeypatch):
    """A window on its own data folder, with a generated take in its library."""
    monkeypatch.setenv("SA3_STUDIO_HOME", str(tmp_path / "home"))
    from app.models.controller import FIRST_RUN_KEY
    from app.shell.main_window import MainWindow
    from app.shell.studio import Studio
    from engines.settings import update_settings

    (tmp_path / "home").mkdir()
    update_settings(tmp_path / "home", {FIRST_RUN_KEY: True})
    win = MainWindow()
    qtbot.addWidget(win)
    win.studio = Studio(win, player=RecordingPlayer(), start_worker=False)
    child(win, "autoplayCheck").setChecked(False)
    add_take(win.studio.library, engine_files(tmp_path / "engines"), "laser zap bright", 5)
    win.studio.library_page()
    yield win
    win.studio.shutdown()


@pytest.fixture
def sounds(tmp_path) -> list[Path]:
    return _write_sounds(tmp_path / "My SFX")


def _import_from_menu(qtbot, win, monkeypatch, folder: Path) -> None:
    monkeypatch.setattr(QFileDialog, "getExistingDirectory",
                        staticmethod(lambda *_args, **_kw: str(folder)))
    importer = win.studio.library_controller.importer
    child(win, "importSoundFolderAction").trigger()
    assert importer.busy
    qtbot.waitUntil(lambda: not importer.busy, timeout=WAIT_MS)


def _rows(win) -> dict[str, int]:
    """Every row's name (the next pages too, as scrolling to the end lists them)."""
    model = child(win, "libraryView").model()
    model.fetch_all()
    return {model.index(row, PROMPT).data(): row for row in range(model.rowCount())}


def _row_of(win, name: str) -> int:
    rows = _rows(win)
    assert name in rows, sorted(rows)
    return rows[name]


def _select(win, name: str) -> int:
    """Select the row named `name` as a click does (the selection model, not the view's
    selectRow, which depends on where the header is scrolled)."""
    view = child(win, "libraryView")
    row = _row_of(win, name)
    flags = QItemSelectionModel.SelectionFlag
    view.selectionModel().setCurrentIndex(view.model().index(row, PROMPT),
                                          flags.ClearAndSelect | flags.Rows)
    assert win.studio.library_controller.panel.current_record().id == \
        view.model().record(row).id
    return row


def test_import_lists_sounds_beside_takes_with_their_source(qtbot, studio, sounds, monkeypatch):
    before = _hashes(sounds)
    _import_from_menu(qtbot, studio, monkeypatch, sounds[0].parent)

    view, model = child(studio, "libraryView"), child(studio, "libraryView").model()
    rows = _rows(studio)
    assert len(rows) == 1 + len(sounds)
    assert model.index(rows["laser zap bright"], SOURCE).data() == "Generated"
    door = rows["DOORWood_Creaky Door Open_HB_SFXLIB"]
    assert model.index(door, SOURCE).data() == "My SFX"
    tip = model.index(door, SOURCE).data(Qt.ItemDataRole.ToolTipRole)
    assert str(sounds[0].parent) in tip and "never changed" in tip
    show_at(qtbot, studio, FULL_HD)  # (a narrow page folds columns for the name's room)
    studio.show_library()
    settle()
    assert not view.horizontalHeader().isSectionHidden(SOURCE)
    assert child(studio, "libraryCountLabel").text() == "6 takes"
    # the progress row is gone; the status bar said what happened in words, without flags
    assert not child(studio, "libraryImportRow").isVisible()
    history = " ".join(studio.studio.notifier.history)
    assert "5 new" in history and "Waveforms and sound search ready for 5 sounds" in history
    assert "--" not in history
    assert _hashes(sounds) == before


def test_search_and_source_filter_cover_both_kinds(qtbot, studio, sounds, monkeypatch):
    _import_from_menu(qtbot, studio, monkeypatch, sounds[0].parent)
    search = child(studio, "librarySearchEdit")
    search.setText("creaky door")  # words of the file name
    assert set(_rows(studio)) == {"DOORWood_Creaky Door Open_HB_SFXLIB",
                                  "DOORWood_Creaky Door Close_HB_SFXLIB"}
    search.setText("doormetl")  # the CatID its UCS name gives
    assert set(_rows(studio)) == {"DOORMetl_Slam Heavy_HB_SFXLIB"}
    search.setText("laser")
    assert set(_rows(studio)) == {"laser zap bright"}
    search.clear()

    source = child(studio, "librarySourceFilter")
    source.setCurrentIndex(source.findData("generated"))
    assert set(_rows(studio)) == {"laser zap bright"}
    source.setCurrentIndex(source.findData("imported"))
    assert len(_rows(studio)) == 5 and "laser zap bright" not in _rows(studio)
    folder = source.findData(str(sounds[0].parent))
    assert folder > 0 and source.itemText(folder) == "My SFX"
    source.setCurrentIndex(folder)
    assert len(_rows(studio)) == 5
    assert child(studio, "libraryCountLabel").text() == "5 of 6 takes"


def test_an_imported_row_plays_drags_and_becomes_init_audio_unchanged(qtbot, studio, sounds,
                                                                        monkeypatch):
    before = _hashes(sounds)
    _import_from_menu(qtbot, studio, monkeypatch, sounds[0].parent)
    model = child(studio, "libraryView").model()
    row = _select(studio, "rain on a tin roof")

    # what needs a take's settings is disabled, and says why
    for name in ("restoreSettingsButton", "regenerateButton"):
        button = child(studio, name)
        assert not button.isEnabled()
        assert "imported sound" in button.toolTip() and "not generated here" in button.toolTip()
    assert not child(studio, "libraryRestoreAction").isEnabled()

    # play: the 48 kHz mono file, as the player plays every take
    player = studio.studio.player
    studio.studio.library_controller.browsing.audition_row(row)
    assert player.plays and player.duration_seconds == pytest.approx(0.5, abs=0.01)

    # drag-out: the user's own file, not a copy
    urls = model.mimeData([model.index(row, PROMPT)]).urls()
    assert [Path(url.toLocalFile()) for url in urls] == [sounds[0].parent /
                                                        "rain on a tin roof.flac"]

    # one action to init audio (audio-to-audio; painting spans makes it inpainting)
    child(studio, "libraryUseAsInitButton").click()
    session = studio.studio.session
    record = model.record(row)
    assert session.init_take is not None and session.init_take.library_id == record.id
    assert session.init_take.seconds == pytest.approx(0.5, abs=0.01)
    assert "rain on a tin roof" in child(studio, "initLabel").text()
    assert "audio-to-audio" in child(studio, "initLabel").text()
    assert _hashes(sounds) == before


def test_a_generated_take_keeps_its_settings_actions_and_can_be_init_too(qtbot, studio, sounds,
                                                                         monkeypatch):
    _import_from_menu(qtbot, studio, monkeypatch, sounds[0].parent)
    _select(studio, "DOORMetl_Slam Heavy_HB_SFXLIB")
    assert not child(studio, "regenerateButton").isEnabled()
    _select(studio, "laser zap bright")
    assert child(studio, "restoreSettingsButton").isEnabled()
    assert child(studio, "regenerateButton").isEnabled()
    assert "imported" not in child(studio, "regenerateButton").toolTip()
    child(studio, "libraryUseAsInitAction").trigger()
    assert studio.studio.session.init_take.prompt == "laser zap bright"


def test_rescan_picks_up_added_changed_and_deleted_files(qtbot, studio, sounds, monkeypatch):
    _import_from_menu(qtbot, studio, monkeypatch, sounds[0].parent)
    folder, model = sounds[0].parent, child(studio, "libraryView").model()
    slam = model.record(_row_of(studio, "DOORMetl_Slam Heavy_HB_SFXLIB"))
    studio.studio.library.update(slam.id, rating=4)  # kept through a move
    (folder / "wind gust.ogg").unlink()  # deleted
    sf.write(folder / "bell ring.wav", np.zeros((4410, 2), np.float32), 44100)  # added
    sf.write(folder / "rain on a tin roof.flac", np.zeros((48000, 1), np.float32),
             48000)  # changed: 1 s now
    (folder / "DOORMetl_Slam Heavy_HB_SFXLIB.wav").rename(folder / "slam moved.wav")  # moved
    importer = studio.studio.library_controller.importer
    child(studio, "rescanSoundFoldersAction").trigger()
    qtbot.waitUntil(lambda: not importer.busy, timeout=WAIT_MS)
    rows = _rows(studio)
    assert "bell ring" in rows and "wind gust" not in rows and len(rows) == 6
    assert model.record(rows["rain on a tin roof"]).seconds == pytest.approx(1.0, abs=0.01)
    moved = model.record(rows["slam moved"])
    assert moved.id == slam.id and moved.rating == 4


def test_cancel_stops_the_import_and_rescan_finishes_it(qtbot, studio, tmp_path, monkeypatch):
    folder = tmp_path / "many"
    folder.mkdir()
    for index in range(120):
        sf.write(folder / f"tick {index:03d}.wav", np.zeros((441, 1), np.float32), 44100)
    monkeypatch.setattr(QFileDialog, "getExistingDirectory",
                        staticmethod(lambda *_args, **_kw: str(folder)))
    importer = studio.studio.library_controller.importer
    child(studio, "importSoundFolderAction").trigger()
    assert child(studio, "libraryImportRow").isVisibleTo(studio)
    child(studio, "libraryImportCancelButton").click()
    qtbot.waitUntil(lambda: not importer.busy, timeout=WAIT_MS)
    assert not child(studio, "libraryImportRow").isVisibleTo(studio)
    assert "Import cancelled" in studio.studio.notifier.history[-1]
    assert len(_rows(studio)) < 121

    child(studio, "importSoundFolderAction").trigger()  # again: it picks up where it stopped
    qtbot.waitUntil(lambda: not importer.busy, timeout=WAIT_MS)
    assert len(_rows(studio)) == 121


def test_a_second_import_while_one_runs_is_refused_in_words(qtbot, studio, sounds, monkeypatch):
    monkeypatch.setattr(QFileDialog, "getExistingDirectory",
                        staticmethod(lambda *_args, **_kw: str(sounds[0].parent)))
    importer = studio.studio.library_controller.importer
    child(studio, "importSoundFolderAction").trigger()
    child(studio, "rescanSoundFoldersAction").trigger()
    assert "being imported" in studio.studio.notifier.history[-1]
    qtbot.waitUntil(lambda: not importer.busy, timeout=WAIT_MS)


def test_a_folder_that_is_gone_is_one_sentence(qtbot, studio, tmp_path, monkeypatch):
    _import_from_menu(qtbot, studio, monkeypatch, tmp_path / "not here")
    said = " ".join(studio.studio.notifier.history)
    assert "not here" in said and "Traceback" not in said
    assert len(_rows(studio)) == 1


def test_find_similar_lists_takes_and_imported_sounds(qtbot, studio, sounds, monkeypatch):
    _import_from_menu(qtbot, studio, monkeypatch, sounds[0].parent)
    _select(studio, "DOORWood_Creaky Door Open_HB_SFXLIB")
    similar = studio.studio.library_controller.similar
    child(studio, "librarySimilarButton").click()
    qtbot.waitUntil(lambda: not similar.busy, timeout=WAIT_MS)
    assert similar.active, studio.studio.notifier.history[-1]
    found = _rows(studio)
    assert "laser zap bright" in found and "DOORWood_Creaky Door Close_HB_SFXLIB" in found
    assert "DOORWood_Creaky Door Open_HB_SFXLIB" not in found  # what it searched by


def test_a_bundle_without_python_imports_on_the_import_thread(qtbot, studio, sounds,
                                                             monkeypatch):
    """A bundled app cannot start `python -m`: the same import runs on the window's import
    thread instead, with the same rows and words."""
    import app.library.import_worker as worker

    monkeypatch.setattr(worker, "child_command", lambda *_args: None)
    before = _hashes(sounds)
    _import_from_menu(qtbot, studio, monkeypatch, sounds[0].parent)
    assert len(_rows(studio)) == 1 + len(sounds)
    assert "Waveforms and sound search ready for 5 sounds" in \
        " ".join(studio.studio.notifier.history)
    assert _hashes(sounds) == before
