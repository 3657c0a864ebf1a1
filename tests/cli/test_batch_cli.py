"""`batch LIST --out DIR` on the demo models (in this process; a real subprocess where a signal or
a terminal is what is tested): CSV and JSON lists with good and bad rows, exit codes, the
manifest and sidecars, resuming after SIGINT and SIGKILL, --force, --jobs, --dry-run and name
templates."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tests.cli_runner import run_cli

REPO = Path(__file__).resolve().parents[2]
BATCH = "import sys; from engines.cli.batch import main; sys.exit(main(sys.argv[1:]))"


def command(list_path: Path, out: Path, models: Path, *flags: str) -> list[str]:
    return [sys.executable, "-c", BATCH, str(list_path), "--out", str(out), "--models-dir",
            str(models), *flags]


def batch(list_path: Path, out: Path, models: Path, home: Path, *flags: str
          ) -> subprocess.CompletedProcess:
    return run_cli(["batch", str(list_path), "--out", str(out), "--models-dir", str(models),
                    *flags], cwd=REPO, env=_env(home), timeout=300)


def start(list_path: Path, out: Path, models: Path, home: Path, *flags: str) -> subprocess.Popen:
    # Its own process group, so a signal can go to the whole group, as Ctrl+C at a terminal does.
    return subprocess.Popen(command(list_path, out, models, *flags), cwd=REPO, env=_env(home),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "SA3_STUDIO_HOME": str(home)}


def manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


def by_file(data: dict) -> dict[str, dict]:
    return {item["file"]: item for item in data["items"] if item["file"]}


def many(tmp_path: Path, count: int) -> Path:
    rows = "".join(f"s{i:02},sound number {i},0.5,{100 + i},2\n" for i in range(count))
    path = tmp_path / "many.csv"
    path.write_text("name,prompt,seconds,seed,steps\n" + rows)
    return path


def wait_for(path: Path, process: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def test_csv_list_renders_good_rows_and_names_bad_ones_by_line(tmp_path: Path, models: Path,
                                                               home: Path):
    sf.write(tmp_path / "door.wav", np.random.default_rng(1).uniform(-0.3, 0.3, (44100, 2)),
             44100)
    (tmp_path / "list.csv").write_text(
        "\ufeffname,prompt,seconds,variations,seed,steps,init_audio,inpaint,category,colour\n"
        'door_creak,"old door,\ncreaking",1,2,40,3,,,DOORWood,red\n'
        "broken,thunder,abc,1,,2,,,,\n"
        "repaint,door creak,1,1,7,2,door.wav,0.3:0.6,,\n"
        "missing_init,rain,1,1,,2,nowhere.wav,,,\n"
        "ui_click,click,0.5,1,,2,,,,\n", encoding="utf-8")
    out = tmp_path / "out"
    done = batch(tmp_path / "list.csv", out, models, home)
    assert done.returncode == 1, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors[0] == "error: line 4: seconds 'abc' is not a number; write it like 1.5."
    assert errors[1].startswith("error: line 6: init_audio 'nowhere.wav' was not found")
    assert done.stderr.count("colour") == 1  # the unknown column: one warning
    assert "[4/4] " in done.stdout and " ok " in done.stdout

    data = manifest(out)
    assert data["summary"] == {"ok": 4, "skipped": 0, "failed": 2, "pending": 0}
    files = by_file(data)
    assert sorted(files) == ["door_creak_01.wav", "door_creak_02.wav", "repaint_01.wav",
                             "ui_click_01.wav"]
    first, second = files["door_creak_01.wav"], files["door_creak_02.wav"]
    assert (first["seed"], second["seed"]) == (40, 41) and first["where"] == "line 2"
    assert isinstance(first["library_id"], int) and len(first["params_hash"]) == 64
    assert first["timings_ms"]["total"] > 0 and first["timings_ms"]["wall"] > 0
    assert files["ui_click_01.wav"]["seed_was_random"] is True
    for name, item in files.items():
        audio, rate = sf.read(out / name, dtype="int16")
        assert rate == 44100 and audio.shape[0] == round(item["seconds"] * 44100)
        sidecar = json.loads((out / item["sidecar"]).read_text())
        assert sidecar["seed"] == item["seed"] and sidecar["library_id"] == item["library_id"]
        assert sidecar["batch"]["params_hash"] == item["params_hash"]
    repaint = json.loads((out / "repaint_01.json").read_text())
    assert repaint["request"]["mode"] == "inpaint"
    assert repaint["request"]["init_audio"]["sha256"]

    from engines.store.library import ClipLibrary

    with ClipLibrary(home / "library") as library:
        take = library.get(first["library_id"])
        # Kept under the sound's name, its number in the row beside it (issue 31).
        assert take.name == "door_creak" and take.seed == 40 and "DOORWood" in take.tags
        assert (take.variation, take.variations) == (1, 2)
        assert library.get(files["repaint_01.wav"]["library_id"]).parent_id is not None


def test_json_list_with_presets_loops_and_a_name_template(tmp_path: Path, models: Path,
                                                          home: Path):
    items = [
        {"name": "amb", "prompt": "forest ambience", "seconds": 3, "seed": 9, "steps": 2,
         "loop": True, "category": "AMBForst"},
        {"name": "hit", "prompt": "metal hit", "seconds": 1, "seed": 3, "steps": 2,
         "preset": "Game SFX one-shot"},
        {"name": "odd", "prompt": "x", "steps": "many"},
        {"name": "hit", "prompt": "metal hit again", "seconds": 1, "steps": 2},
    ]
    (tmp_path / "list.json").write_text(json.dumps(items))
    out = tmp_path / "out"
    done = batch(tmp_path / "list.json", out, models, home, "--name",
                 "{category}{name}_{n:02}", "--no-library")
    assert done.returncode == 1, done.stderr
    assert "error: item [2]: steps 'many' is not a whole number" in done.stderr
    assert "error: item [3]: hit_01.wav is already the name of a take from item [1]" in \
        done.stderr
    loop = json.loads((out / "AMBForstamb_01.json").read_text())
    assert loop["finishing"]["loop"]["method"] == "model" and loop["library_id"] is None
    assert loop["finishing"]["loop_points"] is not None
    hit = sf.info(out / "hit_01.wav")
    assert (hit.samplerate, hit.subtype) == (48000, "PCM_24")  # the preset's delivery
    assert json.loads((out / "hit_01.json").read_text())["finishing"]["chain"]["preset"] == \
        "Game SFX one-shot"

    again = batch(tmp_path / "list.json", out, models, home, "--name",
                  "{category}{name}_{n:02}", "--no-library")
    assert again.returncode == 1 and manifest(out)["summary"]["skipped"] == 2


@pytest.mark.parametrize("content, words", [
    (None, "does not exist"),
    ("title,prompt\na,b\n", "no name columns"),
    ('[{"name": "a", "prompt": "b"', "is not valid JSON"),
    ('{"name": "a"}', "not a list of objects"),
    ("[]", "has no sounds"),
])
def test_a_list_that_cannot_be_used_exits_2_with_one_line(tmp_path: Path, models: Path,
                                                          home: Path, content, words):
    path = tmp_path / ("list.json" if content and content[0] in "[{" else "list.csv")
    if content is not None:
        path.write_text(content)
    out = tmp_path / "out"
    done = batch(path, out, models, home)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ")
    assert words in done.stderr and not out.exists()


def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path: Path, models: Path, home: Path):
    (tmp_path / "list.csv").write_text("name,prompt,seconds,variations,seed\n"
                                       "rain,rain on a roof,2,3,5\n")
    out = tmp_path / "out"
    done = batch(tmp_path / "list.csv", out, models, home, "--dry-run")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("rain_01.wav  line 2  demo  2.00 s  8 steps  seed 5")
    assert "3 take(s) to render" in done.stdout and "6.0 s of audio" in done.stdout
    assert "estimated time about" in done.stdout and "per-model constant" in done.stdout
    assert not out.exists() and not (home / "library").exists()


@pytest.mark.slow  # Ctrl+C to a real process group
@pytest.mark.posix
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_resume_after_ctrl_c(tmp_path: Path, models: Path, home: Path, jobs: str):
    list_path, out = many(tmp_path, 40), tmp_path / "out"
    process = start(list_path, out, models, home, "--jobs", jobs)
    wait_for(out / "s00_01.wav", process)
    os.killpg(process.pid, signal.SIGINT)  # the workers too, as at a terminal
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "run the same command again to continue" in stderr
    data = manifest(out)
    done = [item for item in data["items"] if item["status"] == "ok"]
    assert done and data["summary"]["pending"] == 40 - len(done)  # none failed
    assert all((out / item["file"]).is_file() for item in done)

    rerun = batch(list_path, out, models, home)
    assert rerun.returncode == 0, rerun.stderr
    summary = manifest(out)["summary"]
    assert summary == {"ok": 40 - len(done), "skipped": len(done), "failed": 0, "pending": 0}


@pytest.mark.slow  # SIGKILL to a real process
@pytest.mark.posix
def test_resume_after_sigkill_never_lists_a_half_written_file(tmp_path: Path, models: Path,
                                                              home: Path):
    list_path, out = many(tmp_path, 40), tmp_path / "out"
    process = start(list_path, out, models, home)
    wait_for(out / "s02_01.wav", process)
    process.kill()
    process.communicate(timeout=60)
    data = manifest(out)  # parses: it is only ever replaced whole
    listed = [item for item in data["items"] if item["status"] == "ok"]
    for item in listed:
        assert sf.info(out / item["file"]).frames == 22050
        assert json.loads((out / item["sidecar"]).read_text())["seed"] == item["seed"]
    rerun = batch(list_path, out, models, home, "--no-library")
    assert rerun.returncode == 0, rerun.stderr
    assert manifest(out)["summary"]["pending"] == 0
    assert sorted(p.name for p in out.glob("*.wav")) == [f"s{i:02}_01.wav" for i in range(40)]
    assert not [p for p in out.iterdir() if ".partial" in p.name]


def test_random_seeds_are_kept_for_the_rerun_and_force_renders_again(tmp_path: Path,
                                                                     models: Path, home: Path):
    (tmp_path / "list.csv").write_text("name,prompt,seconds,steps,variations\n"
                                       "wind,howling wind,0.5,2,2\n")
    out = tmp_path / "out"
    assert batch(tmp_path / "list.csv", out, models, home, "--no-library").returncode == 0
    first = (out / "wind_02.wav").read_bytes()
    seeds = [item["seed"] for item in manifest(out)["items"]]
    (out / "wind_02.wav").unlink()
    again = batch(tmp_path / "list.csv", out, models, home, "--no-library")
    assert again.returncode == 0 and "skipping 1 take(s)" in again.stdout
    assert (out / "wind_02.wav").read_bytes() == first
    assert [item["status"] for item in manifest(out)["items"]] == ["skipped", "ok"]
    forced = batch(tmp_path / "list.csv", out, models, home, "--no-library", "--force")
    assert forced.returncode == 0 and "skipping" not in forced.stdout
    assert [item["status"] for item in manifest(out)["items"]] == ["ok", "ok"]
    assert [item["seed"] for item in manifest(out)["items"]] == seeds


def test_two_workers_make_the_same_files_as_one(tmp_path: Path, models: Path, home: Path):
    list_path = many(tmp_path, 6)
    one, two = tmp_path / "one", tmp_path / "two"
    assert batch(list_path, one, models, home, "--jobs", "1", "--no-library").returncode == 0
    done = batch(list_path, two, models, home, "--jobs", "2", "--no-library")
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in one.glob("*.wav"))
    assert len(names) == 6 and names == sorted(p.name for p in two.glob("*.wav"))
    for name in names:
        assert (one / name).read_bytes() == (two / name).read_bytes(), name
    assert manifest(two)["settings"]["jobs"] == 2


@pytest.mark.slow  # a real process on a terminal
@pytest.mark.posix
def test_a_terminal_gets_a_progress_bar(tmp_path: Path, models: Path, home: Path):
    import fcntl
    import pty
    import struct
    import termios

    master, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    process = subprocess.Popen(command(many(tmp_path, 3), tmp_path / "out", models,
                                       "--no-library"), cwd=REPO, env=_env(home),
                               stdout=terminal, stderr=subprocess.PIPE)
    os.close(terminal)
    shown = b""
    while chunk := _read(master):
        shown += chunk
    assert process.wait(timeout=120) == 0
    text = shown.decode("utf-8", "replace")
    assert "3/3 [" in text and "take/s" in text and "[1/3]" not in text


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 4096)
    except OSError:  # the terminal closed with the process
        return b""


def test_a_library_that_cannot_be_opened_is_a_warning_not_a_lost_file(tmp_path: Path,
                                                                      models: Path, home: Path):
    (home / "library").write_text("a file where the library folder should be")
    (tmp_path / "list.csv").write_text("name,prompt,seconds,steps,seed\nrain,rain,0.5,2,1\n")
    out = tmp_path / "out"
    done = batch(tmp_path / "list.csv", out, models, home)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("warning: The library could not be opened") == 1
    assert sf.info(out / "rain_01.wav").frames == 22050
    assert json.loads((out / "rain_01.json").read_text())["library_id"] is None
    assert manifest(out)["items"][0]["status"] == "ok"
