"""A finishing step that cannot do what was asked is said wherever the take goes (issue 20,
item 11): a loudness target on a take shorter than BS.1770's 0.4 s block is not applied, not
listed as done, and said on stderr, in the sidecar, in the batch manifest, and by `library
export`. Real CLI in subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UNMET = "The loudness target of -18 LUFS was not applied: the take is 0.10 s long"


def cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SA3_STUDIO_HOME": str(home)}
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *args], env=env,
                          capture_output=True, text=True, timeout=300)


def test_an_unmeasurable_loudness_target_is_said_everywhere(tmp_path: Path) -> None:
    home = tmp_path / "home"
    made = cli(home, "generate", "--prompt", "click", "--seconds", "0.1", "--seed", "1",
               "--loudness", "-18", "--out", str(tmp_path / "click.wav"))
    assert made.returncode == 0 and f"warning: {UNMET}" in made.stderr
    report = json.loads((tmp_path / "click.json").read_text())["finishing"]["report"]
    assert "loudness" not in report["done"] and "loudness" in report["skipped"]
    assert report["warnings"][0].startswith(UNMET)

    (tmp_path / "list.json").write_text(json.dumps([{"name": "tick", "prompt": "tick",
                                                     "seconds": 0.1, "seed": 2}]))
    batch = cli(home, "batch", str(tmp_path / "list.json"), "--out", str(tmp_path / "out"),
                "--loudness", "-18")
    assert batch.returncode == 0 and UNMET in batch.stderr
    item = json.loads((tmp_path / "out" / "manifest.json").read_text())["items"][0]
    assert any(w.startswith(UNMET) for w in item["warnings"])

    exported = cli(home, "library", "export", "1", "--to", str(tmp_path / "exp"))
    assert exported.returncode == 0 and "Take #1: the loudness target" in exported.stderr
