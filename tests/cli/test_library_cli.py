"""`python main.py library ...` run as a user's script runs it: real processes over a library
made by `generate` (text-to-audio, audio-to-audio, inpainting) and a take kept through the API.
Every edit round-trips through `show --json`; every refusal is one line, exit 2, nothing
changed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engines.store.library import ClipLibrary
from tests.cli_runner import run_cli
from tests.engines.test_library import engine_files_in, make_result, read_only_folder

REPO = Path(__file__).resolve().parents[2]
TAKE_KEYS = {"id", "name", "created", "mode", "parent", "model", "prompt", "seconds", "seed",
             "rating", "favourite", "tags", "notes", "deleted", "files", "finishing", "quality",
             "labels", "variation", "variations", "provenance",  # labels...: issue 31
             "source",  # issue 34: Generated, Imported audio, or an imported folder
             "adapters"}  # issue 35: the LoRA/DoRA adapters it was made with
RAW_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def run(home: Path, *args: str, stdin: int | None = subprocess.DEVNULL,
        timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "SA3_STUDIO_HOME": str(home)}
    if stdin == subprocess.DEVNULL:  # in this process (tests/cli_runner.py); a terminal needs one
        return run_cli(args, env=env, cwd=REPO, timeout=timeout)
    return subprocess.run([sys.executable, str(REPO / "main.py"), *args], cwd=REPO, env=env,
                          stdin=stdin, capture_output=True, text=True, timeout=timeout)


def ok(home: Path, *args: str) -> str:
    done = run(home, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def refused(home: Path, *args: str, says: str = "") -> str:
    """The one-line stderr of a refused command (exit 2, nothing on stdout)."""
    done = run(home, *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: ") and "Traceback" not in done.stderr
    assert says.lower() in done.stderr.lower(), done.stderr
    return done.stderr


def shown(home: Path, take: int) -> dict:
    return json.loads(ok(home, "library", "show", str(take), "--json"))


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder whose library holds: 1 t2a, 2 its exported file imported (parent #1),
    3 a2a and 4 inpaint made from 2, and 5 a2a kept through the API with parent #1."""
    home = tmp_path_factory.mktemp("library-cli") / "home"
    out = home.parent / "out"
    out.mkdir()
    (home.parent / "models").mkdir()  # the demo model needs no files
    base = ["generate", "--models-dir", str(home.parent / "models"), "--seconds", "0.5",
            "--steps", "2"]
    ok(home, *base, "--prompt", "rain on a tin roof", "--seed", "1", "--out", f"{out}/rain.wav")
    ok(home, *base, "--prompt", "bell", "--seed", "2", "--init-audio", f"{out}/rain.wav",
       "--out", f"{out}/bell.wav")
    ok(home, *base, "--prompt", "door", "--seed", "3", "--init-audio", f"{out}/rain.wav",
       "--inpaint", "0.1:0.3", "--out", f"{out}/door.wav")
    files = engine_files_in(home.parent / "engines")
    init = np.zeros((22050, 2), np.float32)
    with ClipLibrary(home / "library") as lib:
        take = lib.add(make_result(files, prompt="wind", seed=5, init_audio=init,
                                   init_noise_level=0.5), parent_id=1)
        assert take.id == 5 and take.mode == "a2a"
    return home


