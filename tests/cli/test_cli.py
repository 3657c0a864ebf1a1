"""`python main.py generate`: the headless contract other tools rely on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

import main as entry

REPO = Path(__file__).resolve().parents[2]


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = entry.main(["generate", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_text_to_audio_writes_wav_sidecar_and_summary(capsys, tmp_path: Path, models: Path):
    out = tmp_path / "coin.wav"
    code, stdout, stderr = run(capsys, "--prompt", "coin pickup, bright, short", "--seconds",
                               "1.5", "--seed", "7", "--models-dir", str(models), "--out",
                               str(out))
    assert code == 0, stderr
    audio, rate = sf.read(out, dtype="int16")
    assert rate == 44100 and audio.shape == (66150, 2) and np.abs(audio).max() > 1000
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["seed"] == 7 and meta["request"]["seed_was_random"] is False
    assert meta["request"]["prompt"] == "coin pickup, bright, short"
    assert meta["request"]["mode"] == "t2a" and meta["backend"] == "onnxruntime"
    assert meta["request"]["model_label"] == "Demo (procedural, not Stable Audio 3)"
    assert {f["role"] for f in meta["model_files"]} == {"text_encoder", "tokenizer", "dit",
                                                      "decoder"}
    assert all(f["size"] > 0 for f in meta["model_files"])
    assert set(meta["timings_ms"]) >= {"text", "sample", "decode", "total"}
    line = stdout.strip().splitlines()
    assert len(line) == 1
    assert "1.50 s of audio" in line[0] and "x realtime" in line[0] and "seed 7" in line[0]
    assert "sample" in line[0] and "decode" in line[0]
    assert "Demo (procedural, not Stable Audio 3) on onnxruntime" in line[0]


def test_random_seed_is_printed_and_reproduces(capsys, tmp_path: Path, models: Path):
    code, stdout, _ = run(capsys, "--prompt", "drone", "--seconds", "1", "--models-dir",
                          str(models), "--out", str(tmp_path / "a.wav"))
    assert code == 0
    seed = int(stdout.rsplit("seed", 1)[1])
    meta = json.loads((tmp_path / "a.json").read_text())
    assert meta["seed"] == seed and meta["request"]["seed_was_random"] is True
    code, _, _ = run(capsys, "--prompt", "drone", "--seconds", "1", "--seed", str(seed),
                     "--models-dir", str(models), "--out", str(tmp_path / "b.wav"))
    assert code == 0
    assert sf.read(tmp_path / "a.wav")[0].tobytes() == sf.read(tmp_path / "b.wav")[0].tobytes()


def test_all_four_modes(capsys, tmp_path: Path, models: Path):
    base = ["--models-dir", str(models), "--seed", "3"]
    init = tmp_path / "init.flac"
    code, _, err = run(capsys, "--prompt", "rain", "--seconds", "4", *base, "--out", str(init))
    assert code == 0, err

    code, _, err = run(capsys, "--prompt", "bell", "--init-audio", str(init),
                       "--init-noise-level", "0.3", *base, "--out", str(tmp_path / "a2a.wav"))
    assert code == 0, err
    a2a = json.loads((tmp_path / "a2a.json").read_text())
    assert a2a["request"]["mode"] == "a2a" and a2a["request"]["init_noise_level"] == 0.3
    assert a2a["request"]["init_audio"]["sha256"]
    assert "encoder" in {f["role"] for f in a2a["model_files"]}

    code, _, err = run(capsys, "--prompt", "explosion", "--init-audio", str(init), "--inpaint",
                       "1:2", "2.5:3", *base, "--out", str(tmp_path / "inpaint.wav"))
    assert code == 0, err
    meta = json.loads((tmp_path / "inpaint.json").read_text())
    assert meta["request"]["mode"] == "inpaint"
    assert meta["request"]["inpaint_spans"] == [[1.0, 2.0], [2.5, 3.0]]
    original = sf.read(init)[0]
    inpainted = sf.read(tmp_path / "inpaint.wav")[0]
    head = slice(0, int(0.9 * 44100))
    assert np.corrcoef(original[head, 0], inpainted[head, 0])[0, 1] > 0.99

    code, _, err = run(capsys, "--prompt", "rain and wind", "--negative-prompt", "wind",
                       "--cfg", "3", "--seconds", "2", *base, "--out", str(tmp_path / "cfg.wav"))
    assert code == 0, err
    meta = json.loads((tmp_path / "cfg.json").read_text())
    assert meta["request"]["cfg"] == 3.0 and meta["request"]["negative_prompt"] == "wind"


def test_other_formats(capsys, tmp_path: Path, models: Path):
    for name, subtype in (("x.flac", "PCM_24"), ("x.ogg", "VORBIS")):
        code, _, err = run(capsys, "--prompt", "whoosh", "--seconds", "1", "--seed", "1",
                           "--models-dir", str(models), "--out", str(tmp_path / name))
        assert code == 0, err
        assert sf.info(tmp_path / name).subtype == subtype
    code, _, err = run(capsys, "--prompt", "whoosh", "--seconds", "1", "--seed", "1",
                       "--format", "wav24", "--models-dir", str(models), "--out",
                       str(tmp_path / "y.wav"))
    assert code == 0, err
    assert sf.info(tmp_path / "y.wav").subtype == "PCM_24"


def test_a_sidecar_that_cannot_be_written_never_costs_the_existing_file(capsys, tmp_path: Path,
                                                                        models: Path):
    out = tmp_path / "prev.wav"
    sf.write(out, np.full((4410, 2), 1000, np.int16), 44100, subtype="PCM_16")
    before = out.read_bytes()
    (tmp_path / "prev.json").mkdir()  # the sidecar's name is taken by a folder
    code, _, stderr = run(capsys, "--prompt", "rain", "--seconds", "1", "--seed", "3",
                          "--models-dir", str(models), "--no-library", "--out", str(out))
    assert code == 2
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "prev.json" in lines[0] and "nothing was written" in lines[0]
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prev.json", "prev.wav"]  # no leftovers


def test_list_models(capsys, models: Path):
    code = entry.main(["generate", "--list-models", "--models-dir", str(models)])
    out = capsys.readouterr().out
    assert code == 0
    for key in ("demo", "sm-music", "sm-sfx", "medium"):
        assert key in out
    assert "Demo (procedural, not Stable Audio 3)" in out
    assert "ready" in out and "GPU:" in out


BAD_INPUTS = [
    (["--model", "huge"], "invalid choice"),
    (["--steps", "0"], "steps"),
    (["--steps", "many"], "invalid int"),
    (["--seconds", "0.01"], "seconds"),
    (["--seconds", "1000"], "seconds"),
    (["--seed", "-1"], "seed"),
    (["--seed", str(2**32)], "seed"),
    (["--cfg", "16"], "cfg"),
    (["--apg", "1.5"], "apg"),
    (["--init-audio", "{missing}"], "missing.wav"),
    (["--init-audio", "{text}"], "notes.txt"),
    (["--inpaint", "1:2"], "init audio"),
    (["--init-audio", "{good}", "--inpaint", "0.5:9"], "9"),
    (["--init-audio", "{good}", "--inpaint", "abc"], "abc"),
    (["--init-audio", "{good}", "--init-noise-level", "0.001"], "0.01"),
    (["--model", "sm-sfx"], "sm-sfx"),
    (["--backend", "tensorrt"], "ONNX Runtime only"),
    (["--precision", "fp16"], "fp32"),
    (["--out", "{tmp}/clip.mp3"], ".mp3"),
    (["--out", "{tmp}/no/such/dir/clip.wav"], "does not exist"),
    (["--models-dir", "{tmp}/nowhere"], "nowhere"),
]


@pytest.mark.parametrize(("extra", "needle"), BAD_INPUTS)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(capsys, tmp_path: Path,
                                                             models: Path, extra, needle):
    good = tmp_path / "good.wav"
    sf.write(good, np.zeros((44100, 2)), 44100)
    (tmp_path / "notes.txt").write_text("not audio")
    values = {"missing": str(tmp_path / "missing.wav"), "text": str(tmp_path / "notes.txt"),
              "good": str(good), "tmp": str(tmp_path)}
    extra = [e.format(**values) for e in extra]
    args = ["--prompt", "laser", "--seconds", "1"]
    if "--models-dir" not in extra:
        args += ["--models-dir", str(models)]
    if "--out" not in extra:
        args += ["--out", str(tmp_path / "out.wav")]
    before = sorted(p.name for p in tmp_path.iterdir())
    code, stdout, stderr = run(capsys, *args, *extra)
    assert code == 2
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert needle in lines[0]
    assert "Traceback" not in stderr and stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.slow  # the real process
def test_console_entry_point_has_no_traceback(tmp_path: Path):
    """The real process: exit code and stderr as a shell script sees them."""
    proc = subprocess.run([sys.executable, str(REPO / "main.py"), "generate", "--prompt", "x",
                           "--cfg", "99", "--out", str(tmp_path / "x.wav")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "cfg" in proc.stderr
    assert not (tmp_path / "x.wav").exists()


def test_variations_write_numbered_files_with_consecutive_seeds(capsys, tmp_path: Path,
                                                                models: Path):
    out = tmp_path / "door.wav"
    code, stdout, stderr = run(capsys, "--prompt", "door creak", "--seconds", "0.5", "--steps",
                               "2", "--seed", "4294967293", "--variations", "3", "--no-library",
                               "--models-dir", str(models), "--out", str(out))
    assert code == 0, stderr
    seeds = [json.loads((tmp_path / f"door_{k:02d}.json").read_text())["seed"]
             for k in (1, 2, 3)]
    assert seeds == [4294967293, 4294967294, 4294967295]  # consecutive, up to the last seed
    assert not out.exists() and len(stdout.strip().splitlines()) == 3
    takes = [sf.read(tmp_path / f"door_{k:02d}.wav", dtype="int16")[0] for k in (1, 2, 3)]
    assert not np.array_equal(takes[0], takes[1])
    # the same seed alone gives the same take: variation 2 is seed 4294967294 by itself
    code, _, stderr = run(capsys, "--prompt", "door creak", "--seconds", "0.5", "--steps", "2",
                          "--seed", "4294967294", "--no-library", "--models-dir", str(models),
                          "--out", str(tmp_path / "single.wav"))
    assert code == 0, stderr
    assert np.array_equal(sf.read(tmp_path / "single.wav", dtype="int16")[0], takes[1])


def test_variations_out_of_range_is_refused(capsys, tmp_path: Path, models: Path):
    code, _, stderr = run(capsys, "--prompt", "x", "--variations", "0", "--models-dir",
                          str(models), "--out", str(tmp_path / "x.wav"))
    assert code == 2 and "--variations 0 is out of range" in stderr
    assert list(tmp_path.iterdir()) == []
