"""Output format (engines.finish.output_format): circular resampling, mono fold-down, TPDF
dither, and every file format read back by soundfile (audio), wavinfo (smpl) and our Vorbis
comment reader (loop tags)."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import wavinfo

from engines.delivery import riff
from engines.delivery.writer import FileTags, write_audio
from engines.errors import AudioFileError
from engines.finish import output_format, vorbis_comments
from engines.finish.output_format import (
    delivery_tags,
    fold_to_mono,
    read_loop_tags,
    resample,
    tpdf_dither_to_int16,
)
from engines.finish.seam_metrics import seam_test


def write_delivery(path, audio, rate, fmt, loop_points=None, note=None, title=None):
    """The delivery writer as the finishing chain's files use it."""
    return write_audio(path, audio, fmt, rate, loop_points=loop_points,
                       tags=FileTags(title=title, comment=note))


NOTE = '{"app":"SA3 Studio","finish":{"loudness_lufs":-24.0}}'


def _noise(frames: int, channels: int = 2, seed: int = 0, level: float = 0.2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((frames, channels)) * level).astype(np.float32)


def _tones(frames: int, channels: int, rate: int) -> np.ndarray:
    """Steady tones with a little noise: content a perceptual codec keeps."""
    t = np.arange(frames)[:, None] / rate
    freqs = np.array([220.0, 331.0])[:channels][None, :]
    audio = 0.3 * np.sin(2 * np.pi * freqs * t) + 0.1 * np.sin(2 * np.pi * 3 * freqs * t)
    return (audio + _noise(frames, channels, level=0.01)).astype(np.float32)


def _loop_sine(frames: int, cycles: int) -> np.ndarray:
    t = np.arange(frames) / frames
    return np.stack([np.sin(2 * np.pi * cycles * t), 0.5 * np.cos(2 * np.pi * cycles * t)],
                    axis=1).astype(np.float32)


# --------------------------------------------------------------------------------------------
# Resampling


@pytest.mark.parametrize("frames", [44100, 44100 * 2 + 37])  # N * 48000 / 44100: whole, not
def test_circular_resampling_keeps_the_period_exactly(frames: int) -> None:
    """A loop of whole sine cycles is still whole cycles in round(N * to / from) frames, up to
    the wrap, where plain resampling bends it."""
    cycles = 441
    loop = _loop_sine(frames, cycles)
    out = resample(loop, 44100, 48000, circular=True)
    m = round(frames * 48000 / 44100)
    assert out.shape == (m, 2) and out.dtype == np.float32 and out.flags.c_contiguous
    # The cut starts at round(pad * M / N): exact for 44100 frames (whole 147-frame steps),
    # up to half a sample late otherwise.
    pad = output_format.circular_pad_frames(frames, m)
    delay = round(pad * m / frames) - pad * m / frames
    assert (delay == 0) == (frames == 44100)
    t = (np.arange(m) + delay) / m
    expected = np.stack([np.sin(2 * np.pi * cycles * t), 0.5 * np.cos(2 * np.pi * cycles * t)],
                        axis=1)
    err = np.abs(out - expected)
    assert err.max() < 1e-3  # everywhere, the wrap included
    plain = resample(loop, 44100, 48000)
    assert plain.shape == (m, 2)
    edge_error = max(np.abs(plain[:8] - expected[:8]).max(), np.abs(plain[-8:] - expected[-8:])
                     .max())
    assert edge_error > 30 * err[:8].max()


def test_same_rate_and_mono_pass_through() -> None:
    mono = _noise(1000, 1)
    np.testing.assert_array_equal(resample(mono, 48000, 48000, circular=True), mono)
    assert resample(mono, 48000, 44100, circular=True).shape == (919, 1)
    with pytest.raises(ValueError, match=r"\(N, 1\) or \(N, 2\)"):
        resample(np.zeros(10, np.float32), 44100, 48000)


