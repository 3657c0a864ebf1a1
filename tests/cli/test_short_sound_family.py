"""A family of short takes finished with one preset comes out level-matched (issue 31, item 5),
through `generate --variations` and a `batch` list: every file, read back by soundfile and
measured by pyloudnorm on the file padded with silence to one 400 ms block, lands within 1 LU of
its siblings, the sidecar states that loudness and names the method, and scipy's 4x
oversampling finds the true peak under the preset's ceiling. The CLI runs in this process."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyloudnorm
import pytest
import soundfile as sf
from scipy import signal

from tests.cli_runner import run_cli

CEILING_DBTP = -1.0  # the "UI click" preset's
TARGET_LUFS = -18.0


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("short-family-models")


def cli(home: Path, models: Path, *args: str):
    env = {**os.environ, "SA3_STUDIO_HOME": str(home)}
    return run_cli([*args, "--models-dir", str(models)], env=env, timeout=300)


def padded_loudness(path: Path) -> float:
    audio, rate = sf.read(path, dtype="float64", always_2d=True)
    block = np.zeros((max(len(audio), round(0.4 * rate)), audio.shape[1]))
    block[:len(audio)] = audio
    return pyloudnorm.Meter(rate).integrated_loudness(block)


def true_peak_dbtp(path: Path) -> float:
    audio, _ = sf.read(path, dtype="float64", always_2d=True)
    return 20 * np.log10(np.abs(signal.resample_poly(audio, 4, 1, axis=0)).max())


def check_family(files: list[Path]) -> None:
    levels = []
    for path in files:
        side = json.loads(path.with_suffix(".json").read_text())
        final = side["finishing"]["report"]["final"]
        assert side["finishing"]["chain"]["preset"] == "UI click"
        assert final["loudness_method"] == "one block" and final["seconds"] < 0.4
        measured = padded_loudness(path)
        # the 16-bit file (TPDF dither) against the float figure the sidecar states
        assert final["loudness_lufs"] == pytest.approx(measured, abs=0.1)
        assert measured == pytest.approx(TARGET_LUFS, abs=0.2)
        assert true_peak_dbtp(path) <= CEILING_DBTP + 0.1
        levels.append(measured)
    assert len(levels) == 3 and max(levels) - min(levels) <= 1.0, levels


def test_generate_variations_of_a_ui_click_are_level_matched(tmp_path: Path, models: Path):
    out = tmp_path / "click.wav"
    done = cli(tmp_path / "home", models, "generate", "--prompt", "ui click", "--seconds",
               "0.3", "--variations", "3", "--seed", "7", "--preset", "UI click",
               "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "not applied" not in done.stderr
    finished = [line for line in done.stdout.splitlines() if line.startswith("finished: ")]
    assert len(finished) == 3
    assert all("-18.0 LUFS (one 400 ms block, padded with silence)" in line
               for line in finished)
    check_family([tmp_path / f"click_{k:02d}.wav" for k in (1, 2, 3)])


def test_a_batch_row_of_short_variations_is_level_matched(tmp_path: Path, models: Path):
    (tmp_path / "list.csv").write_text("name,prompt,seconds,variations,seed,preset\n"
                                       "ui_click,ui click,0.25,3,40,UI click\n")
    out = tmp_path / "out"
    done = cli(tmp_path / "home", models, "batch", str(tmp_path / "list.csv"), "--out",
               str(out))
    assert done.returncode == 0, done.stderr
    items = json.loads((out / "manifest.json").read_text())["items"]
    assert [item["status"] for item in items] == ["ok"] * 3
    assert not any("not applied" in w for item in items for w in item["warnings"])
    check_family([out / item["file"] for item in items])
