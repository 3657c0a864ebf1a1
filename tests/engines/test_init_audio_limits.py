"""Long init audio costs the clip, not the file: read_audio reads only the frames asked for,
a request reads only what it can use, and the library keeps imported audio losslessly
compressed (FLAC), still recognisable by its content hash and readable by every part of it.

The memory checks are bounds that cannot flake: tracemalloc counts numpy's buffers, and the
bounds sit far below what reading the whole file would take."""

from __future__ import annotations

import hashlib
import sqlite3
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from engines.audio_io import read_audio
from engines.audio_io.convert import downmix_matrix
from engines.request import GenerationRequest, init_frames_needed, validate_request
from engines.store.library import ClipLibrary
from tests.engines.test_library import engine_files_in, make_result

SR = 44100
TEN_MINUTES = 600


def write_long(path: Path, seconds: int, rate: int = SR, channels: int = 2) -> Path:
    """A long 16-bit file written up to a minute at a time (the test itself stays small)."""
    rng = np.random.default_rng(1)
    with sf.SoundFile(str(path), "w", rate, channels, "PCM_16") as handle:
        for start in range(0, seconds, 60):
            frames = min(60, seconds - start) * rate
            handle.write(rng.integers(-8000, 8000, (frames, channels), dtype=np.int16))
    return path


def peak_bytes(action) -> tuple[object, int]:
    tracemalloc.start()
    try:
        result = action()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


@pytest.fixture(scope="module")
def ten_minutes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_long(tmp_path_factory.mktemp("long") / "ten-minutes.wav", TEN_MINUTES)


def test_reading_the_start_of_a_long_file_costs_the_clip(ten_minutes: Path):
    clip_bytes = 5 * SR * 2 * 4
    audio, peak = peak_bytes(lambda: read_audio(ten_minutes, max_seconds=5.0))
    assert audio.shape == (5 * SR, 2) and audio.dtype == np.float32
    assert peak < 10 * clip_bytes  # the whole file would be 120 times the clip
    expected, _ = sf.read(str(ten_minutes), frames=5 * SR, dtype="int16")
    np.testing.assert_array_equal(audio, expected.astype(np.float32) / 32768)


def test_resampling_the_start_of_a_long_file_costs_the_clip(tmp_path: Path):
    path = write_long(tmp_path / "long-48k-mono.wav", TEN_MINUTES, 48000, 1)
    audio, peak = peak_bytes(lambda: read_audio(path, max_seconds=5.0))
    assert audio.shape == (5 * SR, 2)
    assert peak < 10 * audio.nbytes


def test_a_request_reads_only_the_init_audio_it_uses(ten_minutes: Path):
    request = GenerationRequest(prompt="x", init_audio=ten_minutes, seconds=5.0, seed=1)
    validated, peak = peak_bytes(lambda: validate_request(request, max_seconds=380.0))
    used = init_frames_needed(5.0)
    assert validated.init_audio.shape == (used, 2)
    assert peak < 10 * used * 2 * 4
    assert ("The init audio (10 min) is longer than 5 s; only its first 5 s are used."
            in validated.warnings)
    whole = GenerationRequest(prompt="x", init_audio=ten_minutes, seed=1)
    capped = validate_request(whole, max_seconds=30.0)  # no length asked: the model's limit
    assert capped.seconds == 30.0 and capped.init_audio.shape == (init_frames_needed(30), 2)
    assert "The init audio is 10 min long; only its first 30 s are used." in capped.warnings


@pytest.mark.parametrize("rate, channels", [(48000, 1), (22050, 2), (96000, 6)])
def test_a_resampled_start_is_the_start_of_the_whole(tmp_path: Path, rate: int, channels: int):
    path = write_long(tmp_path / "in.wav", 8, rate, channels)
    start = read_audio(path, max_seconds=2.5)
    whole = read_audio(path)
    assert start.shape == (int(2.5 * SR), 2)
    np.testing.assert_array_equal(start, whole[: start.shape[0]])


def test_many_channels_are_folded_down_a_block_at_a_time(tmp_path: Path):
    path = write_long(tmp_path / "surround.wav", 20, SR, 6)
    audio, peak = peak_bytes(lambda: read_audio(path))
    # Independent: the whole file folded at once, as the reader did before.
    data, _ = sf.read(str(path), dtype="float32", always_2d=True)
    np.testing.assert_allclose(audio, data @ downmix_matrix(6).astype(np.float32),
                               rtol=0, atol=1e-6)
    assert peak < 1.5 * audio.nbytes  # the 6-channel file at once would be 3 times the output


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_max_seconds_must_be_a_length(ten_minutes: Path, bad: float):
    with pytest.raises(ValueError):
        read_audio(ten_minutes, max_seconds=bad)


