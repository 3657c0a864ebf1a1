"""engines.audio_io: every readable format to float32 stereo at 44.1 kHz, atomic writes, PCM
clamping, and one clear AudioFileError for every way a file can be wrong."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from engines import audio_io
from engines.audio_io import (
    AudioInfo,
    audio_info,
    fit_length,
    float_from_pcm16,
    pcm16_from_float,
    pcm16_from_int32,
    read_audio,
)
from engines.audio_io.formats import FORMATS as WRITE_FORMATS
from engines.audio_io.formats import format_for_path
from engines.constants import SAMPLE_RATE
from engines.delivery import writer as writer_module
from engines.delivery.writer import write_audio
from engines.errors import AudioFileError

TONE_HZ = 1000.0
SECONDS = 0.25
LSB24 = 1.0 / 2**23

# name -> (soundfile format, subtype, suffix): one entry per encoding the reader must handle.
READ_SOURCES = {
    "wav_u8": ("WAV", "PCM_U8", ".wav"),
    "wav16": ("WAV", "PCM_16", ".wav"),
    "wav24": ("WAV", "PCM_24", ".wav"),
    "wav32": ("WAV", "PCM_32", ".wav"),
    "wav_f32": ("WAV", "FLOAT", ".wav"),
    "wav_f64": ("WAV", "DOUBLE", ".wav"),
    "flac": ("FLAC", "PCM_16", ".flac"),
    "ogg": ("OGG", "VORBIS", ".ogg"),
    "aiff": ("AIFF", "PCM_16", ".aiff"),
}
RATES = (22050, 44100, 48000, 96000)
CHANNEL_COUNTS = (1, 2, 3, 6)


def tone(rate: int, seconds: float = SECONDS, amplitude: float = 1.0) -> np.ndarray:
    t = np.arange(int(round(rate * seconds))) / rate
    return amplitude * np.sin(2 * np.pi * TONE_HZ * t)


def peak_hz(signal: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(signal * np.hanning(len(signal))))
    return float(np.fft.rfftfreq(len(signal), 1 / rate)[np.argmax(spectrum)])


def expected_frames(frames: int, rate: int) -> int:
    return int(np.floor(frames * SAMPLE_RATE / rate + 0.5))


def stereo_noise(frames: int, amplitude: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(-amplitude, amplitude, (frames, 2)).astype(np.float32)


def dir_names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# ---------------------------------------------------------------------------------------------
# Reading


@pytest.mark.parametrize("channels", CHANNEL_COUNTS)
@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("source", READ_SOURCES)
def test_read_any_format_rate_and_channels(
    tmp_path: Path, source: str, rate: int, channels: int
) -> None:
    fmt, subtype, suffix = READ_SOURCES[source]
    # Full scale on every channel is the worst case for the fold-down: it must not exceed 1.0.
    mono = tone(rate)
    path = tmp_path / f"in{suffix}"
    sf.write(path, np.repeat(mono[:, None], channels, axis=1), rate, format=fmt, subtype=subtype)

    audio = read_audio(path)

    assert audio.dtype == np.float32
    assert audio.flags["C_CONTIGUOUS"]
    assert audio.shape == (expected_frames(len(mono), rate), 2)
    assert float(np.max(np.abs(audio))) <= 1.0
    # Full-scale input stays near full scale: nothing was silently attenuated either.
    assert float(np.max(np.abs(audio))) > 0.9
    for side in (0, 1):
        assert abs(peak_hz(audio[:, side], SAMPLE_RATE) - TONE_HZ) <= SAMPLE_RATE / len(audio)
    if channels == 1:
        np.testing.assert_array_equal(audio[:, 0], audio[:, 1])


def test_read_is_exact_for_44k_stereo_pcm16(tmp_path: Path) -> None:
    pcm = np.array([[0, 1], [-1, 32767], [-32768, 16384]], dtype=np.int16)
    path = tmp_path / "exact.wav"
    sf.write(path, pcm, SAMPLE_RATE, subtype="PCM_16")
    np.testing.assert_array_equal(read_audio(path), pcm.astype(np.float32) / 32768)


def test_read_accepts_str_path(tmp_path: Path) -> None:
    path = tmp_path / "s.wav"
    sf.write(path, np.zeros((10, 2)), SAMPLE_RATE)
    assert read_audio(str(path)).shape == (10, 2)


def test_mono_is_duplicated_at_unity(tmp_path: Path) -> None:
    path = tmp_path / "mono.wav"
    signal = tone(SAMPLE_RATE, amplitude=0.5).astype(np.float32)
    sf.write(path, signal, SAMPLE_RATE, subtype="FLOAT")
    audio = read_audio(path)
    np.testing.assert_array_equal(audio[:, 0], signal)
    np.testing.assert_array_equal(audio[:, 1], signal)


def _surround(channel: int, amplitude: float = 1.0, channels: int = 6) -> np.ndarray:
    data = np.zeros((2048, channels), dtype=np.float32)
    data[:, channel] = tone(SAMPLE_RATE, 2048 / SAMPLE_RATE, amplitude)
    return data


def _read_float(tmp_path: Path, data: np.ndarray) -> np.ndarray:
    path = tmp_path / "multi.wav"
    sf.write(path, data, SAMPLE_RATE, subtype="FLOAT")
    return read_audio(path)


def test_51_centre_lands_equally_on_both_sides(tmp_path: Path) -> None:
    centre = _surround(2)
    audio = _read_float(tmp_path, centre)
    np.testing.assert_array_equal(audio[:, 0], audio[:, 1])
    # ITU: C at -3 dB, then everything scaled by 1 / (1 + 2 * 0.707) so nothing gains level.
    gain = (1 / np.sqrt(2)) / (1 + np.sqrt(2))
    np.testing.assert_allclose(audio[:, 0], centre[:, 2] * gain, atol=1e-6)


def test_51_lfe_is_dropped_and_surrounds_stay_on_their_side(tmp_path: Path) -> None:
    assert float(np.max(np.abs(_read_float(tmp_path, _surround(3))))) == 0.0
    left_surround = _read_float(tmp_path, _surround(4))
    assert float(np.max(np.abs(left_surround[:, 1]))) == 0.0
    assert float(np.max(np.abs(left_surround[:, 0]))) > 0.25
    right_surround = _read_float(tmp_path, _surround(5))
    assert float(np.max(np.abs(right_surround[:, 0]))) == 0.0


def test_51_front_left_keeps_its_share(tmp_path: Path) -> None:
    data = _surround(0)
    audio = _read_float(tmp_path, data)
    np.testing.assert_allclose(audio[:, 0], data[:, 0] / (1 + np.sqrt(2)), atol=1e-6)
    assert float(np.max(np.abs(audio[:, 1]))) == 0.0


@pytest.mark.parametrize("channels", (3, 4, 8))
def test_other_counts_keep_front_pair_and_share_the_rest(tmp_path: Path, channels: int) -> None:
    extra = _read_float(tmp_path, _surround(channels - 1, channels=channels))
    np.testing.assert_array_equal(extra[:, 0], extra[:, 1])
    assert float(np.max(np.abs(extra[:, 0]))) > 0.1
    front_right = _read_float(tmp_path, _surround(1, channels=channels))
    assert float(np.max(np.abs(front_right[:, 0]))) == 0.0
    assert float(np.max(np.abs(front_right[:, 1]))) > 0.1
    everything = np.ones((64, channels), dtype=np.float32)
    np.testing.assert_allclose(_read_float(tmp_path, everything), 1.0, rtol=1e-6)


def test_over_full_scale_float_file_is_turned_down_not_clipped(tmp_path: Path) -> None:
    signal = tone(SAMPLE_RATE, amplitude=4.0).astype(np.float32)
    audio = _read_float(tmp_path, np.stack([signal, signal / 2], axis=1))
    peak = float(np.max(np.abs(signal)))  # just under 4: the samples miss the crest
    assert float(np.max(np.abs(audio))) == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_allclose(audio[:, 0], signal / peak, atol=1e-6)
    np.testing.assert_allclose(audio[:, 1], signal / (2 * peak), atol=1e-6)


def test_non_finite_samples_read_as_silence(tmp_path: Path) -> None:
    data = np.full((8, 2), 0.25, dtype=np.float32)
    data[2, 0] = np.nan
    data[3, 1] = np.inf
    audio = _read_float(tmp_path, data)
    assert np.all(np.isfinite(audio))
    assert audio[2, 0] == 0.0 and audio[3, 1] == 0.0 and audio[0, 0] == 0.25


def test_single_frame_at_high_rate_still_gives_a_frame(tmp_path: Path) -> None:
    path = tmp_path / "one.wav"
    sf.write(path, np.full((1, 2), 0.5), 96000, subtype="FLOAT")
    assert read_audio(path).shape == (1, 2)


def test_downsampling_removes_content_above_the_new_nyquist(tmp_path: Path) -> None:
    # A 30 kHz tone in a 96 kHz file would fold to 14.1 kHz with a poor filter; VHQ keeps the
    # alias far below anything audible (about -176 dB here; cheap filters give -2 to -126 dB).
    rate = 96000
    t = np.arange(rate // 4) / rate
    signal = 0.5 * np.sin(2 * np.pi * 1000 * t) + 0.5 * np.sin(2 * np.pi * 30000 * t)
    path = tmp_path / "hi.wav"
    sf.write(path, signal.astype(np.float32), rate, subtype="FLOAT")
    left = read_audio(path)[1000:-1000, 0]
    spectrum = np.abs(np.fft.rfft(left * np.blackman(len(left))))
    freqs = np.fft.rfftfreq(len(left), 1 / SAMPLE_RATE)
    tone_level = spectrum[np.abs(freqs - 1000) < 30].max()
    alias_level = spectrum[(freqs > 14000) & (freqs < 14200)].max()
    assert 20 * np.log10(alias_level / tone_level) < -140


def test_audio_info_reports_header(tmp_path: Path) -> None:
    path = tmp_path / "info.flac"
    sf.write(path, np.zeros((48000, 6), dtype=np.float32), 48000, format="FLAC")
    info = audio_info(path)
    assert info == AudioInfo(
        frames=48000,
        samplerate=48000,
        channels=6,
        duration_seconds=1.0,
        format="FLAC",
        subtype="PCM_16",
    )
    with pytest.raises(AttributeError):
        info.frames = 1  # type: ignore[misc]


# ---------------------------------------------------------------------------------------------
# Reading errors


def _assert_one_sentence(err: AudioFileError, name: str) -> None:
    message = str(err)
    assert f"'{name}'" in message
    assert message.endswith(".")
    # One sentence: no full stop followed by a space or newline anywhere before the end.
    assert ". " not in message and "\n" not in message


READ_FUNCTIONS = pytest.mark.parametrize("reader", (read_audio, audio_info))


@READ_FUNCTIONS
def test_missing_file(tmp_path: Path, reader) -> None:
    with pytest.raises(AudioFileError, match="does not exist") as caught:
        reader(tmp_path / "nope.wav")
    _assert_one_sentence(caught.value, "nope.wav")


@READ_FUNCTIONS
def test_directory(tmp_path: Path, reader) -> None:
    folder = tmp_path / "clips.wav"
    folder.mkdir()
    with pytest.raises(AudioFileError, match="folder") as caught:
        reader(folder)
    _assert_one_sentence(caught.value, "clips.wav")


@READ_FUNCTIONS
def test_zero_byte_file(tmp_path: Path, reader) -> None:
    path = tmp_path / "empty.wav"
    path.touch()
    with pytest.raises(AudioFileError, match="empty") as caught:
        reader(path)
    _assert_one_sentence(caught.value, "empty.wav")


@READ_FUNCTIONS
def test_zero_frame_wav(tmp_path: Path, reader) -> None:
    path = tmp_path / "header_only.wav"
    sf.write(path, np.zeros((0, 2)), SAMPLE_RATE)
    assert path.stat().st_size > 0
    with pytest.raises(AudioFileError, match="no audio") as caught:
        reader(path)
    _assert_one_sentence(caught.value, "header_only.wav")


@READ_FUNCTIONS
def test_text_file_renamed_wav(tmp_path: Path, reader) -> None:
    path = tmp_path / "notes.wav"
    path.write_text("these are not samples\n" * 20)
    with pytest.raises(AudioFileError, match="format libsndfile understands") as caught:
        reader(path)
    assert isinstance(caught.value.__cause__, sf.SoundFileError)
    _assert_one_sentence(caught.value, "notes.wav")


@pytest.mark.posix
@READ_FUNCTIONS
def test_a_pipe_is_refused_without_waiting_for_a_writer(tmp_path: Path, reader) -> None:
    fifo = tmp_path / "init.wav"
    os.mkfifo(fifo)  # opening it to read would block until something writes
    with pytest.raises(AudioFileError, match="pipe, socket or device") as caught:
        reader(fifo)
    _assert_one_sentence(caught.value, "init.wav")


def test_a_file_of_nothing_but_nan_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "nan.wav"
    sf.write(path, np.full((100, 2), np.nan, np.float32), SAMPLE_RATE, subtype="FLOAT")
    with pytest.raises(AudioFileError, match="NaN or infinite") as caught:
        read_audio(path)
    _assert_one_sentence(caught.value, "nan.wav")


@pytest.mark.posix
@READ_FUNCTIONS
def test_a_name_that_is_not_utf8_still_reads(tmp_path: Path, reader) -> None:
    path = tmp_path / "caf\udce9.wav"  # the byte 0xe9 on disk, as Python hands it over
    sf.write(os.fsencode(path), np.full((10, 2), 0.5, np.float32), SAMPLE_RATE,
             subtype="FLOAT")
    result = reader(path)
    assert (result.shape[0] if isinstance(result, np.ndarray) else result.frames) == 10
    with pytest.raises(AudioFileError) as caught:
        reader(tmp_path / "gone-\udcff.wav")
    assert "\\xff" in str(caught.value)
    str(caught.value).encode("utf-8")  # printable anywhere: no lone surrogates


def test_truncated_header_is_reported_not_raised(tmp_path: Path) -> None:
    path = tmp_path / "cut.flac"
    sf.write(path, np.zeros((4096, 2)), SAMPLE_RATE, format="FLAC")
    path.write_bytes(path.read_bytes()[:20])
    with pytest.raises(AudioFileError) as caught:
        read_audio(path)
    _assert_one_sentence(caught.value, "cut.flac")


# ---------------------------------------------------------------------------------------------
# PCM conversions


def test_pcm16_from_int32_clamps_instead_of_wrapping() -> None:
    raw = np.array([32768, -32769, 32767, -32767, -32768, 0, 70000, -(2**31)], dtype=np.int32)
    np.testing.assert_array_equal(
        pcm16_from_int32(raw),
        np.array([32767, -32767, 32767, -32767, -32767, 0, 32767, -32767], dtype=np.int16),
    )
    assert pcm16_from_int32(raw).dtype == np.int16


def test_pcm16_from_float_rounds_and_clamps() -> None:
    x = np.array([1.5, -1.5, 1.0, -1.0, 0.0, 0.5, -0.5, 1 / 32767, 0.4 / 32767], np.float32)
    np.testing.assert_array_equal(
        pcm16_from_float(x),
        np.array([32767, -32767, 32767, -32767, 0, 16384, -16384, 1, 0], dtype=np.int16),
    )


def test_pcm16_from_float_never_produces_minus_32768_or_garbage() -> None:
    x = np.array([-1.0000001, -2.0, -np.inf, np.inf, np.nan], dtype=np.float64)
    np.testing.assert_array_equal(pcm16_from_float(x), [-32767, -32767, -32767, 32767, 0])


def test_pcm16_round_trip_is_exact_for_every_value() -> None:
    every = np.arange(-32767, 32768, dtype=np.int16)
    back = float_from_pcm16(every)
    assert back.dtype == np.float32
    assert back[0] == -1.0 and back[-1] == 1.0
    np.testing.assert_array_equal(pcm16_from_float(back), every)


def test_conversions_reject_the_wrong_kind_of_input() -> None:
    with pytest.raises(TypeError):
        pcm16_from_float(np.array([1, 2], dtype=np.int16))
    with pytest.raises(TypeError):
        pcm16_from_int32(np.array([0.5], dtype=np.float32))
    with pytest.raises(TypeError):
        float_from_pcm16(np.array([0.5], dtype=np.float32))


def test_fit_length_pads_trims_and_copies() -> None:
    audio = np.arange(10, dtype=np.float32).reshape(5, 2)
    padded = fit_length(audio, 8)
    assert padded.shape == (8, 2) and padded.dtype == np.float32
    np.testing.assert_array_equal(padded[:5], audio)
    np.testing.assert_array_equal(padded[5:], 0)
    trimmed = fit_length(audio, 2)
    np.testing.assert_array_equal(trimmed, audio[:2])
    trimmed[0, 0] = 99
    assert audio[0, 0] == 0  # a copy, never a view into the caller's buffer
    assert fit_length(audio, 0).shape == (0, 2)
    assert fit_length(audio.astype(np.int16), 7).dtype == np.int16
    with pytest.raises(ValueError):
        fit_length(audio, -1)


# ---------------------------------------------------------------------------------------------
# Writing


def test_write_formats_table() -> None:
    assert {key: spec[:3] for key, spec in WRITE_FORMATS.items()} == {
        "wav16": ("WAV", "PCM_16", ".wav"),
        "wav24": ("WAV", "PCM_24", ".wav"),
        "wav32f": ("WAV", "FLOAT", ".wav"),
        "flac": ("FLAC", "PCM_24", ".flac"),
        "ogg": ("OGG", "VORBIS", ".ogg"),
    }
    with pytest.raises(TypeError):
        WRITE_FORMATS["mp3"] = ("MP3", "MPEG_LAYER_III", ".mp3")  # type: ignore[index]


def test_format_for_path() -> None:
    assert format_for_path("a/b/clip.wav") == "wav16"
    assert format_for_path(Path("clip.WAV"), default="wav24") == "wav24"
    assert format_for_path("clip.flac") == "flac"
    assert format_for_path("clip.ogg", default="wav24") == "ogg"
    for bad in ("clip.mp3", "clip"):
        with pytest.raises(AudioFileError, match=r"\.flac, \.ogg or \.wav") as caught:
            format_for_path(bad)
        _assert_one_sentence(caught.value, bad)


def test_wav16_int16_round_trip_is_bit_exact(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    pcm = rng.integers(-32768, 32768, (5000, 2), dtype=np.int16)
    pcm[:2] = [[32767, -32768], [-32767, 0]]
    path = write_audio(tmp_path / "exact.wav", pcm)
    assert path == tmp_path / "exact.wav"
    back, rate = sf.read(path, dtype="int16")
    assert rate == SAMPLE_RATE
    np.testing.assert_array_equal(back, pcm)
    assert sf.info(path).subtype == "PCM_16"


def test_wav16_float_input_is_dithered_within_one_and_a_half_lsb(tmp_path: Path) -> None:
    audio = stereo_noise(3000, 0.9)
    path = write_audio(tmp_path / "f.wav", audio)
    back, _ = sf.read(path, dtype="int16")
    error = back.astype(np.int32) - pcm16_from_float(audio).astype(np.int32)
    assert np.abs(error).max() <= 2 and error.std() > 0.3  # TPDF dither, not plain rounding
    assert write_audio(tmp_path / "g.wav", audio).read_bytes()[-4000:] == \
        path.read_bytes()[-4000:]  # a fixed seed: the same audio gives the same file


@pytest.mark.parametrize("fmt", ("wav24", "flac"))
def test_24bit_float_round_trip_within_one_lsb(tmp_path: Path, fmt: str) -> None:
    audio = stereo_noise(6000, 0.5, seed=2)
    path = write_audio(tmp_path / f"x{WRITE_FORMATS[fmt].suffix}", audio, fmt)
    assert sf.info(path).subtype == "PCM_24"
    # Stored codes follow the symmetric rule exactly...
    codes = sf.read(path, dtype="int32")[0] >> 8
    np.testing.assert_array_equal(codes, np.rint(audio.astype(np.float64) * (2**23 - 1)))
    # ...and read back within one 24-bit step (rounding plus the 2**23 - 1 vs 2**23 gain).
    back = read_audio(path)
    assert back.shape == audio.shape
    assert float(np.max(np.abs(back - audio))) <= LSB24


@pytest.mark.parametrize("fmt", ("wav24", "flac", "ogg"))
def test_int16_input_reads_back_like_wav16(tmp_path: Path, fmt: str) -> None:
    # Tonal, not noise: Vorbis keeps tones, and white noise is exactly what it throws away.
    pcm = pcm16_from_float(np.stack([tone(SAMPLE_RATE, 0.2, 0.5)] * 2, axis=1))
    reference = read_audio(write_audio(tmp_path / "ref.wav", pcm))
    back = read_audio(write_audio(tmp_path / f"x{WRITE_FORMATS[fmt].suffix}", pcm, fmt))
    if fmt == "ogg":
        assert np.corrcoef(back[:, 0], reference[:, 0])[0, 1] > 0.99
        # Same level: int16 is scaled the way the .wav is read, not by 1/32767.
        rms_ratio = np.sqrt(np.mean(back**2) / np.mean(reference**2))
        assert rms_ratio == pytest.approx(1.0, abs=0.02)
    else:
        np.testing.assert_array_equal(back, reference)


def test_ogg_round_trip(tmp_path: Path) -> None:
    t = np.arange(SAMPLE_RATE // 2) / SAMPLE_RATE
    audio = np.stack(
        [0.5 * np.sin(2 * np.pi * 440 * t), 0.4 * np.sin(2 * np.pi * 660 * t)], axis=1
    ).astype(np.float32)
    path = write_audio(tmp_path / "x.ogg", audio)
    assert sf.info(path).format == "OGG"
    back = read_audio(path)
    assert abs(len(back) - len(audio)) <= 64  # Vorbis granule positions, not whole blocks
    n = min(len(back), len(audio))
    for side in (0, 1):
        assert np.corrcoef(back[:n, side], audio[:n, side])[0, 1] > 0.99


def test_write_over_existing_file_replaces_it(tmp_path: Path) -> None:
    path = tmp_path / "take.wav"
    write_audio(path, np.zeros((100, 2), dtype=np.int16))
    write_audio(path, np.ones((50, 2), dtype=np.int16))
    np.testing.assert_array_equal(sf.read(path, dtype="int16")[0], np.ones((50, 2)))
    assert dir_names(tmp_path) == ["take.wav"]


def test_write_keeps_samplerate_argument(tmp_path: Path) -> None:
    path = write_audio(tmp_path / "r.flac", np.zeros((480, 2), np.float32), samplerate=48000)
    assert sf.info(path).samplerate == 48000


def test_new_file_gets_ordinary_permissions(tmp_path: Path) -> None:
    if os.name != "posix":
        pytest.skip("POSIX permission bits")
    umask = os.umask(0o022)
    try:
        path = write_audio(tmp_path / "p.wav", np.zeros((10, 2), np.int16))
    finally:
        os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600


# ---------------------------------------------------------------------------------------------
# Writing errors


def test_unknown_write_suffix(tmp_path: Path) -> None:
    with pytest.raises(AudioFileError, match=r"\.wav") as caught:
        write_audio(tmp_path / "x.mp3", np.zeros((10, 2), np.int16))
    _assert_one_sentence(caught.value, "x.mp3")
    assert dir_names(tmp_path) == []


def test_format_and_suffix_must_agree(tmp_path: Path) -> None:
    with pytest.raises(AudioFileError, match=r"\.flac") as caught:
        write_audio(tmp_path / "x.wav", np.zeros((10, 2), np.int16), "flac")
    _assert_one_sentence(caught.value, "x.wav")
    with pytest.raises(AudioFileError, match="wav16"):
        write_audio(tmp_path / "x.wav", np.zeros((10, 2), np.int16), "mp3")


def test_write_into_missing_folder(tmp_path: Path) -> None:
    target = tmp_path / "gone" / "x.wav"
    with pytest.raises(AudioFileError, match="folder .* does not exist") as caught:
        write_audio(target, np.zeros((10, 2), np.int16))
    _assert_one_sentence(caught.value, "x.wav")
    assert not target.parent.exists()


def test_write_rejects_bad_arrays(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        write_audio(tmp_path / "x.wav", np.zeros(10, np.int16))
    mono = write_audio(tmp_path / "m.wav", np.zeros((10, 1), np.int16))  # a mono delivery
    assert sf.info(mono).channels == 1
    mono.unlink()
    with pytest.raises(ValueError):
        write_audio(tmp_path / "x.wav", np.zeros((0, 2), np.int16))
    with pytest.raises(TypeError, match="pcm16_from_int32"):
        write_audio(tmp_path / "x.wav", np.zeros((10, 2), np.int32))
    assert dir_names(tmp_path) == []


def _existing_take(tmp_path: Path) -> tuple[Path, bytes]:
    target = tmp_path / "take.wav"
    write_audio(target, np.full((100, 2), 1234, dtype=np.int16))
    return target, target.read_bytes()


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (OSError(errno.ENOSPC, "No space left on device"), "disk is full"),
        (OSError(errno.EACCES, "Permission denied"), "permission was denied"),
        (sf.LibsndfileError(3, "Error writing: "), "audio library reported"),
        (RuntimeError("boom"), "boom"),
    ],
)
def test_failed_write_leaves_target_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raised: Exception, expected: str
) -> None:
    target, before = _existing_take(tmp_path)

    def failing_write(file, *args, **kwargs) -> None:
        # a partial file, as a real failure leaves
        Path(os.fsdecode(file)).write_bytes(b"half a header")
        raise raised

    monkeypatch.setattr(writer_module, "_write_samples", failing_write)
    with pytest.raises(AudioFileError, match=expected) as caught:
        write_audio(target, np.zeros((10, 2), np.int16))
    _assert_one_sentence(caught.value, "take.wav")
    assert caught.value.__cause__ is raised
    assert target.read_bytes() == before
    assert dir_names(tmp_path) == ["take.wav"]


def test_short_write_is_caught_before_replacing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target, before = _existing_take(tmp_path)
    real_write = writer_module._write_samples

    def truncating_write(file, data, *args, **kwargs) -> None:
        real_write(file, data[: len(data) // 2], *args, **kwargs)

    monkeypatch.setattr(writer_module, "_write_samples", truncating_write)
    with pytest.raises(AudioFileError, match="disk is full"):
        write_audio(target, np.zeros((10, 2), np.int16))
    assert target.read_bytes() == before
    assert dir_names(tmp_path) == ["take.wav"]


def test_replace_failure_cleans_up(tmp_path: Path) -> None:
    blocker = tmp_path / "take.wav"
    blocker.mkdir()  # os.replace cannot put a file over a folder
    with pytest.raises(AudioFileError, match="folder with that name") as caught:
        write_audio(blocker, np.zeros((10, 2), np.int16))
    _assert_one_sentence(caught.value, "take.wav")
    assert blocker.is_dir()
    assert dir_names(tmp_path) == ["take.wav"]


def test_interrupt_cleans_up_and_is_not_reworded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args, **kwargs) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(writer_module, "_write_samples", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_audio(tmp_path / "x.wav", np.zeros((10, 2), np.int16))
    assert dir_names(tmp_path) == []


def test_temp_file_is_hidden_and_beside_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Path] = []
    real_write = writer_module._write_samples

    def spying_write(file, *args, **kwargs) -> None:
        seen.append(Path(os.fsdecode(file)))
        real_write(file, *args, **kwargs)

    monkeypatch.setattr(writer_module, "_write_samples", spying_write)
    write_audio(tmp_path / "x.flac", np.zeros((10, 2), np.int16))
    assert len(seen) == 1
    assert seen[0].parent == tmp_path
    assert seen[0].name.startswith(".") and seen[0].suffix == ".flac"
    assert dir_names(tmp_path) == ["x.flac"]


def test_module_stays_out_of_the_gui_layer() -> None:
    for module in Path(audio_io.__file__).parent.glob("*.py"):  # every module of the package
        source = module.read_text()
        for banned in ("import PySide", "from PySide", "sounddevice", "print("):
            assert banned not in source, module.name
