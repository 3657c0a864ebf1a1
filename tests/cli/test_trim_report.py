"""Trim says what it cut (issue 31, item 6): the `finished:` line, the sidecar, `library show`
and `library export` give the length before and after the trim; a trim that cuts nothing is a
warning naming the threshold and the one that would cut the quieter end, and following that
advice does cut it. The files are read back with soundfile, and what the second trim cut is
checked sample by sample against the first file. The CLI runs in this process."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from engines.finish.chain import finish
from engines.finish.settings import FinishSettings
from tests.cli_runner import run_cli

COIN = ("--prompt", "coin pickup, bright, short", "--seconds", "3", "--seed", "5")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("trim-report-models")


def cli(home: Path, *args: str):
    env = {**os.environ, "SA3_STUDIO_HOME": str(home)}
    return run_cli(list(args), env=env, timeout=300)


def test_a_trim_that_cuts_nothing_says_so_and_how_to_cut(tmp_path: Path, models: Path):
    home, first = tmp_path / "home", tmp_path / "coin.wav"
    done = cli(home, "generate", *COIN, "--trim", "--models-dir", str(models), "--out",
               str(first))
    assert done.returncode == 0, done.stderr
    trim = json.loads(first.with_suffix(".json").read_text())["finishing"]["report"]["trim"]
    assert trim["seconds_before"] == 3.0 and trim["seconds_after"] == 3.0
    assert trim["nothing_cut"] and trim["threshold_db"] == -60.0
    suggested = trim["suggested_threshold_db"]
    assert isinstance(suggested, int) and -60 < suggested <= -10
    assert "trim 3.00 s -> 3.00 s, nothing below -60 dBFS" in done.stdout
    warning = [line for line in done.stderr.splitlines() if "Trim cut nothing" in line]
    assert len(warning) == 1 and warning[0].startswith("warning: ")
    assert "-60 dBFS threshold" in warning[0] and f"--trim-db {suggested}." in warning[0]
    assert sf.info(first).frames == 3 * 44100

    second = tmp_path / "coin2.wav"  # the advice followed
    again = cli(home, "generate", *COIN, "--trim", "--trim-db", str(suggested),
                "--models-dir", str(models), "--out", str(second))
    assert again.returncode == 0 and "Trim cut nothing" not in again.stderr
    report = json.loads(second.with_suffix(".json").read_text())["finishing"]["report"]
    kept = sf.info(second).frames
    assert kept == report["trim"]["kept_frames"] < 3 * 44100
    assert not report["trim"]["nothing_cut"]
    assert f"trim 3.00 s -> {kept / 44100:.2f} s" in again.stdout
    # Everything cut was under the threshold, less the 10 ms pad kept past the last loud frame.
    whole, _ = sf.read(first, dtype="float64")
    start = report["trim"]["start_frame"]
    pad = round(0.010 * 44100)
    assert np.abs(whole[start + kept:]).max() < 10 ** (suggested / 20)
    assert np.abs(whole[start + kept - pad - 1]).max() >= 10 ** (suggested / 20) - 1e-4

    shown = cli(home, "library", "show", "1")
    assert shown.returncode == 0, shown.stderr
    assert "trim 3.00 s -> 3.00 s, nothing below -60 dBFS" in shown.stdout
    exported = cli(home, "library", "export", "2", "--to", str(tmp_path / "exp"))
    assert exported.returncode == 0, exported.stderr
    assert re.search(r"; trim 3\.00 s -> \d\.\d\d s\b", exported.stdout)


def test_a_take_loud_to_its_ends_gets_no_threshold_to_try():
    """A sound that plays through both ends has no silence to cut: no threshold is offered,
    because raising it would cut the sound itself, and it is a note, not a warning."""
    t = np.arange(44100) / 44100
    tone = (0.5 * np.sin(2 * np.pi * 440 * t))[:, None].repeat(2, axis=1).astype(np.float32)
    done = finish(tone, FinishSettings(trim=True))
    trim = done.report["trim"]
    assert trim["nothing_cut"] and trim["suggested_threshold_db"] is None
    assert trim["seconds_before"] == trim["seconds_after"] == 1.0
    assert done.report["warnings"] == []
    (note,) = [n for n in done.report["notes"] if n.startswith("Trim cut nothing")]
    assert "there is no silence to cut" in note and not getattr(note, "remedies", ())


def test_a_trim_that_cuts_reports_both_lengths_and_no_warning():
    rng = np.random.default_rng(1)
    take = np.zeros((44100, 2), np.float32)
    take[11025:22050] = rng.standard_normal((11025, 2)).astype(np.float32) * 0.2
    done = finish(take, FinishSettings(trim=True))
    trim = done.report["trim"]
    assert trim["seconds_before"] == 1.0
    assert trim["seconds_after"] == pytest.approx(0.25 + 0.02, abs=1e-4)  # 10 ms pad a side
    assert not trim["nothing_cut"] and done.report["warnings"] == []


def test_a_batch_trim_that_cuts_nothing_is_in_the_manifest(tmp_path: Path, models: Path):
    (tmp_path / "list.csv").write_text("name,prompt,seconds,seed\n"
                                       "coin,\"coin pickup, bright, short\",3,5\n")
    out = tmp_path / "out"
    done = cli(tmp_path / "home", "batch", str(tmp_path / "list.csv"), "--out", str(out),
               "--trim", "--models-dir", str(models))
    assert done.returncode == 0, done.stderr
    (item,) = json.loads((out / "manifest.json").read_text())["items"]
    assert any(w.startswith("Trim cut nothing") and "-60 dBFS threshold" in w
               for w in item["warnings"])
    side = json.loads((out / item["file"]).with_suffix(".json").read_text())
    assert side["finishing"]["report"]["trim"]["nothing_cut"]