# --------------------------------------------------------------------------------------------
# The library keeps imported audio compressed, losslessly


@pytest.fixture
def lib(tmp_path: Path):
    library = ClipLibrary(tmp_path / "library")
    yield library
    library.close()


def from_16_bit(seconds: float) -> np.ndarray:
    """Float audio as read_audio gives it for a 16-bit file: code / 32768."""
    t = np.arange(int(seconds * SR)) / SR
    tone = 0.5 * np.sin(2 * np.pi * 220 * t)
    noise = np.random.default_rng(3).normal(0, 0.01, t.shape)
    codes = np.rint((tone + noise) * 32767).astype(np.int16)
    return np.stack([codes, codes // 2], axis=1).astype(np.float32) / np.float32(32768)


def test_float_import_from_a_16_bit_file_is_stored_as_flac(lib: ClipLibrary, tmp_path: Path):
    audio = from_16_bit(5.0)
    take = lib.add_imported(audio, "/sounds/hum.wav")
    info = sf.info(str(take.audio_path))
    assert (info.format, info.subtype, take.audio_path.suffix) == ("FLAC", "PCM_24", ".flac")
    assert take.audio_path.stat().st_size < 0.4 * audio.nbytes  # was a 32-bit float WAV
    back = lib.load_float_audio(take.id)
    assert back.tobytes() == audio.tobytes()  # bit for bit
    assert take.content_sha256 == hashlib.sha256(audio.tobytes()).hexdigest()
    assert lib.add_imported(audio.copy(), "/elsewhere/hum.wav").id == take.id
    out = tmp_path / "out"
    out.mkdir()
    exported = lib.export([take.id], out)[0]
    assert exported.name == "hum_01.flac"  # the export name template, {name} from the file
    assert lib.identify(exported).id == take.id  # by content hash
    assert take.sidecar()["output"]["format"] == "flac"


def test_int16_import_is_16_bit_flac(lib: ClipLibrary):
    pcm = np.rint(from_16_bit(2.0) * 32768).astype(np.int16)
    take = lib.add_imported(pcm, "/sounds/int.wav")
    assert sf.info(str(take.audio_path)).subtype == "PCM_16"
    assert take.audio_path.suffix == ".flac"
    assert np.array_equal(lib.load_audio(take.id), pcm)


@pytest.mark.parametrize("make", [
    lambda: np.random.default_rng(2).uniform(-0.5, 0.5, (1000, 2)).astype(np.float32),
    lambda: np.full((1000, 2), -0.0, np.float32),  # FLAC would give +0.0 back
    lambda: np.full((1000, 2), 1.0, np.float32),  # 2**23 is one code past 24 bits
], ids=["arbitrary", "negative-zero", "full-scale"])
def test_float_flac_cannot_hold_exactly_stays_float_wav(lib: ClipLibrary, make):
    audio = make()
    take = lib.add_imported(audio, "/sounds/f.wav")
    assert sf.info(str(take.audio_path)).subtype == "FLOAT"
    assert take.audio_path.suffix == ".wav"
    assert lib.load_float_audio(take.id).tobytes() == audio.tobytes()


def test_flac_takes_are_rebuilt_from_their_notes(tmp_path: Path):
    root = tmp_path / "library"
    audio = from_16_bit(1.0)
    pcm = np.rint(from_16_bit(0.5) * 32768).astype(np.int16)
    with ClipLibrary(root) as lib:
        float_take = lib.add_imported(audio, "/sounds/a.wav")
        int_take = lib.add_imported(pcm, "/sounds/b.wav")
    conn = sqlite3.connect(root / "library.sqlite3")
    conn.execute("DELETE FROM takes")  # rows gone (journal too): only the notes are left
    conn.commit()
    conn.close()
    (root / "library-edits.jsonl").unlink()
    with ClipLibrary(root) as lib:
        for before in (float_take, int_take):
            back = lib.get(before.id)
            assert back.content_sha256 == before.content_sha256
            assert back.audio_path == before.audio_path and back.is_imported
        assert lib.add_imported(audio, "/again.wav").id == float_take.id


def test_regenerating_reads_only_what_the_take_used(lib: ClipLibrary, tmp_path: Path):
    files = engine_files_in(tmp_path / "engines")
    long_init = from_16_bit(20.0)
    parent = lib.add_imported(long_init, "/sounds/long.wav")
    take = lib.add(make_result(files, seconds=4.0, init_audio=long_init[: 4 * SR]),
                   parent_id=parent.id)
    request = lib.regeneration_request(take.id)
    assert request.init_audio.shape == (init_frames_needed(4.0), 2)
    np.testing.assert_array_equal(request.init_audio, long_init[: init_frames_needed(4.0)])
