"""One way out (issue 19): every path a take leaves by - `generate --out`, `batch`, `library
export`, the window's drag and Save As - gives the same audio and metadata for the same take
and chain, a sidecar that describes the file beside it, and refuses outputs that would destroy
an input or the library. Checked with the real CLI in subprocesses and independent readers
(soundfile, wavinfo)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import wavinfo

from tests.cli_runner import run_cli

ROOT = Path(__file__).resolve().parents[2]


def cli(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "SA3_STUDIO_HOME": str(home), "PYTHONIOENCODING": "utf-8"}
    return run_cli(args, cwd=cwd or home, env=env, timeout=300)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def data_chunk(path: Path) -> bytes:
    """The samples as stored (the RIFF data chunk)."""
    blob = path.read_bytes()
    at = blob.index(b"data")
    size = int.from_bytes(blob[at + 4:at + 8], "little")
    return blob[at + 8:at + 8 + size]


def one_sentence(text: str) -> bool:
    text = text.strip()
    return text.count("\n") == 0 and text.endswith(".") and "Traceback" not in text


def test_generate_and_library_export_give_the_same_finished_file(home: Path,
                                                                 tmp_path: Path) -> None:
    out = tmp_path / "gen" / "coin.wav"
    out.parent.mkdir()
    made = cli(home, "generate", "--prompt", "coin pickup, bright", "--seconds", "2", "--seed",
               "11", "--out", str(out), "--rate", "48000", "--mono", "--format", "wav24",
               "--loop", "--loop-seam", "0.3", "--category", "COINMisc", "--fx-name", "Coin")
    assert made.returncode == 0, made.stderr
    exported = cli(home, "library", "export", "1", "--to", str(tmp_path / "exp"),
                   "--category", "COINMisc", "--fx-name", "Coin")
    assert exported.returncode == 0, exported.stderr
    again = next((tmp_path / "exp").glob("*.wav"))
    # The same samples, the same loop, the same embedded metadata: the same file, byte for
    # byte (only the sidecars differ: each names its own file and when it was written).
    assert data_chunk(again) == data_chunk(out)
    assert again.read_bytes() == out.read_bytes()
    for path in (out, again):
        info = sf.info(path)
        side = json.loads(path.with_suffix(".json").read_text())
        assert (info.samplerate, info.channels, info.subtype) == (48000, 1, "PCM_24")
        assert side["output"]["sample_rate"] == info.samplerate
        assert side["output"]["channels"] == info.channels
        assert side["output"]["samples"] == info.frames
        assert side["output"]["subtype"] == "PCM_24" and side["library_id"] == 1
        assert side["finishing"]["chain"]["loop"] is True
        meta = wavinfo.WavInfoReader(str(path))
        assert meta.bext.description == "coin pickup, bright"
        assert meta.bext.originator == "SA3 Studio" and meta.bext.originator_ref == "SA3-1"
        assert "W=24" in meta.bext.coding_history and "loop" in meta.bext.coding_history
        assert meta.smpl.sample_loops[0].start == 0
        assert meta.smpl.sample_loops[0].end == info.frames - 1
        assert b"<CATID>COINMisc</CATID>" in meta.ixml.source
        assert b"<isLoop>true</isLoop>" in meta.ixml.source
        measured = side["measured"]["loudness_lufs"]
        import pyloudnorm  # an independent meter for the figure the sidecar gives

        samples, rate = sf.read(path, dtype="float64")
        assert abs(pyloudnorm.Meter(rate).integrated_loudness(samples) - measured) < 0.5


def test_list_models_prints_one_row_per_line(home: Path) -> None:
    listed = cli(home, "generate", "--list-models")
    assert listed.returncode == 0
    assert len(listed.stdout.splitlines()) > 4 and "\\n" not in listed.stdout


def test_outputs_never_replace_inputs_or_library_files(home: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    assert cli(home, "generate", "--prompt", "door", "--seconds", "1", "--seed", "2", "--out",
               str(work / "door.wav"), "--no-library").returncode == 0
    (work / "sounds.json").write_text(json.dumps([
        {"name": "sounds", "prompt": "coin"},
        {"name": "door", "prompt": "door again", "init_audio": "door.wav"},
        {"name": "door2", "prompt": "door b", "init_audio": "door.wav"},
        {"name": "ok", "prompt": "laser"}]))
    before = {p.name: sha(p) for p in work.iterdir()}
    batch = cli(home, "batch", str(work / "sounds.json"), "--out", str(work), "--name", "{name}")
    assert batch.returncode == 1  # the two clashing rows failed, the others rendered
    assert {name: sha(work / name) for name in before} == before
    assert "would replace the sound list" in batch.stderr
    assert "would replace the init audio" in batch.stderr
    assert (work / "ok.wav").is_file() and (work / "door2.wav").is_file()
    manifest = json.loads((work / "manifest.json").read_text())
    assert sorted(t["status"] for t in manifest["items"]) == ["failed", "failed", "ok", "ok"]

    audio_dir = home / "library" / "audio"
    take_file = next(audio_dir.glob("*.wav"))
    kept = sha(take_file)
    into_library = cli(home, "generate", "--prompt", "x", "--out", str(take_file))
    assert into_library.returncode == 2 and one_sentence(into_library.stderr)
    assert "inside the sound library" in into_library.stderr and sha(take_file) == kept
    export = cli(home, "library", "export", "1", "--to", str(audio_dir))
    assert export.returncode == 2 and "inside the sound library" in export.stderr
    assert sorted(p.name for p in audio_dir.iterdir()) == sorted(
        p.name for p in audio_dir.iterdir() if p.name.startswith("0"))


def test_a_damaged_library_take_is_named_not_exported(home: Path, tmp_path: Path) -> None:
    assert cli(home, "generate", "--prompt", "bell", "--seconds", "1", "--seed", "4", "--out",
               str(tmp_path / "bell.wav")).returncode == 0
    take_file = next((home / "library" / "audio").glob("*.wav"))
    take_file.write_bytes(b"not audio at all " * 41)
    export = cli(home, "library", "export", "1", "--to", str(tmp_path / "out"))
    assert export.returncode != 0 and "take #1" in export.stderr
    assert "damaged" in export.stderr or "cannot be read" in export.stderr
    assert not list((tmp_path / "out").glob("*.wav"))
    shown = cli(home, "library", "show", "1", "--json")
    audio = json.loads(shown.stdout)["files"]["audio"]
    assert shown.returncode == 0 and audio["damaged"] is True and "take #1" in audio["problem"]
    # Samples changed in place (a valid WAV of other audio) are caught by the saved hash.
    sf.write(take_file, np.zeros((44100, 2), np.int16), 44100, subtype="PCM_16")
    export = cli(home, "library", "export", "1", "--to", str(tmp_path / "out"))
    assert export.returncode != 0 and "damaged" in export.stderr


def test_no_module_writes_audio_outside_the_delivery_package() -> None:
    writes = re.compile(r"\bsf\.write\(|soundfile\.write\(|SoundFile\([^)]*[\"']w")
    offenders = []
    for folder in ("app", "engines"):
        for path in (ROOT / folder).rglob("*.py"):
            if "delivery" in path.relative_to(ROOT).parts:
                continue
            if writes.search(path.read_text(encoding="utf-8")):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []



@pytest.mark.parametrize("suffix", [".flac", ".ogg"])
def test_flac_and_ogg_carry_the_same_fields_as_vorbis_comments(home: Path, tmp_path: Path,
                                                               suffix: str) -> None:
    import mutagen

    out = tmp_path / f"wind{suffix}"
    made = cli(home, "generate", "--prompt", "wind howl", "--seconds", "2", "--seed", "9",
               "--out", str(out), "--loop", "--loop-seam", "0.3", "--category", "WINDGust")
    assert made.returncode == 0, made.stderr
    tags = mutagen.File(out).tags
    assert tags["DESCRIPTION"] == ["wind howl"] and tags["CATID"] == ["WINDGust"]
    assert tags["ORIGINATOR_REFERENCE"] == ["SA3-1"] and tags["ISLOOP"] == ["true"]
    frames = sf.info(out).frames
    assert tags["LOOPSTART"] == ["0"] and tags["LOOPLENGTH"] == [str(frames)]
    assert json.loads(tags["COMMENT"][0])["library_id"] == 1  # the app's note, as in a WAV


def test_batch_ucs_columns_name_and_label_files_and_unknown_ids_fail_their_row(
        home: Path, tmp_path: Path) -> None:
    (home / "ucs.csv").write_text("CatID,Category,SubCategory\nDOORWood,DOORS,WOOD\n"
                                  "GLASBrk,GLASS,BREAK\n", encoding="utf-8")
    sounds = tmp_path / "sounds.csv"
    sounds.write_text("name,prompt,seconds,category,fx_name,creator,source\n"
                      "creak,door creak,1,DOORWood,Creak slow,AD,SA3\n"
                      "smash,glass smash,1,GLASBreak,Smash,AD,SA3\n", encoding="utf-8")
    batch = cli(home, "batch", str(sounds), "--out", str(tmp_path / "out"), "--name", "ucs")
    assert batch.returncode == 1
    assert "line 3" in batch.stderr and "GLASBrk" in batch.stderr  # the closest match
    made = tmp_path / "out" / "DOORWood_Creak slow_AD_SA3.wav"
    assert made.is_file() and not list((tmp_path / "out").glob("GLAS*"))
    xml = wavinfo.WavInfoReader(str(made)).ixml.source
    for field in (b"<CATID>DOORWood</CATID>", b"<CATEGORY>DOORS</CATEGORY>",
                  b"<SUBCATEGORY>WOOD</SUBCATEGORY>", b"<FXNAME>Creak slow</FXNAME>",
                  b"<creatorId>AD</creatorId>", b"<sourceId>SA3</sourceId>"):
        assert field in xml, field
