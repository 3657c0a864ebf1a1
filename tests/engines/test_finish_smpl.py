"""The WAV `smpl` chunk: our writer against the independent reader `wavinfo`, with soundfile
checking that the audio and the INFO note survive the rewrite byte for byte."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import wavinfo

from engines.delivery.riff import add_loop_points
from engines.errors import AudioFileError
from engines.finish.smpl import (
    parse_smpl,
    read_loop_points,
    smpl_payload,
    wav_layout,
)

NOTE = '{"app":"SA3 Studio","seed":7}'


def _chunks(path: Path) -> dict[bytes, bytes]:
    data = path.read_bytes()
    layout = wav_layout(data, path)
    return {cid: data[off + 8:off + 8 + size] for cid, off, size in layout.chunks}


def _write(path: Path, frames: int, channels: int, subtype: str, rate: int = 44100,
           fmt: str = "WAV") -> np.ndarray:
    audio = (np.random.default_rng(frames).uniform(-0.5, 0.5, (frames, channels))
             .astype(np.float32))
    with sf.SoundFile(str(path), "w", rate, channels, subtype, format=fmt) as f:
        f.title = "Rain loop"
        f.comment = NOTE
        f.write(audio)
    return audio


def test_payload_layout_matches_the_spec() -> None:
    payload = smpl_payload([(10, 4409)], 44100)
    assert len(payload) == 36 + 24
    header = struct.unpack_from("<9I", payload)
    # manufacturer, product, period ns, unity note, pitch fraction, SMPTE format and offset,
    # loops, sampler data
    assert header == (0, 0, 22676, 60, 0, 0, 0, 1, 0)
    assert struct.unpack_from("<6I", payload, 36) == (0, 0, 10, 4409, 0, 0)
    assert parse_smpl(payload) == [(10, 4409)]
    assert struct.unpack_from("<I", smpl_payload([], 48000), 8)[0] == 20833


@pytest.mark.parametrize(("subtype", "channels", "frames", "fmt"), [
    ("PCM_16", 2, 44100, "WAV"),
    ("PCM_24", 1, 1001, "WAV"),  # 3003 data bytes: an odd chunk with a pad byte
    ("FLOAT", 2, 5000, "WAV"),  # libsndfile adds fact and PEAK chunks
    ("PCM_24", 2, 777, "WAVEX"),  # WAVE_FORMAT_EXTENSIBLE
])
def test_loop_lands_in_smpl_and_everything_else_survives(
        tmp_path: Path, subtype: str, channels: int, frames: int, fmt: str) -> None:
    path = tmp_path / "take.wav"
    _write(path, frames, channels, subtype, fmt=fmt)
    before_audio, rate = sf.read(str(path), dtype="float64", always_2d=True)
    before = _chunks(path)

    add_loop_points(path, [(0, frames - 1)])

    info = wavinfo.WavInfoReader(str(path))
    assert info.smpl is not None
    loop = info.smpl.sample_loops[0]
    assert (loop.start, loop.end, loop.loop_type, loop.repetition_count) == (0, frames - 1, 0, 0)
    assert info.smpl.midi_note == 60 and info.smpl.sample_period_ns == round(1e9 / rate)
    assert info.info.comment == NOTE and info.info.title == "Rain loop"
    after_audio, _ = sf.read(str(path), dtype="float64", always_2d=True)
    np.testing.assert_array_equal(after_audio, before_audio)
    with sf.SoundFile(str(path)) as f:
        assert f.comment == NOTE and f.title == "Rain loop"
    after = _chunks(path)
    assert {k: v for k, v in after.items() if k != b"smpl"} == before  # byte for byte
    data = path.read_bytes()
    assert struct.unpack_from("<I", data, 4)[0] == len(data) - 8 and len(data) % 2 == 0
    assert read_loop_points(path) == [(0, frames - 1)]


def test_rewriting_replaces_the_old_chunk(tmp_path: Path) -> None:
    path = tmp_path / "take.wav"
    _write(path, 4000, 2, "PCM_16")
    add_loop_points(path, [(0, 3999)])
    add_loop_points(path, [(100, 2099), (2100, 3999)])
    ids = [cid for cid, _, _ in wav_layout(path.read_bytes(), path).chunks]
    assert ids.count(b"smpl") == 1
    loops = wavinfo.WavInfoReader(str(path)).smpl.sample_loops
    assert [(lp.ident, lp.start, lp.end) for lp in loops] == [(0, 100, 2099), (1, 2100, 3999)]
    assert read_loop_points(path) == [(100, 2099), (2100, 3999)]


def test_a_file_without_loops_reads_as_none(tmp_path: Path) -> None:
    path = tmp_path / "plain.wav"
    _write(path, 100, 1, "PCM_16")
    assert read_loop_points(path) == []


def test_loop_outside_the_audio_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "take.wav"
    _write(path, 100, 2, "PCM_16")
    original = path.read_bytes()
    with pytest.raises(AudioFileError, match=r"outside its 100 frames; give frames from 0 to "
                                             r"99\.$"):
        add_loop_points(path, [(0, 100)])
    assert path.read_bytes() == original


def test_rf64_and_huge_files_are_refused_with_a_sentence(tmp_path: Path) -> None:
    rf64 = tmp_path / "big.wav"
    _write(rf64, 100, 2, "PCM_16", fmt="RF64")
    assert rf64.read_bytes()[:4] == b"RF64"
    with pytest.raises(AudioFileError, match=r"RF64 file.*export a shorter clip\.$"):
        add_loop_points(rf64, [(0, 99)])
    with pytest.raises(AudioFileError, match="RF64"):
        read_loop_points(rf64)

    huge = tmp_path / "huge.wav"
    with open(huge, "wb") as f:  # sparse: no disk space used
        f.write(b"RIFF\xff\xff\xff\xffWAVE")
        f.truncate(2**32 + 16)
    with pytest.raises(AudioFileError, match=r"4 GB or larger.*export a shorter clip\.$"):
        add_loop_points(huge, [(0, 1)])


def test_not_a_wav_and_missing_file(tmp_path: Path) -> None:
    flac = tmp_path / "take.flac"
    sf.write(str(flac), np.zeros((100, 2), np.float32), 44100, format="FLAC")
    with pytest.raises(AudioFileError, match=r"not a WAV file; export it as WAV\.$"):
        read_loop_points(flac)
    with pytest.raises(AudioFileError, match=r"^Could not read loop points of '.*gone\.wav': "
                                             r"the file or folder does not exist"):
        read_loop_points(tmp_path / "gone.wav")
