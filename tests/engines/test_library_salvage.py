"""A damaged, truncated, emptied or deleted library database costs the user nothing they typed:
the rebuild brings back every readable row, the takes from the notes in their audio files, and
names, ratings, favourites, tags, notes, imported file names, timings and engine files from the
edit journal; and the user is always told, in one sentence, what came back from where."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from engines.store import journal as journal_module
from engines.store import opening, rebuild
from engines.store.library import ClipLibrary, LibraryError, TakeRecord
from tests.engines.test_library import engine_files_in, make_result

PAGE = 4096


def build_library(root: Path, files, takes: int = 20) -> list[TakeRecord]:
    """A library with everything a user can give a take: names, ratings, favourites, tags,
    notes, imported files, a deleted take; returns every take as it is before the damage."""
    lib = ClipLibrary(root)
    try:
        imported = lib.add_imported(np.full((4410, 2), 1200, np.int16), "/sounds/door hit.wav")
        for i in range(1, takes):
            record = lib.add(make_result(files, prompt=f"take {i} " + "wind " * (i % 7),
                                         seed=i, negative_prompt="hum" if i % 3 else ""),
                             name=f"Take {i}" if i % 2 else "",
                             parent_id=imported.id if i % 5 == 0 else None,
                             init_source="/sounds/door hit.wav" if i % 5 == 0 else None)
            lib.update(record.id, rating=i % 6, favourite=i % 4 == 0,
                       tags=[f"tag{i}", "batch"] if i % 3 == 0 else None,
                       notes=f"note for {i}\nsecond line" if i % 2 == 0 else None)
        lib.update(3, name="Renamed later", rating=5)
        lib.delete(4)
        return lib.search(include_deleted=True, limit=None)
    finally:
        lib.close()


def damage(db: Path, how: str, row_name: bytes = b"Take 19") -> bytes:
    data = bytearray(db.read_bytes())
    assert len(data) > 12 * PAGE, "the database must span enough pages to damage its middle"
    if how == "middle":  # the page holding a take's row (names are nowhere else) and the next
        start = data.index(row_name) // PAGE * PAGE
        assert start > 0
        data[start:start + 2 * PAGE] = np.random.default_rng(7).bytes(2 * PAGE)
    elif how == "header":
        data[:100] = bytes(100)
    elif how == "truncated":
        data = data[: len(data) * 2 // 3 + 123]
    elif how == "empty":
        data = bytearray()
    elif how == "garbage":
        data = bytearray(b"this is not a database at all " * 200)
    db.write_bytes(bytes(data))
    return bytes(data)


def by_id(records: list[TakeRecord]) -> dict[int, TakeRecord]:
    return {record.id: record for record in records}


@pytest.fixture
def files(tmp_path: Path):
    return engine_files_in(tmp_path / "engines")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One library built for the module; each test damages its own copy."""
    root = tmp_path_factory.mktemp("template") / "library"
    build_library(root, engine_files_in(root.parent / "engines"))
    return root


def copy_of(template: Path, tmp_path: Path) -> tuple[Path, list[TakeRecord]]:
    root = tmp_path / "library"
    shutil.copytree(template, root)
    with ClipLibrary(root) as lib:
        return root, lib.search(include_deleted=True, limit=None)