def test_short_loops_resample_circularly_too() -> None:
    """A loop shorter than the padding is tiled, not zero padded."""
    loop = _loop_sine(441, 3)  # 10 ms
    out = resample(loop, 44100, 48000, circular=True)
    assert out.shape == (480, 2)
    view = np.concatenate([out[-5:], out[:5]])
    assert np.abs(np.diff(view[:, 0])).max() < 2 * np.abs(np.diff(out[:, 0])).max()


def test_circular_48k_noise_loop_stays_seamless() -> None:
    loop = _noise(3 * 44100)
    out = resample(loop, 44100, 48000, circular=True)
    assert seam_test(out, 48000).passed


# --------------------------------------------------------------------------------------------
# Channels and bit depth


def test_fold_to_mono_keeps_centred_content_and_never_clips() -> None:
    centred = np.repeat(_noise(1000, 1, level=0.5), 2, axis=1)
    mono = fold_to_mono(centred)
    assert mono.shape == (1000, 1) and mono.dtype == np.float32
    np.testing.assert_allclose(mono[:, 0], centred[:, 0], atol=1e-7)
    opposite = np.stack([centred[:, 0], -centred[:, 0]], axis=1)
    assert np.abs(fold_to_mono(opposite)).max() < 1e-7
    full = np.ones((10, 2), np.float32)
    full[:, 1] = 0.25
    assert fold_to_mono(full).max() <= 1.0
    wide = _noise(200_000, 2, seed=3)  # uncorrelated: -3 dB
    ratio = np.mean(fold_to_mono(wide) ** 2) / np.mean(wide**2)
    assert abs(10 * np.log10(ratio) + 3.01) < 0.1
    assert fold_to_mono(mono).shape == (1000, 1)


def test_tpdf_dither_error_is_zero_mean_bounded_and_signal_independent() -> None:
    rng = np.random.default_rng(5)
    x = rng.uniform(-0.9, 0.9, (200_000, 2))
    out = tpdf_dither_to_int16(x, 1)
    assert out.dtype == np.int16
    err = out.astype(np.float64) - x * 32767
    assert abs(err.mean()) < 0.01
    assert np.abs(err).max() <= 1.5 + 1e-9
    assert abs(err.var() - 0.25) < 0.01  # TPDF 1/6 plus rounding 1/12 LSB^2
    # Signal independent: a constant sitting half way between two codes gets the same error
    # power as one sitting on a code (plain rounding would give 0.25 and 0).
    for offset in (0.0, 0.5):
        held = np.full((100_000, 1), (1000 + offset) / 32767)
        e = tpdf_dither_to_int16(held, 2).astype(np.float64) - (1000 + offset)
        assert abs(e.mean()) < 0.01 and abs(e.var() - 0.25) < 0.01
    np.testing.assert_array_equal(tpdf_dither_to_int16(x, 1), out)  # seeded: reproducible
    assert not np.array_equal(tpdf_dither_to_int16(x, 2), out)


def test_tpdf_dither_keeps_a_sub_lsb_tone_and_clamps_full_scale() -> None:
    t = np.arange(441_000) / 44100
    tone = (0.4 / 32767) * np.sin(2 * np.pi * 1000 * t)[:, None]  # below half an LSB
    assert not np.any(np.rint(tone * 32767))  # plain rounding erases it
    dithered = tpdf_dither_to_int16(tone, 0)[:, 0].astype(np.float64)
    assert np.corrcoef(dithered, tone[:, 0])[0, 1] > 0.2  # dither keeps it, under noise
    loud = tpdf_dither_to_int16(np.array([[1.5, -1.5], [np.nan, np.inf]]), 0)
    assert loud[0].tolist() == [32767, -32767]  # overs clamp, never wrap
    assert abs(int(loud[1, 0])) <= 1 and 32766 <= loud[1, 1] <= 32767  # NaN: silence, inf: full


# --------------------------------------------------------------------------------------------
# Files

FORMATS = [("wav16", ".wav", "PCM_16", "WAV"), ("wav24", ".wav", "PCM_24", "WAV"),
           ("wav32f", ".wav", "FLOAT", "WAV"), ("flac", ".flac", "PCM_24", "FLAC"),
           ("ogg", ".ogg", "VORBIS", "OGG")]


