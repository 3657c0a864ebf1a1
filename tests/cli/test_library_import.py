"""`python main.py library import FOLDER... [--watch] [--no-wait]`: the words the command says
(counts, each skipped file, one sentence per refused folder), its exit codes, and the Source
the library listing shows for imported sounds; no file is changed on the way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from main import main
from tests.sound_folder_support import FORMATS, hashes, write_sound_folder

SOUNDS = len(FORMATS) + 4


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return write_sound_folder(tmp_path / "sfx")


def test_import_says_what_it_did_and_changes_no_file(home: Path, folder: Path, capsys):
    before = hashes(folder)
    assert main(["library", "import", str(folder)]) == 0
    out, err = capsys.readouterr()
    assert f"{SOUNDS} new, 0 changed, 0 moved, 0 removed, 0 unchanged, 1 skipped" in out
    assert f"skipped {folder / 'broken.wav'}: it is not a sound file libsndfile can read" in out
    assert "1 other file (not sound) left alone." in out
    assert f"sound embeddings for {SOUNDS} sounds made" in out
    assert "listing files..." in err and "\r" not in err  # not a terminal: one line a stage
    assert "Traceback" not in out + err
    assert main(["library", "import"]) == 0  # a rescan of every folder imported
    assert f"0 new, 0 changed, 0 moved, 0 removed, {SOUNDS} unchanged" in capsys.readouterr().out
    assert hashes(folder) == before


def test_listing_shows_the_source_and_filters_by_it(home: Path, folder: Path, capsys):
    assert main(["library", "import", "--no-wait", str(folder)]) == 0
    assert "left for later" in capsys.readouterr().out
    assert main(["library", "list", "--source", str(folder), "--search", "tin roof"]) == 0
    out = capsys.readouterr().out
    assert "SOURCE" in out.splitlines()[0] and " sfx " in out and "rain" in out
    assert "1 of 1 take shown" in out
    assert main(["library", "list", "--source", "generated"]) == 0
    assert "0 of 0 takes shown" in capsys.readouterr().out
    assert main(["library", "list", "--json", "--search", "creaks open"]) == 0
    (take,) = json.loads(capsys.readouterr().out)
    assert take["source"] == str(folder) and take["mode"] == "imported"
    assert take["labels"]["fx_name"] == "Barn Creak"


@pytest.mark.parametrize("given, words", [
    ("nowhere", "does not exist; check the path and try again."),
    ("sfx/notes.txt", "is a file, not a folder; give the folder that holds your sounds."),
])
def test_a_bad_folder_is_one_sentence_and_exit_2(home: Path, folder: Path, capsys, given: str,
                                                  words: str):
    assert main(["library", "import", str(folder.parent / given)]) == 2
    out, err = capsys.readouterr()
    assert err.strip().splitlines()[-1].startswith("error: ") and words in err
    assert len(err.strip().splitlines()) == 1 and out == ""


def test_the_other_folders_are_imported_beside_a_bad_one(home: Path, folder: Path, capsys):
    assert main(["library", "import", str(folder.parent / "gone"), str(folder)]) == 2
    out, err = capsys.readouterr()
    assert f"{SOUNDS} new" in out and "warning: The folder" in err and "does not exist" in err


def test_a_rescan_with_nothing_imported_says_what_to_do(home: Path, capsys):
    assert main(["library", "import"]) == 2
    err = capsys.readouterr().err
    assert "No sound folder has been imported yet; give one" in err


def test_watch_ends_on_ctrl_c_with_one_sentence(home: Path, folder: Path, capsys,
                                                monkeypatch: pytest.MonkeyPatch):
    import engines.cli.library_import as command

    def interrupted(roots, on_change, stop, **_):
        (folder / "late.wav").write_bytes((folder / "plain.wav").read_bytes())
        on_change()  # what a change heard does: rescan and say so
        raise KeyboardInterrupt

    monkeypatch.setattr(command, "watch_folders", interrupted)
    assert main(["library", "import", "--watch", str(folder)]) == 130
    out, err = capsys.readouterr()
    assert "press Ctrl+C to stop" in out and "1 new, 0 changed" in out
    assert err.strip().splitlines()[-1] == ("cancelled: stopped watching; every change seen so "
                                            "far is in the library.")


def test_show_tells_the_source_and_what_to_do_when_the_file_is_gone(home: Path, folder: Path,
                                                                     tmp_path: Path, capsys):
    assert main(["library", "import", "--no-wait", str(folder)]) == 0
    capsys.readouterr()
    assert main(["library", "list", "--json", "--search", "tin roof"]) == 0
    (take,) = json.loads(capsys.readouterr().out)
    folder.rename(tmp_path / "unplugged")
    assert main(["library", "show", str(take["id"])]) == 0
    out = capsys.readouterr().out
    assert f"source       {folder} (referenced in place, never changed)" in out
    assert "MISSING: reconnect its drive, or rescan with `library import`" in out
    assert main(["library", "import"]) == 2  # the folder cannot be reached: nothing removed
    err = capsys.readouterr().err
    assert "cannot be reached, so its" in err and "connect its drive and rescan" in err