@pytest.mark.parametrize("how", ["middle", "header", "truncated", "empty", "garbage"])
def test_everything_the_user_typed_comes_back(tmp_path: Path, template, files, how: str):
    root, before = copy_of(template, tmp_path)
    broken = damage(root / "library.sqlite3", how)

    lib = ClipLibrary(root)
    try:
        after = lib.search(include_deleted=True, limit=None)
        assert by_id(after) == by_id(before)  # every field of every take, exactly
        notice = lib.notice
        assert notice is not None and notice.endswith(".") and ". " not in notice
        cause = "empty (0 bytes)" if how == "empty" else "damaged"
        assert notice.startswith(f"The library database was {cause}; a copy was kept as ")
        copies = [p for p in root.iterdir() if p.name.startswith("library.sqlite3.corrupt-")]
        assert len(copies) == 1 and copies[0].read_bytes() == broken
        assert str(copies[0]) in notice
        imported = lib.get(1)
        assert imported.is_imported and imported.init_source == "/sounds/door hit.wav"
        assert imported.name == "door hit.wav"
        assert lib.get(4).deleted and lib.get(4).audio_path.parent == root / "trash"
        assert (lib.get(3).name, lib.get(3).rating) == ("Renamed later", 5)
        tagged = [r.id for r in before if "batch" in r.tags and not r.deleted]
        assert len(tagged) >= 4 and [r.id for r in lib.search("batch")] == tagged
        assert [r.id for r in lib.search("second line")] == [
            r.id for r in before if r.notes and not r.deleted]
        take = lib.get(13)  # made as take 12: even, so notes; a multiple of 4: favourite
        assert take.notes == "note for 12\nsecond line" and take.favourite
        assert lib.add(make_result(files, seed=99)).id == len(before) + 1  # no id reused
    finally:
        lib.close()
    again = ClipLibrary(root)
    assert again.notice is None and again.count(include_deleted=True) == len(before) + 1
    again.close()


def _counts(notice: str) -> tuple[int, int]:
    rows = re.search(r"(\d+) takes? from the old database's readable rows", notice)
    notes = re.search(r"(\d+) takes? from the notes in their audio files", notice)
    return (int(rows.group(1)) if rows else 0), (int(notes.group(1)) if notes else 0)


@pytest.mark.parametrize("how", ["middle", "header"])
def test_readable_rows_are_salvaged_without_the_journal(tmp_path: Path, template, how: str):
    """The rows themselves hold everything: a take whose row survives needs no journal."""
    root, records = copy_of(template, tmp_path)
    before = by_id(records)
    (root / journal_module.JOURNAL_NAME).unlink()
    damage(root / "library.sqlite3", how)

    lib = ClipLibrary(root)
    try:
        after = by_id(lib.search(include_deleted=True, limit=None))
        assert after.keys() == before.keys()
        exact = [i for i in before if after[i] == before[i]]
        from_rows, from_notes = _counts(lib.notice or "")
        assert from_rows == len(exact) and from_rows + from_notes == len(before)
        if how == "header":  # a wiped header hides no row: a rebuilt one reads them all
            assert from_rows == len(before)
        else:
            assert 0 < from_rows < len(before)
            assert "edit journal had none" in lib.notice
        for take_id in set(before) - set(exact):  # the rest: what made them, from the note
            assert (after[take_id].prompt, after[take_id].seed) == (before[take_id].prompt,
                                                                    before[take_id].seed)
            assert "Recovered" in after[take_id].notes
    finally:
        lib.close()


def test_journal_survives_a_torn_line_and_keeps_later_edits(tmp_path: Path, files):
    root = tmp_path / "library"
    build_library(root, files, takes=14)
    journal = root / journal_module.JOURNAL_NAME
    with open(journal, "ab") as handle:  # a writer that died in the middle of a line
        handle.write(b'{"id": 2, "created": "2025-')
    with ClipLibrary(root) as lib:
        lib.update(2, tags=["after the tear"], rating=1)
        expected = lib.search(include_deleted=True, limit=None)
    damage(root / "library.sqlite3", "garbage")
    with ClipLibrary(root) as lib:
        assert lib.search(include_deleted=True, limit=None) == expected
        assert lib.get(2).tags == ["after the tear"]


def test_deleted_database_is_rebuilt_and_the_user_told(tmp_path: Path, files):
    root = tmp_path / "library"
    before = build_library(root, files, takes=6)
    for name in ("library.sqlite3", "library.sqlite3-wal", "library.sqlite3-shm"):
        (root / name).unlink(missing_ok=True)
    with ClipLibrary(root) as lib:
        assert lib.search(include_deleted=True, limit=None) == before
        assert lib.notice == ("The library database was missing, so a new one was built with "
                              "6 takes from the notes in their audio files, whose names, "
                              "ratings, tags and notes came back from the edit journal.")


