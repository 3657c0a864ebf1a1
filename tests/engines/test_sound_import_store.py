"""The store side of imported sounds: schema 5 reached from a schema 4 library with every row
kept, and watching folders (watchdog's events, and polling without it)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from engines.sound_import import watch
from engines.store.library import ClipLibrary
from tests.sound_folder_support import RATE, tone


def test_a_schema_4_library_gains_the_sound_tables_and_keeps_its_rows(tmp_path: Path):
    root = tmp_path / "library"
    with ClipLibrary(root) as lib:
        take = lib.add_imported(np.zeros((4410, 2), np.float32) + 0.1, "/x/own.wav", "own")
        lib.update(take.id, rating=4, tags=["kept"])
    # Back to what schema 4 had: no source_root, no sound tables, user_version 4.
    conn = sqlite3.connect(root / "library.sqlite3")
    conn.execute("DROP TABLE sound_files")
    conn.execute("DROP TABLE sound_folders")
    conn.execute("DROP INDEX takes_source")
    conn.execute("DROP INDEX takes_search")
    conn.execute("ALTER TABLE takes DROP COLUMN source_root")
    conn.execute("PRAGMA user_version = 4")
    conn.commit()
    cursor = conn.execute("SELECT * FROM takes")
    before = dict(zip([column[0] for column in cursor.description], cursor.fetchone(),
                      strict=True))
    conn.close()
    with ClipLibrary(root) as lib:
        assert lib.migrated_from == 4
        record = lib.get(take.id)
        assert (record.rating, record.tags, record.source) == (4, ["kept"], "Imported audio")
        assert lib.sound_folders() == [] and lib.count(source="generated") == 1
        after = dict(lib._conn.execute("SELECT * FROM takes").fetchone())
    assert after.pop("source_root") is None and after == before
    assert (root / "library.sqlite3.v4-backup").is_file()


@pytest.mark.parametrize("how", ["events", "polling"])
def test_watching_rescans_after_a_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         how: str):
    if how == "polling":
        monkeypatch.setattr(watch, "watching_how", lambda: "polling")
    elif watch.watching_how() != "events":
        pytest.skip("watchdog is not installed")
    monkeypatch.setattr(watch, "SETTLE_S", 0.2)
    folder = tmp_path / "sfx"
    folder.mkdir()
    stop = threading.Event()
    heard = []

    def on_change() -> None:
        heard.append(sorted(p.name for p in folder.iterdir()))
        if heard[-1]:  # polling calls it on every tick: until the file is there
            stop.set()

    thread = threading.Thread(target=watch.watch_folders,
                              args=([str(folder)], on_change, stop), kwargs={"poll_s": 0.3})
    thread.start()
    threading.Event().wait(0.3)  # the observer is scheduled
    sf.write(folder / "new.wav", tone(), RATE)
    thread.join(timeout=10)
    stop.set()
    assert not thread.is_alive() and heard and heard[-1] == ["new.wav"]
    if how == "events":
        assert heard == [["new.wav"]]  # heard once, after the writes settled