@pytest.mark.parametrize(("fmt", "suffix", "subtype", "container"), FORMATS)
@pytest.mark.parametrize("channels", [1, 2])
@pytest.mark.parametrize("rate", [44100, 48000])
def test_every_format_writes_and_reads_back(tmp_path: Path, fmt: str, suffix: str,
                                            subtype: str, container: str, channels: int,
                                            rate: int) -> None:
    audio = _tones(rate, channels, rate)
    path = write_delivery(tmp_path / f"rain{suffix}", audio, rate, fmt, note=NOTE,
                          title="Rain")
    info = sf.info(str(path))
    assert (info.format, info.subtype, info.channels, info.samplerate, info.frames) == (
        container, subtype, channels, rate, rate)
    back, _ = sf.read(str(path), dtype="float64", always_2d=True)
    tolerance = {"wav16": 1.6 / 32767, "wav24": 1e-6, "wav32f": 0.0, "flac": 1e-6}
    if fmt in tolerance:
        # libsndfile reads N-bit codes as code / 2**(N-1); we wrote with full scale 2**(N-1)-1.
        scale = {"wav16": 32767 / 32768, "wav24": (2**23 - 1) / 2**23, "flac": 1 - 2**-23}
        np.testing.assert_allclose(back / scale.get(fmt, 1.0), audio, rtol=0,
                                   atol=tolerance[fmt] + 1e-7)
    else:  # Vorbis: lossy, but the same sound
        assert np.corrcoef(back[:, -1], audio[:, -1])[0, 1] > 0.99
    with sf.SoundFile(str(path)) as f:
        assert f.comment == NOTE and f.title == "Rain"
    assert read_loop_tags(path) is None
    assert not [p for p in tmp_path.iterdir() if p != path]  # no temporaries left


@pytest.mark.parametrize(("fmt", "suffix"), [(f[0], f[1]) for f in FORMATS])
def test_loop_points_land_where_game_engines_read_them(tmp_path: Path, fmt: str,
                                                       suffix: str) -> None:
    audio = _noise(48000, 2)
    plain = write_delivery(tmp_path / f"plain{suffix}", audio, 48000, fmt, note=NOTE)
    looped = write_delivery(tmp_path / f"loop{suffix}", audio, 48000, fmt,
                            loop_points=(0, 47999), note=NOTE, title="Rain loop")
    assert read_loop_tags(looped) == (0, 47999)
    if suffix == ".wav":
        reader = wavinfo.WavInfoReader(str(looped))
        loop = reader.smpl.sample_loops[0]
        assert (loop.start, loop.end, loop.loop_type, loop.repetition_count) == (0, 47999, 0, 0)
        assert reader.smpl.sample_period_ns == 20833
        assert reader.info.comment == NOTE and reader.info.title == "Rain loop"
    else:
        tags = delivery_tags(looped)
        assert tags["LOOPSTART"] == "0" and tags["LOOPLENGTH"] == "48000"
        assert tags["COMMENT"] == NOTE and tags["TITLE"] == "Rain loop"
    a, _ = sf.read(str(plain), dtype="float64")
    b, _ = sf.read(str(looped), dtype="float64")
    np.testing.assert_array_equal(a, b)  # the loop tags never touch the audio


def _ogg_crc_reference(page: bytes) -> int:
    crc = 0
    for byte in page:
        crc ^= byte << 24
        for _ in range(8):
            crc = ((crc << 1) ^ 0x04C11DB7) if crc & 0x80000000 else crc << 1
            crc &= 0xFFFFFFFF
    return crc


def _ogg_pages(data: bytes) -> list[tuple[int, int, bytes]]:
    """(sequence number, stored crc, page with the crc zeroed) of every page."""
    pages, pos = [], 0
    while pos < len(data):
        count = data[pos + 26]
        end = pos + 27 + count + sum(data[pos + 27:pos + 27 + count])
        page = bytearray(data[pos:end])
        crc = struct.unpack_from("<I", page, 22)[0]
        page[22:26] = b"\0\0\0\0"
        pages.append((struct.unpack_from("<I", page, 18)[0], crc, bytes(page)))
        pos = end
    return pages


