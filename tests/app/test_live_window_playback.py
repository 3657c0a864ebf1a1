"""The player's crossfading swap that live audition plays each render with (app.common.playback
and app.common.audio_blocks): same position, equal-power crossfade, no click, no allocation in
the audio callback, and the first-sample time the latency readout reports. The callback is
driven block by block through a fake stream, as tests/test_playback.py does."""

from __future__ import annotations

import math
import time
import tracemalloc

import numpy as np
import pytest

from app.common.playback import Player

RATE = 44100
FADE_MS = 20.0
FADE = round(FADE_MS * RATE / 1000)  # 882 frames


class PulledStream:
    def __init__(self, *, callback, channels, **_ignored) -> None:
        self.callback = callback
        self.channels = channels

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    close = stop

    def pull(self, frames: int) -> np.ndarray:
        out = np.full((frames, self.channels), np.nan, dtype=np.float32)  # NaN: never written
        self.callback(out, frames, None, None)
        return out


@pytest.fixture
def player() -> tuple[Player, list[PulledStream]]:
    streams: list[PulledStream] = []

    def factory(**kwargs) -> PulledStream:
        streams.append(PulledStream(**kwargs))
        return streams[-1]

    return Player(samplerate=RATE, stream_factory=factory), streams


def tone(frequency: float, frames: int, level: float = 0.5) -> np.ndarray:
    t = np.arange(frames) / RATE
    mono = level * np.sin(2 * math.pi * frequency * t)
    return np.stack([mono, mono], axis=1).astype(np.float32)


def ramp(frames: int, offset: float = 0.0) -> np.ndarray:
    return (np.arange(frames * 2, dtype=np.float32).reshape(frames, 2) / 65536.0 + offset)


def equal_power_gains(frames: int) -> tuple[np.ndarray, np.ndarray]:
    """The oracle: sin rising, cos falling, sampled at the middle of each frame."""
    angle = (np.arange(frames) + 0.5) / frames * (math.pi / 2)
    return np.sin(angle), np.cos(angle)


def test_crossfade_keeps_the_position_and_mixes_with_equal_power(player) -> None:
    p, streams = player
    old, new = ramp(20000), ramp(20000, offset=0.25)
    p.load(old)
    p.play()
    for _ in range(4):
        streams[0].pull(512)
    at = 4 * 512
    p.crossfade_to(new, FADE_MS)
    assert p.position_seconds == at / RATE  # no restart
    mixed = np.concatenate([streams[0].pull(512) for _ in range(3)])  # 1536 frames > FADE
    rising, falling = equal_power_gains(FADE)
    expected = old[at:at + FADE] * falling[:, None] + new[at:at + FADE] * rising[:, None]
    np.testing.assert_allclose(mixed[:FADE], expected, rtol=0, atol=2e-6)
    np.testing.assert_array_equal(mixed[FADE:], new[at + FADE:at + 1536])  # then only the new
    assert np.allclose(rising ** 2 + falling ** 2, 1.0)


def test_a_crossfade_between_two_tones_has_no_click(player) -> None:
    p, streams = player
    a = tone(220.0, RATE)
    p.load(a)
    p.play()
    for _ in range(7):
        streams[0].pull(512)
    at = 7 * 512
    # The new take is the old one upside down: switching at once would jump by 2|a|, a click.
    assert 2 * abs(a[at, 0]) > 0.1
    p.crossfade_to(-a)
    around = np.concatenate([streams[0].pull(512) for _ in range(4)])
    # a 220 Hz tone at 0.5 moves at most 2*pi*220/44100*0.5 = 0.016 per sample by itself
    assert np.abs(np.diff(around[:, 0])).max() < 0.03
    np.testing.assert_array_equal(around[FADE:], -a[at + FADE:at + 2048])


def test_looping_wraps_the_position_into_a_shorter_take(player) -> None:
    p, streams = player
    p.loop = True
    p.load(ramp(30000))
    p.play()
    for _ in range(40):  # 20480 frames in
        streams[0].pull(512)
    short = ramp(8000, offset=0.5)
    p.crossfade_to(short)
    block = streams[0].pull(2048)
    start = 20480 % 8000
    np.testing.assert_array_equal(block[FADE:], short[start + FADE:start + 2048])
    assert p.playing


def test_first_sample_time_is_reported_once_the_render_is_played(player) -> None:
    p, streams = player
    p.load(ramp(5000))
    p.play()
    streams[0].pull(256)
    stale = p.crossfade_to(ramp(5000, 0.1))
    newest = p.crossfade_to(ramp(5000, 0.2))  # replaced before the callback ran
    assert p.first_sample_at(newest) is None
    before = time.perf_counter()
    streams[0].pull(256)
    after = time.perf_counter()
    heard = p.first_sample_at(newest)
    assert heard is not None and before <= heard <= after
    assert p.first_sample_at(stale) is None  # never played
    streams[0].pull(256)
    assert p.first_sample_at(newest) == heard  # the first block's time, not a later one


def test_a_paused_player_changes_take_without_a_fade_and_reports_nothing(player) -> None:
    p, streams = player
    p.load(ramp(5000))
    p.play()
    streams[0].pull(512)
    p.pause()
    serial = p.crossfade_to(ramp(5000, 0.3))
    assert not streams[0].pull(512).any() and p.first_sample_at(serial) is None
    p.play()
    np.testing.assert_array_equal(streams[0].pull(512), ramp(5000, 0.3)[512:1024])
    assert p.first_sample_at(serial) is not None


def test_a_seek_during_a_crossfade_ends_it(player) -> None:
    p, streams = player
    p.load(ramp(10000))
    p.play()
    streams[0].pull(512)
    new = ramp(10000, 0.4)
    p.crossfade_to(new)
    streams[0].pull(256)  # fading
    p.seek(0.0)
    np.testing.assert_array_equal(streams[0].pull(512), new[:512])


def test_the_callback_allocates_no_sample_buffers_while_crossfading(player) -> None:
    p, streams = player
    frames = 4096
    p.loop = True
    p.volume = 0.7
    p.load(ramp(10007))
    p.play()
    callback = streams[0].callback
    out = np.zeros((frames, 2), dtype=np.float32)
    callback(out, frames, None, None)
    growth = []
    for i in range(1, 9):
        p.crossfade_to(ramp(9001, 0.1 * i))  # the GUI side converts: not measured
        tracemalloc.start()
        try:
            before, _ = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            for _ in range(3):  # the switch, the fade and plain blocks after it
                callback(out, frames, None, None)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        growth.append(peak - before)
    assert p.playing
    block_bytes = frames * 2 * 4
    assert max(growth) < 4096, f"callback peak allocation {max(growth)} B (a block: {block_bytes})"
