"""`library similar`, `library list --like FILE` and `library rename` as a user's script runs
them (issue 22): real processes over a library that `generate` filled with demo takes."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest
import soundfile as sf

from tests.cli_runner import run_cli

REPO = Path(__file__).resolve().parents[2]
PROMPTS = ("rain on a tin roof", "laser blast", "church bell")
SEEDS = ("1", "2", "3")


def run(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SA3_STUDIO_HOME": str(home)}
    return run_cli(args, env=env, cwd=REPO, timeout=180)


def ok(home: Path, *args: str) -> str:
    done = run(home, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def refused(home: Path, *args: str) -> str:
    done = run(home, *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: ") and "Traceback" not in done.stderr
    return done.stderr


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Nine demo takes (ids 1-9: three prompts, three seeds each) and their files in out/."""
    home = tmp_path_factory.mktemp("similar-cli") / "home"
    out = home.parent / "out"
    out.mkdir()
    for prompt in PROMPTS:
        for seed in SEEDS:
            ok(home, "generate", "--prompt", prompt, "--seed", seed, "--seconds", "1.5",
               "--steps", "4", "--out", str(out / f"{prompt.replace(' ', '_')}_{seed}.wav"))
    return home


def test_similar_json_parses_and_ranks_the_takes_of_the_same_prompt_first(home: Path):
    found = json.loads(ok(home, "library", "similar", "4", "--limit", "2", "--json"))
    assert [item["prompt"] for item in found] == ["laser blast"] * 2
    assert {item["id"] for item in found} == {5, 6}
    for item in found:
        assert {"id", "name", "prompt", "distance", "similarity"} <= set(item)
        assert 0.0 <= item["distance"] <= 2.0
        assert item["similarity"] == pytest.approx(max(0.0, 1 - item["distance"]), abs=1e-3)
    assert found[0]["distance"] <= found[1]["distance"]


def test_similar_table_reads_as_similarity_and_distance(home: Path):
    lines = ok(home, "library", "similar", "1").splitlines()
    assert "SIMILARITY" in lines[0] and "DISTANCE" in lines[0]
    assert len(lines) == 1 + 8 + 1  # header, every other take, the summary
    assert all("rain on a tin roof" in line for line in lines[1:3])
    assert "%" in lines[1] and "closest first" in lines[-1]
    assert "0.08 reads 92 percent" in " ".join(ok(home, "library", "similar", "--help").split())


def test_list_like_a_file_finds_the_take_it_came_from(home: Path, tmp_path: Path):
    source = home.parent / "out" / "church_bell_2.wav"
    audio, rate = sf.read(source, dtype="float32")
    mono = tmp_path / "bell mono 22k.wav"  # another rate and one channel: read as init audio
    sf.write(mono, audio.mean(axis=1)[::2], rate // 2)
    found = json.loads(ok(home, "library", "list", "--like", str(source), "--limit", "3",
                          "--json"))
    assert found[0]["id"] == 8 and found[0]["distance"] < 0.05  # re-encoded: near, not equal
    assert [item["prompt"] for item in found] == ["church bell"] * 3
    resampled = json.loads(ok(home, "library", "list", "--like", str(mono), "--limit", "3",
                              "--json"))
    assert [item["prompt"] for item in resampled] == ["church bell"] * 3


def test_list_like_refuses_what_is_not_audio_in_one_sentence(home: Path, tmp_path: Path):
    bad = tmp_path / "not-audio.wav"
    bad.write_bytes(b"RIFF....WAVEjunk")
    assert "not-audio.wav" in refused(home, "library", "list", "--like", str(bad))
    assert "does not exist" in refused(home, "library", "list", "--like",
                                       str(tmp_path / "gone.wav"))
    assert "--search" in refused(home, "library", "list", "--like", str(bad), "--search", "x")
    assert "#99" in refused(home, "library", "similar", "99")
    assert "--limit" in refused(home, "library", "similar", "1", "--limit", "0")


def test_an_old_library_is_embedded_on_the_first_search(home: Path, tmp_path: Path):
    import shutil

    old = tmp_path / "old-home"
    shutil.copytree(home, old)
    conn = sqlite3.connect(old / "library" / "library.sqlite3")
    conn.execute("DROP TABLE embeddings")  # as every library was before issue 22
    conn.commit()
    conn.close()
    found = json.loads(ok(old, "library", "similar", "7", "--limit", "2", "--json"))
    assert [item["prompt"] for item in found] == ["church bell"] * 2
    conn = sqlite3.connect(old / "library" / "library.sqlite3")
    assert conn.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 9
    conn.close()


def test_a_renamed_take_is_listed_and_exported_under_its_new_name(home: Path, tmp_path: Path):
    assert "'Tin Roof Loop'" in ok(home, "library", "rename", "2", "  Tin Roof   Loop ")
    listed = json.loads(ok(home, "library", "list", "--search", "tin roof loop", "--json"))
    assert [(take["id"], take["name"]) for take in listed] == [(2, "Tin Roof Loop")]
    assert "Tin Roof Loop" in ok(home, "library", "list")
    out = tmp_path / "export"
    written = ok(home, "library", "export", "2", "--to", str(out)).split("\n")[0].strip()
    assert Path(written).name == "Tin Roof Loop_01.wav" and Path(written).is_file()
    sidecar = json.loads(Path(written).with_suffix(".json").read_text())
    assert sidecar["library"]["name"] == "Tin Roof Loop"
    found = json.loads(ok(home, "library", "similar", "1", "--limit", "1", "--json"))
    assert found[0]["name"] in ("", "Tin Roof Loop")  # names travel with search results too
    assert "no name" in ok(home, "library", "rename", "2", "")
    assert json.loads(ok(home, "library", "show", "2", "--json"))["name"] == ""
