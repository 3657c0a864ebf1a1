"""Building blocks of the player's audio path (app.common.playback), with no device and no Qt:
a take converted once to the float32 stereo the stream plays, what is playing (`Source`), and
what the audio callback needs to change takes without a click - copying a take's frames into
an output block (looping or not) and equal-power crossfade curves made once on the GUI thread,
with the scratch block the callback mixes in. Everything the callback calls here only copies
and multiplies into arrays made beforehand: no allocation of sample data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

CHANNELS = 2
# int16 PCM maps to float by 1/32768, as libsndfile does: -32768 becomes exactly -1.0 and every
# value keeps its exact power-of-two scaled float32 representation.
INT16_SCALE = 1.0 / 32768.0
CROSSFADE_MS = 20.0  # long enough to hide a jump in the waveform, short enough to feel instant
MAX_OUTPUT_LATENCY_S = 1.0  # a device reporting more than this reports nonsense: ignored


@dataclass(frozen=True)
class FadeCurves:
    """Gains for a crossfade of `frames` frames: `fade_in` rises as sin, `fade_out` falls as
    cos, so their powers sum to one at every frame (equal power: no dip in loudness between
    two different sounds). `scratch` holds the outgoing take's frames while they are mixed."""

    # float32 (frames, channels) each: one gain per sample, so mixing multiplies arrays of one
    # shape (numpy allocates a buffer for every broadcast multiply of (frames, 1) by (frames, 2))
    fade_in: np.ndarray
    fade_out: np.ndarray
    scratch: np.ndarray

    @property
    def frames(self) -> int:
        return self.fade_in.shape[0]


@dataclass(frozen=True, eq=False)
class Source:
    """What plays: the samples, the curves to crossfade into them (None: change at once) and
    a serial that counts every load (Player.first_sample_at)."""

    audio: np.ndarray  # float32 (N, 2)
    fade: FadeCurves | None
    serial: int


def float_stereo(audio: np.ndarray) -> np.ndarray:
    """`audio` (int16 or float; (N, 2), (N, 1) or (N,)) as a new float32 (N, 2) array, int16
    scaled by 1/32768; raises ValueError for other shapes and types."""
    audio = np.asarray(audio)
    if audio.ndim == 1:
        audio = audio[:, np.newaxis]
    if audio.ndim != 2 or audio.shape[1] not in (1, CHANNELS):
        raise ValueError(f"expected audio of shape (frames, 2) or (frames,), got {audio.shape}")
    converted = np.empty((audio.shape[0], CHANNELS), dtype=np.float32)
    if audio.dtype == np.int16:
        np.multiply(audio, INT16_SCALE, out=converted, casting="same_kind")
    elif np.issubdtype(audio.dtype, np.floating):
        np.copyto(converted, audio, casting="same_kind")  # (N, 1) broadcasts to both channels
    else:
        raise ValueError(f"expected int16 or float audio, got {audio.dtype}")
    return converted


def output_latency(time: Any) -> float:
    """Seconds from the audio callback to the DAC, as PortAudio's time info says; 0 without
    one (or when it makes no sense)."""
    if time is None:
        return 0.0
    try:
        latency = float(time.outputBufferDacTime - time.currentTime)
    except (AttributeError, TypeError):
        return 0.0
    return latency if 0.0 <= latency <= MAX_OUTPUT_LATENCY_S else 0.0


def equal_power(frames: int, channels: int = 2) -> FadeCurves:
    """Curves for a crossfade of `frames` (at least 1) frames; the GUI thread makes them."""
    frames = max(1, int(frames))
    angle = (np.arange(frames, dtype=np.float64) + 0.5) * (math.pi / 2 / frames)
    shape = (frames, channels)
    fade_in = np.ascontiguousarray(np.broadcast_to(np.sin(angle)[:, None], shape), np.float32)
    fade_out = np.ascontiguousarray(np.broadcast_to(np.cos(angle)[:, None], shape), np.float32)
    return FadeCurves(fade_in, fade_out, np.zeros(shape, dtype=np.float32))


def fill(audio: np.ndarray, cursor: int, out: np.ndarray, loop: bool) -> tuple[int, int]:
    """Copy `audio` from frame `cursor` into all of `out`, going on from frame 0 at its end when
    `loop`; without loop the frames after its end are zeroed. Returns (the next cursor, frames
    of `audio` written)."""
    total = audio.shape[0]
    frames = out.shape[0]
    cursor = min(cursor, total)
    written = 0
    while written < frames:
        count = min(frames - written, total - cursor)
        if count > 0:
            np.copyto(out[written:written + count], audio[cursor:cursor + count])
            written += count
            cursor += count
        if cursor >= total:
            if loop and total > 0:
                cursor = 0
            else:
                out[written:].fill(0)
                break
    return cursor, written


def mix_out(out: np.ndarray, curves: FadeCurves, position: int, outgoing: np.ndarray,
            cursor: int, loop: bool) -> tuple[int, int]:
    """Crossfade the start of `out` (already holding the incoming take) with `outgoing` from
    frame `cursor`, `position` frames into the fade. Returns (the outgoing take's next cursor,
    the new position); the fade is over when the position reaches `curves.frames`."""
    count = min(out.shape[0], curves.frames - position)
    if count <= 0:
        return cursor, position
    head = out[:count]
    np.multiply(head, curves.fade_in[position:position + count], out=head)
    scratch = curves.scratch[:count]
    cursor, _ = fill(outgoing, cursor, scratch, loop)
    np.multiply(scratch, curves.fade_out[position:position + count], out=scratch)
    np.add(head, scratch, out=head)
    return cursor, position + count
