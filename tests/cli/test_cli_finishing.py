"""`generate` with finishing flags (issue 11): what lands in the file is checked with readers
that are not ours - pyloudnorm for loudness, wavinfo for the smpl loop, soundfile for format."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyloudnorm
import pytest
import soundfile as sf
import wavinfo

import main as entry
from engines.finish.seam_metrics import seam_test

pytestmark = pytest.mark.usefixtures("home")  # every test a data folder of its own


def run(capsys, models: Path, *args: str) -> tuple[int, str, str]:
    code = entry.main(["generate", "--models-dir", str(models), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_one_shot_flags_reach_the_file(capsys, tmp_path: Path, models: Path):
    out = tmp_path / "coin.wav"
    code, stdout, stderr = run(capsys, models, "--prompt", "coin pickup, bright", "--seconds",
                               "2", "--seed", "3", "--trim", "--fade-in", "2", "--fade-out",
                               "30", "--loudness", "-18", "--true-peak", "-1", "--rate",
                               "48000", "--mono", "--format", "wav24", "--out", str(out))
    assert code == 0, stderr
    audio, rate = sf.read(out, dtype="float64")
    info = sf.info(out)
    assert rate == 48000 and info.channels == 1 and info.subtype == "PCM_24"
    lufs = pyloudnorm.Meter(rate).integrated_loudness(audio)
    assert abs(lufs - (-18.0)) < 0.5
    assert abs(audio[0]) < 1e-3 and abs(audio[-1]) < 1e-3  # faded at both ends
    meta = json.loads(out.with_suffix(".json").read_text())
    chain = meta["finishing"]["chain"]
    assert chain["loudness_lufs"] == -18.0 and chain["mono"] is True and chain["rate"] == 48000
    assert meta["output"]["format"] == "wav24"
    assert "LUFS" in stdout and "48000 Hz mono" in stdout


def test_ambience_loop_preset_gives_loop_points_and_a_seamless_wrap(capsys, tmp_path: Path,
                                                                  models: Path):
    out = tmp_path / "rain.wav"
    code, _, stderr = run(capsys, models, "--prompt", "rain on a tin roof", "--seconds", "6",
                          "--seed", "11", "--preset", "Ambience loop", "--out", str(out))
    assert code == 0, stderr
    audio, rate = sf.read(out, dtype="float32")
    loops = wavinfo.WavInfoReader(str(out)).smpl.sample_loops
    assert [(lp.start, lp.end, lp.loop_type) for lp in loops] == [(0, len(audio) - 1, 0)]
    assert rate == 48000 and sf.info(out).subtype == "PCM_24"  # the preset's delivery
    assert seam_test(audio, rate).passed
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["finishing"]["loop"]["method"] == "model"
    assert meta["finishing"]["chain"]["preset"] == "Ambience loop"


def test_the_file_name_decides_the_container_over_a_preset(capsys, tmp_path: Path, models: Path):
    out = tmp_path / "click.flac"
    code, _, stderr = run(capsys, models, "--prompt", "ui click", "--seconds", "1",
                          "--preset", "UI click", "--out", str(out))
    assert code == 0, stderr
    assert sf.info(out).format == "FLAC" and sf.info(out).channels == 1


@pytest.mark.parametrize(("flags", "says"), [
    (["--loudness", "-70"], "loudness -70 LUFS is out of range"),
    (["--true-peak", "1"], "true peak 1 dBTP is out of range"),
    (["--fade-in", "20000"], "fade in 20000 ms is out of range"),
    (["--preset", "nope"], "There is no finishing preset 'nope'"),
    (["--format", "wav32f", "--out-suffix", ".flac"], "does not match the file name"),
])
def test_bad_finishing_values_are_refused_before_the_render(capsys, tmp_path: Path,
                                                           models: Path, flags, says):
    suffix = ".wav"
    if "--out-suffix" in flags:
        suffix = flags[flags.index("--out-suffix") + 1]
        flags = flags[:flags.index("--out-suffix")]
    out = tmp_path / f"x{suffix}"
    code, _, stderr = run(capsys, models, "--prompt", "x", *flags, "--out", str(out))
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1 and says in lines[0]
    assert not out.exists() and list(tmp_path.glob("x*")) == []


def test_float_delivery(capsys, tmp_path: Path, models: Path):
    out = tmp_path / "f.wav"
    code, _, stderr = run(capsys, models, "--prompt", "whoosh", "--seconds", "1", "--format",
                          "wav32f", "--out", str(out))
    assert code == 0, stderr
    assert sf.info(out).subtype == "FLOAT"
    assert np.abs(sf.read(out)[0]).max() > 0.01


def test_the_chain_is_kept_with_the_take_in_the_library(capsys, tmp_path: Path, models: Path,
                                                        home: Path):
    from engines.store.library import ClipLibrary

    out = tmp_path / "hit.wav"
    code, _, stderr = run(capsys, models, "--prompt", "metal hit", "--seconds", "1", "--seed",
                          "2", "--loudness", "-20", "--mono", "--out", str(out))
    assert code == 0, stderr
    with ClipLibrary(home / "library") as lib:
        record = lib.get(1)
        assert record.finishing == json.loads(out.with_suffix(".json").read_text())["finishing"]
        assert record.finishing["chain"]["loudness_lufs"] == -20.0
        assert record.quality == []  # measured on the worker, kept with the take
        assert sf.info(record.audio_path).channels == 2  # the raw take is what is kept


def test_a_chain_the_library_cannot_keep_costs_only_a_warning(capsys, tmp_path: Path,
                                                              models: Path, home: Path,
                                                              monkeypatch: pytest.MonkeyPatch):
    from engines.store.library import ClipLibrary, LibraryError

    def refuse(self, take_id, finishing):
        raise LibraryError("The library could not write to 'x': the disk is full; free some "
                           "space.")

    monkeypatch.setattr(ClipLibrary, "set_finishing", refuse)
    out = tmp_path / "hit.wav"
    code, stdout, stderr = run(capsys, models, "--prompt", "metal hit", "--seconds", "1",
                               "--loudness", "-20", "--out", str(out))
    assert code == 0 and out.is_file() and "finished:" in stdout
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: The take was kept in the library "
                                                   "as #1, but not its finishing chain: the "
                                                   "library could not write")
    with ClipLibrary(home / "library") as lib:
        assert lib.get(1).finishing is None
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["library_id"] == 1 and meta["finishing"]["chain"]["loudness_lufs"] == -20.0
