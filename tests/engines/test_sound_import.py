"""Importing a designer's own sound folders in place (issue 34): every format and the metadata
each carries, the library rows both kinds share, and the promise that no file is ever changed
(SHA-256 and mtime of every file before and after import, thumbnails, embeddings, rescan)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from engines.audio_io import read_audio
from engines.constants import SAMPLE_RATE
from engines.sound_import import import_folders, make_sound_extras
from engines.sound_import.peaks import fit_peaks
from engines.sound_import.probe import NotReadable
from engines.sound_import.ucs_filename import ucs_name_fields
from engines.store.library import ClipLibrary
from engines.store.sound_files import PEAK_COLUMNS
from tests.sound_folder_support import BWF_NAME, FORMATS, UCS_NAME, hashes, write_sound_folder


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return write_sound_folder(tmp_path / "sfx")


@pytest.fixture
def library(tmp_path: Path):
    with ClipLibrary(tmp_path / "library") as lib:
        yield lib


def by_name(library: ClipLibrary) -> dict[str, object]:
    return {Path(r.audio_path).name: r for r in library.search("", limit=None,
                                                              source="imported")}


def test_every_format_is_listed_with_what_its_file_says(folder: Path, library: ClipLibrary):
    report = import_folders(library, [folder])
    assert (report.imported, report.skipped, report.ignored) == (len(FORMATS) + 4, 1, 1)
    assert report.skipped_files == [(str(folder / "broken.wav"), report.skipped_files[0][1])]
    assert "libsndfile" in report.skipped_files[0][1]
    sounds = by_name(library)
    assert set(FORMATS) <= set(sounds)
    assert {library.sound_file(sounds[name].id).format for name in FORMATS} == {
        "WAV", "FLAC", "OGG", "AIFF", "MP3"}
    bwf = sounds[Path(BWF_NAME).name]
    assert bwf.prompt == "Barn door creaks open slowly"  # bext description
    assert bwf.labels == {"catid": "DOORWood", "category": "DOORS", "subcategory": "WOOD",
                          "fx_name": "Barn Creak", "creator": "JD", "source": "FieldLib"}
    assert (bwf.sample_rate, bwf.samples) == (48_000, 12_000)  # its own header, untouched
    assert sounds["rain.flac"].prompt == "Light rain on a tin roof"  # mutagen's comment
    assert sounds["rain.flac"].labels["catid"] == "RAINTin"
    assert sounds["wind.ogg"].labels["fx_name"] == "Pine Wind"
    ucs = sounds[UCS_NAME].labels
    assert (ucs["catid"], ucs["fx_name"], ucs["creator"], ucs["source"]) == (
        "DOORWood", "Creak Slow", "JD", "Barn")
    for record in sounds.values():
        assert record.is_imported and record.is_sound_file and record.source == str(folder)
        assert Path(record.audio_path).is_relative_to(folder)
    # Search finds both kinds by words, labels, keywords and the folder inside the import.
    assert [r.id for r in library.search("tin roof")] == [sounds["rain.flac"].id]
    assert [r.id for r in library.search("fieldlib")] == [bwf.id]
    assert [r.id for r in library.search("rusty")] == [bwf.id]
    assert [r.id for r in library.search("field door")] == [bwf.id]
    library.update(bwf.id, notes="for the barn scene", tags=["take two"])  # edits keep them
    assert [r.id for r in library.search("rusty scene")] == [bwf.id]
    assert library.count(source="generated") == 0
    assert library.count(source=str(folder)) == len(sounds)
    assert [f.root for f in library.sound_folders()] == [str(folder)]


def test_no_file_is_ever_changed(folder: Path, library: ClipLibrary):
    before = hashes(folder)
    import_folders(library, [folder])
    extras = make_sound_extras(library)
    assert extras.embeddings == extras.thumbnails == len(FORMATS) + 4
    for record in library.search("", source="imported", limit=None):
        library.load_float_audio(record.id)
        library.update(record.id, rating=3, tags=["mine"], notes="kept")
        library.set_labels(record.id, {"creator": "ME"})
        library.delete(record.id)
        library.restore(record.id)
    import_folders(library, None)
    library.delete(library.search("rain")[0].id)
    library.purge_trash()
    import_folders(library, None)
    assert hashes(folder) == before


def test_thumbnails_and_embeddings_cover_imported_sounds(folder: Path, library: ClipLibrary):
    import_folders(library, [folder])
    make_sound_extras(library)
    bwf = library.search("creaks open")[0]
    peaks = library.sound_peaks(bwf.id)
    assert peaks.shape == (2, PEAK_COLUMNS) and peaks.min() < -0.25 and peaks.max() > 0.25
    assert fit_peaks(peaks, 56).shape == (2, 56)
    index = library.similarity_index()
    assert all(r.id in index for r in library.search("", source="imported", limit=None))
    # Init audio: the 48 kHz mono file as every request takes audio, 44.1 kHz stereo.
    audio = library.load_float_audio(bwf.id)
    assert audio.shape == (round(0.25 * SAMPLE_RATE), 2)
    np.testing.assert_array_equal(audio, read_audio(folder / BWF_NAME))
    assert make_sound_extras(library).embeddings == 0  # nothing left to do


def test_a_rescan_with_nothing_changed_reads_no_file(folder: Path, library: ClipLibrary,
                                                      monkeypatch: pytest.MonkeyPatch):
    import_folders(library, [folder])
    import engines.sound_import.importer as importer

    read = []

    def reading(found, *args):
        read.append(found.path)
        raise NotReadable("it is no sound", False)

    monkeypatch.setattr(importer, "read_sound", reading)
    report = import_folders(library, None)
    # Only the two files that are no sounds are looked at again: the library holds no row
    # whose stat could say they are unchanged.
    assert sorted(Path(path).name for path in read) == ["broken.wav", "notes.txt"]
    assert report.unchanged == len(FORMATS) + 4 and report.imported == 0


def test_rescan_adds_changes_moves_and_removes(folder: Path, library: ClipLibrary):
    import_folders(library, [folder])
    make_sound_extras(library)
    sounds = by_name(library)
    moved_id, changed_id, gone_id = (sounds["plain.wav"].id, sounds["rain.flac"].id,
                                     sounds["plain.aiff"].id)
    library.update(moved_id, rating=5, tags=["keeper"])
    embedded_before = library.similarity_index()
    (folder / "plain.wav").rename(folder / "field" / "renamed.wav")
    from tests.sound_folder_support import write_tagged
    write_tagged(folder / "rain.flac", "FLAC", {"DESCRIPTION": "Heavy rain now"})
    os.utime(folder / "rain.flac", ns=(1, 2_000_000_000_000_000_000))
    (folder / "plain.aiff").unlink()
    (folder / "new.flac").write_bytes((folder / "plain.flac").read_bytes())  # a copy: new
    report = import_folders(library, None)
    assert (report.imported, report.updated, report.moved, report.removed) == (1, 1, 1, 1)
    moved = library.get(moved_id)
    assert moved.audio_path == folder / "field" / "renamed.wav" and moved.name == "renamed"
    assert (moved.rating, moved.tags) == (5, ["keeper"])
    assert moved_id in embedded_before and library.sound_peaks(moved_id) is not None
    changed = library.get(changed_id)
    assert changed.prompt == "Heavy rain now" and library.sound_peaks(changed_id) is None
    assert library.search("heavy rain")[0].id == changed_id
    assert gone_id not in {r.id for r in library.search("", limit=None, include_deleted=True)}
    assert make_sound_extras(library).embeddings == 2  # the changed file and the new one


def test_an_unreachable_folder_removes_nothing(folder: Path, library: ClipLibrary,
                                               tmp_path: Path):
    import_folders(library, [folder])
    count = library.count(source="imported")
    folder.rename(tmp_path / "unplugged")
    report = import_folders(library, None)
    assert report.removed == 0 and "cannot be reached" in report.folder_problems[0]
    assert library.count(source="imported") == count
    assert all(r.missing for r in library.search("", source="imported", limit=None))


def test_bad_folders_are_one_sentence_each_and_the_rest_is_imported(folder: Path,
                                                                    library: ClipLibrary,
                                                                    tmp_path: Path):
    report = import_folders(library, [tmp_path / "nowhere", folder / UCS_NAME, folder,
                                      library.root / "audio"])
    assert report.imported == len(FORMATS) + 4
    assert len(report.folder_problems) == 3
    assert "does not exist" in report.folder_problems[0]
    assert "is a file, not a folder" in report.folder_problems[1]
    assert "inside the library" in report.folder_problems[2]
    assert all(p.count(".") >= 1 and p.endswith(".") for p in report.folder_problems)


def test_a_symlink_loop_is_walked_once(folder: Path, library: ClipLibrary):
    (folder / "field" / "back up").symlink_to(folder, target_is_directory=True)
    report = import_folders(library, [folder])
    assert report.imported == len(FORMATS) + 4


def test_a_purged_sound_stays_out_and_its_file_stays(folder: Path, library: ClipLibrary):
    import_folders(library, [folder])
    rain = library.search("tin roof")[0]
    library.delete(rain.id)
    assert library.search("tin roof") == [] and (folder / "rain.flac").is_file()
    assert library.purge_trash() == 1 and (folder / "rain.flac").is_file()
    report = import_folders(library, None)
    assert report.imported == 0 and library.search("tin roof") == []


def test_cancel_keeps_what_was_written_and_a_rescan_finishes(folder: Path,
                                                              library: ClipLibrary,
                                                              monkeypatch: pytest.MonkeyPatch):
    import threading

    import engines.sound_import.importer as importer

    monkeypatch.setattr(importer, "WRITE_BATCH", 3)
    monkeypatch.setattr(importer, "PROGRESS_INTERVAL_S", 0.0)
    cancel = threading.Event()

    def progress(step) -> None:
        if step.phase == "writing":
            cancel.set()  # after the first batch of three was committed

    report = import_folders(library, [folder], progress=progress, cancel=cancel)
    assert report.cancelled and report.imported == 3
    assert library.count(source="imported") == 3
    assert import_folders(library, None).imported == len(FORMATS) + 4 - 3


def test_ucs_file_names_are_read_only_when_they_look_like_ucs():
    assert ucs_name_fields("AMBForst_Birds Dawn_AB_Lib_extra", None) == {
        "catid": "AMBForst", "fx_name": "Birds Dawn", "creator": "AB", "source": "Lib"}
    assert ucs_name_fields("DOORWood-Front_Slam", None)["catid"] == "DOORWood"
    assert ucs_name_fields("door_slam_01", None) == {}
    assert ucs_name_fields("Kick", None) == {}
