"""No delivered WAV depends on RIFF's pad byte (issue 30): Godot 3's importer, like other simple
readers, steps to `chunk start + 8 + size` and lost its place after an odd iXML chunk, importing
a looped take as silence. Deliveries with metadata of every length parity, in every WAV format,
by every way out, are walked here as such a reader walks them (tests.riff_support) and read
back by soundfile, wavinfo and mutagen."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import mutagen.wave
import pytest
import soundfile as sf
import wavinfo

from engines.delivery import riff
from engines.delivery.metadata import file_tags
from engines.delivery.render import render
from engines.finish.smpl import smpl_payload
from tests.riff_support import (
    RATE,
    assert_no_pad_byte_needed,
    deliver_both_ways,
    varied_take,
    walk_without_pad_bytes,
)

WAV_FORMATS = ("wav16", "wav24", "wav32f")
# (mono, looped, frames of the raw take): an odd frame count makes 24-bit mono `data` odd.
SHAPES = {"stereo-loop": (False, True, 44100), "mono-loop-odd": (True, True, 44101),
          "mono-odd": (True, False, 30001)}
# One character more or less in each text that reaches a chunk: the prompt (bext Description,
# iXML DESCRIPTION, INFO title), the seed's digits (bext CodingHistory), the FX name (iXML).
PROMPTS = ("rain on a tin roof", "rain on a tin roofs")
SEEDS = (7, 17)
FX_NAMES = ("Tin Rain", "Tin Rains")


def read_back(path: Path, looped: bool) -> None:
    """What the independent readers take from the file equals the sidecar beside it."""
    side = json.loads(path.with_suffix(".json").read_text())["output"]
    info = sf.info(str(path))
    assert (info.frames, info.samplerate, info.channels) == (
        side["samples"], side["sample_rate"], side["channels"])
    meta = wavinfo.WavInfoReader(str(path))
    assert meta.data.frame_count == side["samples"]
    assert meta.bext.originator == "SA3 Studio"
    assert meta.ixml.raw_xml.getroot().tag == "BWFXML"
    loops = [(lp.start, lp.end) for lp in meta.smpl.sample_loops] if meta.smpl else []
    assert loops == ([tuple(side["loop_points"])] if looped else [])
    wave = mutagen.wave.WAVE(str(path))
    assert wave.info.sample_rate == side["sample_rate"] and wave.info.channels == side[
        "channels"]
    assert wave.info.length == pytest.approx(side["samples"] / side["sample_rate"], abs=1e-3)


@pytest.mark.parametrize("fmt", WAV_FORMATS)
@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_chunk_is_even_for_every_metadata_length(tmp_path: Path, fmt: str,
                                                       shape: str) -> None:
    mono, looped, frames = SHAPES[shape]
    parities: dict[bytes, set[int]] = {b"bext": set(), b"iXML": set()}
    for n, (prompt, seed, fx_name) in enumerate(itertools.product(PROMPTS, SEEDS, FX_NAMES)):
        take = varied_take(fmt, frames=frames, mono=mono, looped=looped, prompt=prompt,
                           seed=seed, fx_name=fx_name)
        for chunk_id, payload in file_tags(take, render(take)).wav_chunks:
            parities[chunk_id].add(len(payload) % 2)  # before the writer pads them
        for delivered in deliver_both_ways(take, tmp_path, f"take{n}"):
            assert_no_pad_byte_needed(delivered.path, looped)
            read_back(delivered.path, looped)
    # The variations really gave odd text chunks to pad (else this test proves nothing).
    assert parities == {b"bext": {0, 1}, b"iXML": {0, 1}}


def test_odd_24_bit_mono_audio_ends_the_file_after_every_chunk(tmp_path: Path) -> None:
    take = varied_take("wav24", frames=44101, mono=True, looped=True, prompt="wind",
                       seed=3, fx_name="Wind")
    path = deliver_both_ways(take, tmp_path, "wind")[0].path
    walk = walk_without_pad_bytes(path.read_bytes())
    assert walk.chunks[-1] == (b"data", 3 * 35281)  # odd: no chunk may follow its pad byte
    assert walk.ids.index(b"smpl") < walk.ids.index(b"data")
    assert sf.info(str(path)).frames == 35281


def test_a_chunk_that_cannot_pad_itself_is_refused_not_written(tmp_path: Path) -> None:
    assert riff.padded_inside(b"iXML", b"<BWFXML/>") == b"<BWFXML/> "
    assert riff.padded_inside(b"bext", b"x" * 603) == b"x" * 603 + b"\0"
    assert riff.padded_inside(b"smpl", smpl_payload([(0, 9)], RATE)) == smpl_payload(
        [(0, 9)], RATE)
    with pytest.raises(ValueError, match="odd"):
        riff.padded_inside(b"abcd", b"xyz")  # a new chunk type must say how it pads


def test_generate_out_and_library_export_through_the_cli(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    from main import main

    monkeypatch.setenv("SA3_STUDIO_HOME", str(tmp_path / "home"))
    made = tmp_path / "made"
    made.mkdir()
    takes = list(zip(WAV_FORMATS * 2, ("rain", "rains") * 3, strict=True))
    for n, (fmt, prompt) in enumerate(takes):
        looped = n % 2 == 0
        argv = ["generate", "--prompt", f"{prompt} on a tin roof", "--seconds", "1",
                "--seed", str(7 + 10 * n), "--format", fmt, "--fx-name", f"Rain{'s' * n}",
                "--out", str(made / f"rain{n}.wav")]
        argv += ["--loop", "--loop-method", "crossfade", "--loop-seam", "0.2"] if looped else []
        argv += ["--mono"] if n % 3 == 1 else []
        assert main(argv) == 0, capsys.readouterr().err
        path = made / f"rain{n}.wav"
        assert_no_pad_byte_needed(path, looped)
        read_back(path, looped)
    ids = [str(n + 1) for n in range(len(takes))]
    for extra in ([], ["--format", "wav24", "--mono"]):
        folder = tmp_path / f"export{len(extra)}"
        assert main(["library", "export", *ids, "--to", str(folder), "--category", "AMBRain",
                     *extra]) == 0, capsys.readouterr().err
        exported = sorted(folder.glob("*.wav"))
        assert len(exported) == len(takes)
        for path in exported:
            looped = json.loads(path.with_suffix(".json").read_text())["output"][
                "loop_points"] is not None
            assert_no_pad_byte_needed(path, looped)
            read_back(path, looped)



def test_batch_through_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    from main import main

    monkeypatch.setenv("SA3_STUDIO_HOME", str(tmp_path / "home"))
    sounds = tmp_path / "sounds.csv"
    sounds.write_text("name,prompt,seconds,seed,loop\n"
                      "rain,rain on a tin roof,1,7,true\n"
                      "rains,rains on a tin roofs,1,17,false\n"
                      "wind,wind in pines,1,8,true\n", encoding="utf-8")
    for fmt in WAV_FORMATS:
        out = tmp_path / fmt
        assert main(["batch", str(sounds), "--out", str(out), "--format", fmt,
                     "--loop-method", "crossfade", "--loop-seam", "0.2", "--no-library",
                     *(["--mono"] if fmt == "wav24" else [])]) == 0, capsys.readouterr().err
        delivered = sorted(out.glob("*.wav"))
        assert len(delivered) == 3
        for path in delivered:
            looped = not path.name.startswith("rains")
            assert_no_pad_byte_needed(path, looped)
            read_back(path, looped)
