"""app.common.playback: the callback's exact output driven through a fake stream, the no-device
paths with sounddevice patched, and one run through the real default output when there is one."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable

import numpy as np
import pytest
import sounddevice as sd

from app.common import output_device
from app.common.playback import PlaybackUnavailable, Player, find_output_device

RATE = 44100


class FakeStream:
    """Stands in for sd.OutputStream: records its arguments; `pull` runs one callback block."""

    def __init__(self, *, samplerate, channels, dtype, blocksize, device, callback) -> None:
        self.kwargs = dict(samplerate=samplerate, channels=channels, dtype=dtype,
                           blocksize=blocksize, device=device)
        self.callback = callback
        self.started = False
        self.closed = False

    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        self.started = False

    def close(self) -> None:
        self.closed = True

    def pull(self, frames: int) -> np.ndarray:
        # NaN marks any sample the callback forgot to write.
        outdata = np.full((frames, self.kwargs["channels"]), np.nan, dtype=np.float32)
        self.callback(outdata, frames, None, sd.CallbackFlags())
        return outdata


def ramp(frames: int) -> np.ndarray:
    """Stereo float32 take whose samples are all different and exactly representable."""
    return (np.arange(frames * 2, dtype=np.float32).reshape(frames, 2) / 65536.0).astype(
        np.float32
    )


@pytest.fixture
def fake() -> Callable[..., tuple[Player, list[FakeStream]]]:
    """make(blocksize=512) -> (player, streams the player opened)."""

    def make(blocksize: int = 512) -> tuple[Player, list[FakeStream]]:
        streams: list[FakeStream] = []

        def factory(**kwargs) -> FakeStream:
            streams.append(FakeStream(**kwargs))
            return streams[-1]

        return Player(samplerate=RATE, blocksize=blocksize, stream_factory=factory), streams

    return make


def test_stream_opens_lazily_once_with_outputstream_arguments(fake) -> None:
    player, streams = fake(blocksize=256)
    player.load(ramp(1000))
    assert streams == [] and not player.playing
    player.play()
    player.pause()
    player.play()
    assert len(streams) == 1 and streams[0].started
    assert streams[0].kwargs == dict(samplerate=RATE, channels=2, dtype="float32",
                                     blocksize=256, device=None)
    player.close()
    player.close()  # idempotent
    assert streams[0].closed and not streams[0].started and not player.playing


def test_playing_copies_samples_times_volume(fake) -> None:
    player, streams = fake()
    audio = ramp(2000)
    player.load(audio)
    player.volume = 0.3
    player.play()
    first = streams[0].pull(512)
    second = streams[0].pull(300)
    np.testing.assert_array_equal(first, audio[:512] * np.float32(0.3))
    np.testing.assert_array_equal(second, audio[512:812] * np.float32(0.3))
    assert player.position_seconds == 812 / RATE
    assert player.playing


def test_volume_is_clamped() -> None:
    player = Player(stream_factory=FakeStream)
    player.volume = 1.5
    assert player.volume == 1.0
    player.volume = -2
    assert player.volume == 0.0
    player.volume = float("nan")
    assert player.volume == 0.0
    player.volume = 0.25
    assert player.volume == 0.25


def test_loop_wraps_exactly_at_the_end(fake) -> None:
    player, streams = fake()
    audio = ramp(1000)
    player.load(audio)
    player.loop = True
    player.play()
    streams[0].pull(512)
    block = streams[0].pull(512)
    np.testing.assert_array_equal(block[:488], audio[512:1000])
    np.testing.assert_array_equal(block[488:], audio[:24])
    assert player.position_seconds == 24 / RATE and player.playing


def test_loop_of_a_take_shorter_than_a_block_repeats_it(fake) -> None:
    player, streams = fake()
    audio = ramp(100)
    player.load(audio)
    player.loop = True
    player.play()
    block = streams[0].pull(512)
    np.testing.assert_array_equal(block, np.tile(audio, (6, 1))[:512])
    assert player.position_seconds == 12 / RATE and player.playing


def test_end_without_loop_zero_fills_stops_and_next_play_restarts(fake) -> None:
    player, streams = fake()
    audio = ramp(700)
    player.load(audio)
    player.play()
    streams[0].pull(512)
    block = streams[0].pull(512)
    np.testing.assert_array_equal(block[:188], audio[512:700])
    assert not block[188:].any()
    assert not player.playing
    assert player.position_seconds == player.duration_seconds == 700 / RATE
    assert not streams[0].pull(512).any()  # stays silent and stays at the end
    assert player.position_seconds == 700 / RATE
    player.play()
    np.testing.assert_array_equal(streams[0].pull(512), audio[:512])


def test_take_ending_on_a_block_boundary_stops_in_that_block(fake) -> None:
    player, streams = fake()
    audio = ramp(1024)
    player.load(audio)
    player.play()
    streams[0].pull(512)
    np.testing.assert_array_equal(streams[0].pull(512), audio[512:])
    assert not player.playing and player.position_seconds == player.duration_seconds


def test_pause_outputs_silence_and_holds_the_cursor(fake) -> None:
    player, streams = fake()
    audio = ramp(5000)
    player.load(audio)
    player.play()
    streams[0].pull(512)
    player.pause()
    for _ in range(3):
        block = streams[0].pull(512)
        assert not block.any() and not np.isnan(block).any()
    assert player.position_seconds == 512 / RATE
    assert player.toggle() is True
    np.testing.assert_array_equal(streams[0].pull(512), audio[512:1024])
    assert player.toggle() is False
    player.stop()
    assert player.position_seconds == 0.0 and not player.playing


def test_seek_is_clamped_and_applied_at_the_next_block(fake) -> None:
    player, streams = fake()
    audio = ramp(RATE)  # 1 s
    player.load(audio)
    player.seek(0.5)
    assert player.position_seconds == 0.5  # before any stream exists
    player.play()
    np.testing.assert_array_equal(streams[0].pull(512), audio[22050:22562])
    player.seek(0.25)  # while playing
    assert player.position_seconds == 0.25
    np.testing.assert_array_equal(streams[0].pull(512), audio[11025:11537])
    player.seek(5.0)
    assert player.position_seconds == 1.0
    player.seek(-1.0)
    assert player.position_seconds == 0.0
    player.seek(float("nan"))
    assert player.position_seconds == 0.0


def test_load_keeps_the_position_clamped_or_resets_it(fake) -> None:
    player, streams = fake()
    take_a, take_b, take_c = ramp(20000), ramp(15000) + 1, ramp(5000) + 2
    player.load(take_a)
    player.play()
    for _ in range(16):
        streams[0].pull(512)
    assert player.position_seconds == 8192 / RATE
    player.load(take_b)  # keep_position defaults to True: instant A/B while playing
    assert player.position_seconds == 8192 / RATE and player.duration_seconds == 15000 / RATE
    np.testing.assert_array_equal(streams[0].pull(512), take_b[8192:8704])
    player.load(take_c)  # shorter than the position: clamped to its end
    assert player.position_seconds == 5000 / RATE
    assert not streams[0].pull(512).any() and not player.playing
    player.load(take_a, keep_position=False)
    assert player.position_seconds == 0.0
    player.play()
    np.testing.assert_array_equal(streams[0].pull(512), take_a[:512])


def test_load_converts_once_into_a_new_float32_array(fake) -> None:
    player, _ = fake()
    source = ramp(100).astype(np.float64)
    player.load(source)
    first = player._audio
    assert first.dtype == np.float32 and first.flags.c_contiguous and first.shape == (100, 2)
    source[:] = 9.0  # the caller's array is not shared
    assert first.max() < 1.0
    player.load(ramp(100))
    assert player._audio is not first  # the array a running callback holds is never rewritten
    np.testing.assert_array_equal(first, ramp(100))


def test_int16_scales_by_1_over_32768(fake) -> None:
    player, streams = fake()
    pcm = np.array([[-32768, 32767], [16384, -16384], [1, 0]], dtype=np.int16)
    player.load(pcm)
    player.play()
    block = streams[0].pull(3)
    expected = np.array([[-1.0, 32767 / 32768], [0.5, -0.5], [1 / 32768, 0.0]], dtype=np.float32)
    np.testing.assert_array_equal(block, expected)


def test_mono_plays_on_both_channels_and_bad_shapes_are_refused(fake) -> None:
    player, streams = fake()
    mono = np.array([1000, -2000, 3000], dtype=np.int16)
    player.load(mono)
    player.play()
    np.testing.assert_array_equal(streams[0].pull(3), np.repeat(mono[:, None] / 32768, 2, axis=1))
    with pytest.raises(ValueError):
        player.load(np.zeros((10, 3), dtype=np.float32))
    with pytest.raises(ValueError):
        player.load(np.zeros((10, 2), dtype=np.int32))


def test_play_without_a_take_does_nothing(fake) -> None:
    player, streams = fake()
    player.play()
    assert not player.playing and streams == []
    assert player.toggle() is False


def _callback_allocation(callback, outdata: np.ndarray, calls: int) -> tuple[int, int]:
    """(peak growth, retained growth) in bytes that tracemalloc sees over `calls` blocks."""
    frames = outdata.shape[0]
    callback(outdata, frames, None, None)  # warm up caches outside the measurement
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        for _ in range(calls):
            callback(outdata, frames, None, None)
        after, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before, after - before


def test_callback_does_not_allocate_sample_buffers(fake) -> None:
    frames = 4096
    block_bytes = frames * 2 * 4  # one block of stereo float32 = 32 KiB
    player, streams = fake(blocksize=frames)
    audio = ramp(10007)  # not a multiple of the block: every few blocks wraps mid-block
    player.load(audio)
    player.loop = True
    player.volume = 0.7
    player.play()
    outdata = np.zeros((frames, 2), dtype=np.float32)

    # The probe must see numpy's buffers, or the real check below would pass vacuously.
    def allocating_callback(out, n, time_info, status):
        out[:] = audio[:n] * 0.7

    peak, _ = _callback_allocation(allocating_callback, outdata, 10)
    assert peak >= block_bytes

    peak, retained = _callback_allocation(streams[0].callback, outdata, 2000)
    assert player.playing
    assert peak < 4096, f"callback peak allocation {peak} B (one block is {block_bytes} B)"
    assert retained < 1024, f"callback retained {retained} B over 2000 blocks"


# -- no device -------------------------------------------------------------------------------


def _assert_one_sentence(reason: str | None) -> None:
    assert reason is not None
    assert reason.startswith("No audio output device was found (")
    assert reason.endswith("; playback is off, everything else works.")
    assert reason.count(". ") == 0 and "\n" not in reason


def _assert_everything_else_works(player: Player) -> None:
    player.load(ramp(RATE))
    player.seek(0.5)
    assert player.position_seconds == 0.5 and player.duration_seconds == 1.0
    player.volume = 0.5
    player.loop = True
    player.pause()
    player.stop()
    assert player.position_seconds == 0.0 and not player.playing
    player.close()


def _output_device(index: int, outputs: int) -> dict:
    return dict(name=f"device {index}", index=index, hostapi=0, max_input_channels=2,
                max_output_channels=outputs, default_samplerate=44100.0)


def test_constructing_and_loading_never_touch_audio_devices(monkeypatch) -> None:
    def must_not_run(*args, **kwargs):
        raise AssertionError("audio devices were queried")

    monkeypatch.setattr(sd, "query_devices", must_not_run)
    monkeypatch.setattr(sd, "OutputStream", must_not_run)
    player = Player()
    player.load(ramp(1000))
    player.seek(0.01)
    player.volume = 0.5
    player.stop()
    player.close()


def test_portaudio_error_makes_playback_unavailable(monkeypatch) -> None:
    def broken(*args, **kwargs):
        raise sd.PortAudioError("Error querying device -1")

    monkeypatch.setattr(sd, "query_devices", broken)
    player = Player()
    assert player.available is False
    _assert_one_sentence(player.unavailable_reason)
    assert "Error querying device -1" in player.unavailable_reason
    player.load(ramp(1000))
    with pytest.raises(PlaybackUnavailable) as raised:
        player.play()
    assert str(raised.value) == player.unavailable_reason
    with pytest.raises(PlaybackUnavailable):
        player.toggle()
    assert not player.playing
    _assert_everything_else_works(player)


def test_no_output_devices_makes_playback_unavailable(monkeypatch) -> None:
    opened = []

    def input_only(device=None, kind=None):
        if device is None and kind is None:
            return sd.DeviceList([_output_device(0, outputs=0)])
        raise sd.PortAudioError("Error querying device -1")

    monkeypatch.setattr(sd, "query_devices", input_only)
    monkeypatch.setattr(sd, "OutputStream", lambda **kwargs: opened.append(kwargs))
    assert find_output_device() == (None, output_device.NO_DEVICE.format(
        detail="the system lists no output devices"))
    player = Player()
    assert not player.available
    _assert_one_sentence(player.unavailable_reason)
    player.load(ramp(1000))
    with pytest.raises(PlaybackUnavailable):
        player.play()
    assert opened == []
    _assert_everything_else_works(player)


def test_missing_portaudio_library_makes_playback_unavailable(monkeypatch) -> None:
    def missing():
        raise OSError("PortAudio library not found")

    monkeypatch.setattr(output_device, "import_sounddevice", missing)
    player = Player()
    assert not player.available
    _assert_one_sentence(player.unavailable_reason)
    assert "PortAudio library not found" in player.unavailable_reason
    player.load(ramp(1000))
    with pytest.raises(PlaybackUnavailable):
        player.play()
    _assert_everything_else_works(player)


def test_default_output_or_first_output_is_chosen(monkeypatch) -> None:
    devices = sd.DeviceList([_output_device(0, outputs=0), _output_device(1, outputs=2),
                             _output_device(2, outputs=2)])
    default = {"value": 2}

    def query(device=None, kind=None):
        if device is None and kind is None:
            return devices
        index = default["value"] if device is None else device
        if index < 0:
            raise sd.PortAudioError(f"Error querying device {index}")
        return devices[index]

    monkeypatch.setattr(sd, "query_devices", query)
    assert find_output_device() == (2, None)
    default["value"] = -1  # outputs exist but none is the default
    assert find_output_device() == (1, None)
    assert find_output_device(2) == (2, None)


def test_stream_that_fails_to_open_makes_playback_unavailable() -> None:
    attempts = []

    def refusing(**kwargs):
        attempts.append(kwargs)
        raise sd.PortAudioError(
            "Error opening OutputStream: Device unavailable [PaErrorCode -9985]"
        )

    player = Player(stream_factory=refusing)
    assert player.available
    player.load(ramp(1000))
    with pytest.raises(PlaybackUnavailable) as raised:
        player.play()
    message = str(raised.value)
    assert message.startswith("The audio output could not be opened (")
    assert message.endswith("; playback is off, everything else works.")
    assert "Device unavailable" in message and "\n" not in message
    assert not player.available and player.unavailable_reason == message
    with pytest.raises(PlaybackUnavailable):
        player.play()
    assert len(attempts) == 1  # a failed device is not retried on every key press
    _assert_everything_else_works(player)


# -- a real output device ----------------------------------------------------------------------


def _wait_until_stopped(player: Player, timeout: float) -> list[tuple[float, float]]:
    """(seconds since the call, position) every few ms until `playing` turns False."""
    start = time.monotonic()
    samples = []
    while player.playing and time.monotonic() - start < timeout:
        samples.append((time.monotonic() - start, player.position_seconds))
        time.sleep(0.005)
    assert not player.playing, f"the take did not end within {timeout} s"
    samples.append((time.monotonic() - start, player.position_seconds))
    return samples


def test_real_default_output_plays_a_tone_in_real_time() -> None:
    device, reason = find_output_device()
    if device is None:
        pytest.skip(f"needs an audio output device: {reason}")
    player = Player()
    t = np.arange(RATE // 2) / RATE
    tone = (0.1 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    try:
        # Warm-up take: a fresh PulseAudio null sink starts consuming only when its idle timer
        # (up to its 2 s idle latency) fires. The stream then stays open, as in the app.
        player.load(np.zeros((RATE // 10, 2), dtype=np.float32))
        player.play()
        _wait_until_stopped(player, timeout=5.0)

        player.load(np.stack([tone, tone], axis=1), keep_position=False)
        player.play()
        samples = _wait_until_stopped(player, timeout=3.0)
    finally:
        player.close()
    assert not player.playing and player.position_seconds == player.duration_seconds == 0.5
    # The position is what the callback handed over, so it runs ahead of the wall clock by the
    # output latency (tens of ms), but never by a whole block of wall time.
    at_04 = max(position for elapsed, position in samples if elapsed <= 0.4)
    assert at_04 > 0.2, f"position {at_04:.3f} s after 0.4 s of wall time"
    at_02 = max(position for elapsed, position in samples if elapsed <= 0.2)
    assert at_02 < 0.35, f"position {at_02:.3f} s after only 0.2 s: faster than real time"
    ended = samples[-1][0]
    assert 0.3 < ended < 2.0, f"0.5 s of audio ended after {ended:.3f} s"