def test_a_rebuild_cut_short_leaves_the_damaged_file_for_the_next_try(tmp_path, files,
                                                                     monkeypatch):
    root = tmp_path / "library"
    before = build_library(root, files, takes=8)
    broken = damage(root / "library.sqlite3", "middle", b"Take 5")

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(rebuild, "finish", fail)
    with pytest.raises(LibraryError) as info:
        ClipLibrary(root)
    assert str(info.value).count(". ") == 0 and "disk is full" in str(info.value)
    assert (root / "library.sqlite3").read_bytes() == broken  # nothing replaced, nothing lost
    assert not list(root.glob("*rebuilding*"))
    monkeypatch.undo()
    with ClipLibrary(root) as lib:
        assert lib.search(include_deleted=True, limit=None) == before
        assert lib.notice is not None and "damaged" in lib.notice


def test_an_uncommitted_take_gets_its_journal_entry_back(tmp_path: Path, files, monkeypatch):
    """A crash after the audio and the journal line were written but before COMMIT: the
    next open adopts the file and gives it the name and import source it was kept with."""
    root = tmp_path / "library"
    with ClipLibrary(root) as lib:
        imported = lib.add_imported(np.full((4410, 2), 0.25, np.float32), "/x/hum.wav",
                                    name="Hum")
    conn = sqlite3.connect(root / "library.sqlite3")
    conn.execute("DELETE FROM takes WHERE id = ?", (imported.id,))  # as if never committed
    conn.commit()
    conn.close()
    with ClipLibrary(root) as lib:
        back = lib.get(imported.id)
        assert back == imported and lib.notice is None


def test_journal_is_compacted_when_it_grows_far_past_its_takes(tmp_path, files, monkeypatch):
    monkeypatch.setattr(journal_module, "_COMPACT_MARGIN_BYTES", 2000)
    monkeypatch.setattr(journal_module, "_COMPACT_BYTES_PER_TAKE", 500)
    root = tmp_path / "library"
    with ClipLibrary(root) as lib:
        record = lib.add(make_result(files))
        for stars in [1, 2, 3, 4, 5] * 6:
            lib.update(record.id, rating=stars, notes=f"pass {stars}")
        expected = lib.get(record.id)
    journal = root / journal_module.JOURNAL_NAME
    grown = journal.stat().st_size
    ClipLibrary(root).close()
    lines = journal.read_text().splitlines()
    assert journal.stat().st_size < grown and len(lines) == 1
    assert json.loads(lines[0])["set"]["rating"] == 5
    damage_all = root / "library.sqlite3"
    damage_all.write_bytes(b"")
    with ClipLibrary(root) as lib:
        assert lib.get(record.id) == expected


def test_notice_sentences_read_well():
    report = rebuild.RebuildReport("damaged", Path("/lib/library.sqlite3.corrupt-1"),
                                   from_rows=1, from_notes=2, from_journal=1)
    assert report.notice() == (
        "The library database was damaged; a copy was kept as '/lib/library.sqlite3.corrupt-1' "
        "and a new one was built with 1 take from the old database's readable rows and 2 takes "
        "from the notes in their audio files; the edit journal gave back the names, ratings, "
        "tags and notes of 1 of those 2, the others' are lost.")
    assert rebuild.RebuildReport("empty (0 bytes)", Path("/l/x")).notice().endswith(
        "no takes were found to bring back.")


def test_rebuild_never_leaves_the_damaged_wal_beside_the_new_database(tmp_path, files):
    root = tmp_path / "library"
    build_library(root, files, takes=4)
    wal = root / "library.sqlite3-wal"
    wal.write_bytes(os.urandom(5000))
    damage(root / "library.sqlite3", "garbage")
    with ClipLibrary(root) as lib:
        assert lib.count(include_deleted=True) == 4
        copies = sorted(p.name for p in root.iterdir() if ".corrupt-" in p.name)
        assert len(copies) == 2 and copies[1] == copies[0] + "-wal"
    assert opening.DB_NAME == "library.sqlite3"