@pytest.fixture
def home(template: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "home"
    shutil.copytree(template, copy)
    return copy


def table(home: Path, *flags: str) -> dict[int, dict[str, str]]:
    """`library list` as {id: {column: value}} for the one-word columns."""
    lines = ok(home, "library", "list", *flags).splitlines()
    header, rows = lines[0], lines[1:-1]
    assert header.split()[:8] == ["ID", "CREATED", "(UTC)", "MODEL", "MODE", "PARENT",
                                  "SECONDS", "SEED"]
    names = ["ID", "DATE", "TIME", "MODEL", "MODE", "PARENT", "SECONDS", "SEED"]
    return {int(row.split()[0]): dict(zip(names, row.split(), strict=False)) for row in rows}


def test_list_tells_modes_and_parents_apart(home: Path):
    rows = table(home)
    assert {take: (row["MODE"], row["PARENT"]) for take, row in rows.items()} == {
        5: ("a2a", "#1"), 4: ("inpaint", "#2"), 3: ("a2a", "#2"), 2: ("imported", "#1"),
        1: ("t2a", "-")}
    assert rows[2]["SEED"] == "-" and rows[1]["SEED"] == "1"
    assert "5 of 5 takes shown" in ok(home, "library", "list")


def test_json_output_holds_every_field_in_one_shape(home: Path):
    with ClipLibrary(home / "library") as lib:  # text a terminal would act on, kept as given
        lib.update(3, name="bell \x1b[31mred\x9b", notes="line one\nline two\x07")
    out = ok(home, "library", "list", "--json")
    assert not RAW_CONTROLS.search(out)
    takes = json.loads(out)
    assert isinstance(takes, list) and [t["id"] for t in takes] == [5, 4, 3, 2, 1]
    assert all(set(t) == TAKE_KEYS for t in takes)
    by_id = {t["id"]: t for t in takes}
    assert by_id[3]["name"] == "bell \x1b[31mred\x9b" and by_id[3]["notes"].endswith("\x07")
    assert (by_id[3]["mode"], by_id[3]["parent"], by_id[5]["parent"]) == ("a2a", 2, 1)
    assert by_id[2]["seed"] is None and by_id[2]["model"] == "imported"
    one = by_id[1]
    assert (one["prompt"], one["seed"], one["model"], one["seconds"]) == (
        "rain on a tin roof", 1, "demo", 0.5)
    assert (one["rating"], one["favourite"], one["tags"], one["deleted"]) == (0, False, [], False)
    audio = one["files"]["audio"]
    assert Path(audio["path"]).is_file() and audio["format"] == "wav16"
    assert (audio["sample_rate"], audio["samples"], audio["missing"]) == (44100, 22050, False)
    assert one["finishing"] is None and one["quality"] == []
    assert one["provenance"]["request"]["prompt"] == "rain on a tin roof"
    show = ok(home, "library", "show", "3", "--json")
    shown = json.loads(show)
    assert shown["files"]["audio"].pop("damaged") is False  # show reads the file whole
    assert shown["files"]["audio"].pop("problem") is None
    assert not RAW_CONTROLS.search(show) and shown == by_id[3]
    assert json.loads(ok(home, "library", "list", "--json", "--search", "nothing like it")) == []


def test_rate_round_trips_and_refuses_what_is_out_of_range(home: Path):
    assert ok(home, "library", "rate", "3", "4") == "take #3 rated 4/5\n"
    assert shown(home, 3)["rating"] == 4
    for stars in ("6", "-1", "x", "2.5"):
        refused(home, "library", "rate", "3", stars, says="0 to 5")
    refused(home, "library", "rate", "99", "1", says="no take #99")
    refused(home, "library", "rate", "0", "1", says="take")
    ok(home, "library", "rate", "3", "0")
    assert shown(home, 3)["rating"] == 0


def test_tag_and_untag_round_trip(home: Path):
    assert ok(home, "library", "tag", "1", "wood", "door, slam") == \
        "take #1 tags: wood, door, slam\n"
    ok(home, "library", "tag", "1", "WOOD", "metal")  # tags are the same in any case
    assert shown(home, 1)["tags"] == ["wood", "door", "slam", "metal"]
    assert [*table(home, "--search", "slam")] == [1]
    done = run(home, "library", "tag", "1", "--remove", "Wood", "glass")
    assert done.returncode == 0 and "no tag 'glass'" in done.stderr
    assert shown(home, 1)["tags"] == ["door", "slam", "metal"]
    for bad, says in (("", "empty"), ("  ", "empty"), ("a,,b", "empty"),
                      ("bad\x1b[2Jtag", "control characters"), ("tab\there", "control"),
                      ("x" * 101, "longer than")):
        refused(home, "library", "tag", "1", "fine", bad, says=says)
    assert shown(home, 1)["tags"] == ["door", "slam", "metal"]  # "fine" was not added either
    refused(home, "library", "tag", "42", "wood", says="no take #42")


def test_favourite_on_and_off(home: Path):
    assert ok(home, "library", "favourite", "4") == "take #4 is a favourite\n"
    assert shown(home, 4)["favourite"] is True
    assert [*table(home, "--favourites")] == [4]
    assert ok(home, "library", "favourite", "4", "--off") == "take #4 is not a favourite\n"
    assert shown(home, 4)["favourite"] is False
    refused(home, "library", "favourite", "-3", says="no take #-3")


def test_delete_hides_and_restore_brings_back(home: Path):
    audio = Path(shown(home, 3)["files"]["audio"]["path"])
    out = ok(home, "library", "delete", "3", "4", "3")
    assert out.splitlines()[0].startswith("take #3 moved to the trash") and out.count("\n") == 2
    assert [*table(home)] == [5, 2, 1]
    assert [*table(home, "--deleted")] == [5, 4, 3, 2, 1]
    moved = Path(shown(home, 3)["files"]["audio"]["path"])
    assert shown(home, 3)["deleted"] and moved.parent.name == "trash" and moved.is_file()
    assert not audio.exists()
    refused(home, "library", "delete", "1", "3", says="#3 is already in the trash")
    refused(home, "library", "delete", "1", "77", says="no take #77")
    refused(home, "library", "restore", "3", "1", says="#1 is not in the trash")
    assert [*table(home)] == [5, 2, 1]  # none of the refused commands changed anything
    assert ok(home, "library", "restore", "3", "4") == "take #3 restored\ntake #4 restored\n"
    assert [*table(home)] == [5, 4, 3, 2, 1] and audio.is_file()


@pytest.mark.slow  # a real process with a terminal as stdin
def test_purge_asks_or_needs_yes_and_removes_rows_and_files(home: Path):
    ok(home, "library", "delete", "3", "4")
    trashed = [Path(shown(home, take)["files"]["audio"]["path"]) for take in (3, 4)]
    says = refused(home, "library", "purge", says="--yes")
    assert "2 takes" in says and "no terminal" in says
    assert all(path.is_file() for path in trashed) and [*table(home, "--deleted")] == \
        [5, 4, 3, 2, 1]
    assert _on_terminal(home, "n\n") == (0, "Nothing was deleted.\n")
    assert all(path.is_file() for path in trashed)
    ok(home, "library", "restore", "4")
    code, out = _on_terminal(home, "y\n")
    assert (code, out) == (0, "Deleted 1 take for good.\n")
    assert not trashed[0].exists() and [*table(home, "--deleted")] == [5, 4, 2, 1]
    assert Path(shown(home, 4)["files"]["audio"]["path"]).is_file()
    ok(home, "library", "delete", "4")
    assert ok(home, "library", "purge", "--yes") == "Deleted 1 take for good.\n"
    assert not trashed[1].exists() and [*table(home, "--deleted")] == [5, 2, 1]
    refused(home, "library", "show", "4", says="no take #4")
    assert ok(home, "library", "purge") == "The trash is empty; nothing was deleted.\n"
    assert not list((home / "library" / "trash").glob("*.wav"))
    # A take made from a purged one keeps its parent's id, and still shows.
    ok(home, "library", "delete", "1")
    ok(home, "library", "purge", "--yes")
    assert shown(home, 5)["parent"] == 1 and ok(home, "library", "show", "5")
    assert table(home)[5]["PARENT"] == "#1"


def _on_terminal(home: Path, answer: str) -> tuple[int, str]:
    """Run `library purge` with a terminal as stdin that types `answer`."""
    import pty

    main_fd, terminal = pty.openpty()
    try:
        os.write(main_fd, answer.encode())
        done = run(home, "library", "purge", stdin=terminal)
    finally:
        os.close(terminal)
        os.close(main_fd)
    assert "Delete" in done.stderr and "in the trash for good? [y/N]" in done.stderr
    return done.returncode, done.stdout


def test_read_only_library_refuses_every_edit(home: Path):
    ok(home, "library", "delete", "4")
    before = {p: p.read_bytes() for p in (home / "library").rglob("*") if p.is_file()}
    with read_only_folder(home / "library"):
        for args in (["rate", "1", "3"], ["tag", "1", "wood"], ["tag", "1", "x", "--remove"],
                     ["favourite", "1"], ["delete", "1"], ["restore", "4"], ["purge", "--yes"],
                     ["purge"]):
            says = refused(home, "library", *args, says="read-only")
            assert "nothing was changed" in says
        assert shown(home, 1)["rating"] == 0
    after = {p: p.read_bytes() for p in (home / "library").rglob("*") if p.is_file()}
    assert after == before
