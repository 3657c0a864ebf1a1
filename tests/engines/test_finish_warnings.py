"""A finishing step that cannot do what was asked is said wherever the take goes (issue 20,
item 11); a take shorter than BS.1770's 0.4 s block is levelled by one 400 ms block (issue 31,
item 5: it used to be left unlevelled with a warning), and that method is said wherever the
take goes: the `finished:` line, the sidecar, the batch sidecar, and `library export`. The CLI
in this process (tests.cli_runner)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli_runner import run_cli

ROOT = Path(__file__).resolve().parents[2]
METHOD = "-18.0 LUFS (one 400 ms block, padded with silence)"


def cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SA3_STUDIO_HOME": str(home)}
    return run_cli(args, env=env, timeout=300)


def test_a_short_take_is_levelled_and_its_method_said_everywhere(tmp_path: Path) -> None:
    home = tmp_path / "home"
    made = cli(home, "generate", "--prompt", "click", "--seconds", "0.1", "--seed", "1",
               "--loudness", "-18", "--out", str(tmp_path / "click.wav"))
    assert made.returncode == 0 and "not applied" not in made.stderr
    assert METHOD in made.stdout
    report = json.loads((tmp_path / "click.json").read_text())["finishing"]["report"]
    assert "loudness" in report["done"] and "loudness" not in report["skipped"]
    assert report["final"]["loudness_method"] == "one block"
    assert report["final"]["loudness_lufs"] == pytest.approx(-18.0, abs=0.1)

    (tmp_path / "list.json").write_text(json.dumps([{"name": "tick", "prompt": "tick",
                                                     "seconds": 0.1, "seed": 2}]))
    batch = cli(home, "batch", str(tmp_path / "list.json"), "--out", str(tmp_path / "out"),
                "--loudness", "-18")
    assert batch.returncode == 0 and "not applied" not in batch.stderr
    item = json.loads((tmp_path / "out" / "manifest.json").read_text())["items"][0]
    assert item["status"] == "ok" and not item["warnings"]
    side = json.loads((tmp_path / "out" / item["file"]).with_suffix(".json").read_text())
    assert side["finishing"]["report"]["final"]["loudness_method"] == "one block"

    exported = cli(home, "library", "export", "1", "--to", str(tmp_path / "exp"))
    assert exported.returncode == 0 and "not applied" not in exported.stderr
    assert METHOD in exported.stdout


def test_a_loop_that_cannot_fit_is_refused_before_the_render(tmp_path: Path) -> None:
    """Issue 20 item 12: the refusal comes before any render and names only what can be done;
    the crossfade loop is a real option (flag and column)."""
    home = tmp_path / "home"
    out = tmp_path / "coin.wav"
    refused = cli(home, "generate", "--prompt", "coin", "--seconds", "0.5", "--loop",
                  "--out", str(out))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "--loop-method crossfade" in refused.stderr and "0.74 s" in refused.stderr
    assert not out.exists() and not (home / "library" / "audio").exists()  # nothing rendered
    made = cli(home, "generate", "--prompt", "coin", "--seconds", "0.5", "--loop",
               "--loop-method", "crossfade", "--loop-seam", "0.2", "--out", str(out))
    assert made.returncode == 0 and "loop by crossfade" in made.stdout
    side = json.loads(out.with_suffix(".json").read_text())
    assert side["finishing"]["loop"]["method"] == "crossfade"
    assert side["finishing"]["chain"]["loop_method"] == "crossfade"

    (tmp_path / "list.json").write_text(json.dumps([
        {"name": "a", "prompt": "coin", "seconds": 0.3, "loop": 1},
        {"name": "b", "prompt": "coin", "seconds": 0.3, "loop": 1, "loop_method": "crossfade"},
        {"name": "c", "prompt": "coin", "seconds": 0.3, "loop": 1, "loop_method": "sideways"}]))
    batch = cli(home, "batch", str(tmp_path / "list.json"), "--out", str(tmp_path / "out"),
                "--loop-seam", "0.15")
    assert batch.returncode == 1
    assert "item [0]" in batch.stderr and "loop_method crossfade in the row" in batch.stderr
    assert "--loop-method" not in batch.stderr  # a sound list names its column, not a flag
    assert "item [2]: loop_method 'sideways' is not one of model, crossfade" in batch.stderr
    items = json.loads((tmp_path / "out" / "manifest.json").read_text())["items"]
    assert [item["status"] for item in items] == ["failed", "ok", "failed"]


def test_library_export_refusals_leave_no_folder_and_one_sentence(tmp_path: Path) -> None:
    """Issue 20 item 13."""
    home = tmp_path / "home"
    assert cli(home, "generate", "--prompt", "coin", "--seconds", "0.5", "--seed", "1",
               "--out", str(tmp_path / "c.wav")).returncode == 0
    missing = cli(home, "library", "export", "99", "--to", str(tmp_path / "new"))
    assert missing.returncode == 2 and "#99" in missing.stderr
    assert not (tmp_path / "new").exists()
    looped = cli(home, "library", "export", "1", "--loop", "--to", str(tmp_path / "new"))
    assert looped.returncode == 2 and looped.stderr.count("\n") == 1
    assert "warning" not in looped.stderr and not (tmp_path / "new").exists()