def test_ogg_comment_rewrite_repages_and_keeps_every_page_valid(tmp_path: Path) -> None:
    """A comment too big for one page pushes the setup header onto new pages: later pages are
    renumbered, every CRC (checked against a bit-by-bit reference) is right, and libvorbis
    decodes the same samples."""
    path = write_delivery(tmp_path / "long.ogg", _noise(5 * 44100), 44100, "ogg")
    before = path.read_bytes()
    big = {"LOOPSTART": "0", "LOOPLENGTH": "220500", "DESCRIPTION": "x" * 70_000}
    after = vorbis_comments.ogg_with_tags(before, big)
    pages = _ogg_pages(after)
    assert len(pages) > len(_ogg_pages(before))
    assert [seq for seq, _, _ in pages] == list(range(len(pages)))
    for _, crc, page in pages:
        assert crc == _ogg_crc_reference(page)
    rewritten = tmp_path / "rewritten.ogg"
    rewritten.write_bytes(after)
    np.testing.assert_array_equal(sf.read(str(rewritten))[0], sf.read(str(path))[0])
    assert vorbis_comments.ogg_tags(after)["DESCRIPTION"] == "x" * 70_000
    for _, crc, page in _ogg_pages(before):  # and libsndfile's own pages check out too
        assert crc == vorbis_comments.ogg_crc(page)


def test_flac_tags_replace_old_values(tmp_path: Path) -> None:
    path = write_delivery(tmp_path / "a.flac", _noise(1000), 44100, "flac",
                          loop_points=(10, 509))
    data = vorbis_comments.flac_with_tags(path.read_bytes(), {"loopstart": "20"})
    tags = vorbis_comments.flac_tags(data)
    assert tags["LOOPSTART"] == "20" and tags["LOOPLENGTH"] == "500"


def test_refusals_are_one_sentence_and_leave_nothing(tmp_path: Path) -> None:
    audio = _noise(100)
    with pytest.raises(AudioFileError, match=r"'mp3' is not an export format; choose one of "
                                             r"wav16, wav24, wav32f, flac, ogg\.$"):
        write_delivery(tmp_path / "a.mp3", audio, 44100, "mp3")
    with pytest.raises(AudioFileError, match=r"the name must end in \.flac"):
        write_delivery(tmp_path / "a.wav", audio, 44100, "flac")
    with pytest.raises(AudioFileError, match=r"the loop 0\.\.100 lies outside its 100 frames"):
        write_delivery(tmp_path / "a.wav", audio, 44100, "wav24", loop_points=(0, 100))
    with pytest.raises(AudioFileError, match=r"does not exist; choose an existing folder\.$"):
        write_delivery(tmp_path / "nope" / "a.wav", audio, 44100, "wav24")
    assert list(tmp_path.iterdir()) == []


def test_a_failed_save_keeps_the_old_file_and_no_temporary(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    target = write_delivery(tmp_path / "rain.wav", _noise(100), 44100, "wav16")
    old = target.read_bytes()

    def full_disk(path: object, chunks: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(riff, "set_wav_chunks", full_disk)
    with pytest.raises(AudioFileError) as caught:
        write_delivery(target, _noise(200), 44100, "wav16", loop_points=(0, 199))
    message = str(caught.value)
    assert message.startswith("Could not save 'rain.wav'") and "the disk is full" in message
    assert message.endswith(".") and "\n" not in message
    assert target.read_bytes() == old
    assert os.listdir(tmp_path) == ["rain.wav"]


def test_int16_input_goes_into_wav16_bit_exactly(tmp_path: Path) -> None:
    pcm = np.random.default_rng(0).integers(-32767, 32768, (500, 2)).astype(np.int16)
    path = write_delivery(tmp_path / "a.wav", pcm, 44100, "wav16")
    np.testing.assert_array_equal(sf.read(str(path), dtype="int16")[0], pcm)
