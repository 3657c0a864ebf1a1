"""Audio playback of one take at a time through sounddevice, without Qt (the GUI wraps it).

Threads: the GUI thread calls the public methods; PortAudio's thread calls `Player._callback`.
They share a few plain attributes, each written by one side only, so no lock is needed and the
callback never waits:

- `_source` (GUI writes): the take as one float32 (N, 2) array, with how to change to it (at
  once, or crossfaded: `crossfade_to`). `load` and `crossfade_to` build a new array and a new
  `Source` and swap the reference; the callback reads the reference once per block, so a block
  is always copied from one take and an old array is never modified while the callback may
  read it.
- `_cursor`, the crossfade under way and `_heard_*` (callback writes): the next frame to play,
  the outgoing take still being faded out, and when the newest take's first block was played
  (`first_sample_at`: the live audition's latency readout).
- `_seek_target` then `_seek_serial` (GUI writes, in that order): a position request. The
  callback applies it at the start of its next block when the serial changed, which keeps a seek
  from being overwritten by a block that was already running.
- `_playing`, `loop`, `_volume` (GUI writes; the callback only ever clears `_playing`).

sounddevice is imported lazily (app.common.output_device): importing it initialises PortAudio,
which probes every audio device, and building the window must not do that.
"""

from __future__ import annotations

import logging
import math
import sys
from time import perf_counter
from typing import Any, NoReturn

import numpy as np

from app.common.audio_blocks import (
    CHANNELS,
    CROSSFADE_MS,
    FadeCurves,
    Source,
    equal_power,
    fill,
    float_stereo,
    mix_out,
    output_latency,
)
from app.common.output_device import (
    NO_DEVICE,
    OPEN_FAILED,
    OutputLookup,
    PlaybackUnavailable,
    detail_of,
    find_output_device,
    import_sounddevice,
)

__all__ = ["PlaybackUnavailable", "Player", "find_output_device"]

log = logging.getLogger(__name__)


class Player:
    """Plays one take at a time through sounddevice's OutputStream (44.1 kHz stereo float32).

    Nothing touches audio devices until `available` (or `unavailable_reason`) is first read,
    `play()` is first called or `look_up_in_background()` starts the look-up on a thread of its
    own (the window does, once it has painted). A missing device never raises from the
    constructor: `available` turns False, `unavailable_reason` says why in one sentence, and
    `play()` raises PlaybackUnavailable with that sentence. With `stream_factory` (tests) no
    device is looked up; the factory is called with OutputStream's keyword arguments.
    """

    def __init__(
        self,
        samplerate: int = 44100,
        device: Any = None,
        blocksize: int = 512,
        stream_factory: Any = None,
    ) -> None:
        self.samplerate = int(samplerate)
        self.blocksize = int(blocksize)
        self._device = device
        self._stream_factory = stream_factory
        self._stream: Any = None
        # None: not looked up yet; "": a device was found (or a factory was injected).
        self._reason: str | None = "" if stream_factory is not None else None
        self._lookup = OutputLookup(self._detect_here)

        self._source = Source(np.zeros((0, CHANNELS), dtype=np.float32), None, 0)
        self._loaded_from: object | None = None  # the array last loaded (see load)
        self._cursor = 0
        self._seek_target = 0
        self._seek_serial = 0
        self._applied_serial = 0
        self._playing = False
        self._volume = 1.0
        self.loop = False
        self._fade_curves: FadeCurves | None = None  # made once per crossfade length
        # callback-written: the source it last played, the crossfade under way, first samples
        self._current: Source = self._source
        self._fade_from: np.ndarray | None = None
        self._fade_cursor = 0
        self._fade_position = 0
        self._heard_at = 0.0
        self._heard_serial = 0

    # -- availability ------------------------------------------------------------------------

    def look_up_in_background(self) -> None:
        """Find the output device (initialising PortAudio) on a thread of its own; reading
        `available` meanwhile waits for that answer."""
        if self._reason is None:
            self._lookup.start()

    @property
    def known(self) -> bool:
        """True once the output was looked up: reading `available` then never waits."""
        return self._reason is not None

    def _detect(self) -> None:
        self._lookup.wait()  # one look-up at a time: PortAudio is not for two threads at once
        self._detect_here()

    def _detect_here(self) -> None:
        if self._reason is None:
            device, reason = find_output_device(self._device)
            if reason is None:
                self._device = device
                self._reason = ""
            else:
                log.warning("%s", reason)
                self._reason = reason

    @property
    def available(self) -> bool:
        self._detect()
        return self._reason == ""

    @property
    def unavailable_reason(self) -> str | None:
        self._detect()
        return self._reason or None

    # -- the take ----------------------------------------------------------------------------

    @property
    def _audio(self) -> np.ndarray:
        return self._source.audio

    def load(self, audio: np.ndarray, keep_position: bool = True) -> None:
        """Make `audio` the take that plays: int16 or float, shape (N, 2), (N, 1) or (N,).

        The samples are converted once here into a new float32 array (int16 by 1/32768). With
        keep_position the playback position stays where it is, clamped to the new length, so
        switching takes while playing is an instant A/B; otherwise it goes back to 0.
        """
        if audio is self._loaded_from and self._loaded_from is not None:
            # the same take again (selected, then auto-played): its samples are already here,
            # and converting 30 s again costs the GUI thread tens of ms
            if not keep_position:
                self._request_seek(0)
            return
        source = audio
        converted = float_stereo(audio)
        if not keep_position:
            self._request_seek(0)
        # one reference swap: the callback sees the old or the new take
        self._source = Source(converted, None, self._source.serial + 1)
        self._loaded_from = source

    def holds(self, audio: object) -> bool:
        """Whether `audio` (that very array) is the take loaded now: a view showing one sound
        draws the playhead only while it is that sound that plays."""
        return audio is not None and audio is self._loaded_from

    def crossfade_to(self, audio: np.ndarray, fade_ms: float = CROSSFADE_MS) -> int:
        """Make `audio` the take that plays, from the same position (wrapped into it while
        looping), crossfading from the take playing now over `fade_ms` with equal-power curves:
        no click and no restart however different the two are. Returns its serial, for
        `first_sample_at`."""
        converted = float_stereo(audio)
        frames = max(1, round(fade_ms * self.samplerate / 1000))
        if self._fade_curves is None or self._fade_curves.frames != frames:
            self._fade_curves = equal_power(frames, CHANNELS)
        self._source = Source(converted, self._fade_curves, self._source.serial + 1)
        self._loaded_from = audio
        return self._source.serial

    def first_sample_at(self, serial: int) -> float | None:
        """When the first block of the take loaded as `serial` was handed to the device, on
        the time.perf_counter clock, plus the output latency the device reports; None until
        it is played (or when a newer take replaced it first)."""
        heard = self._heard_serial
        at = self._heard_at
        if heard != serial or self._heard_serial != heard:
            return None
        return at

    # -- transport ---------------------------------------------------------------------------

    def play(self) -> None:
        """Start or resume; a take that ended (or an empty position at its end) starts over."""
        if self._audio.shape[0] == 0:
            return
        if self._position_frames() >= self._audio.shape[0]:
            self._request_seek(0)
        self._ensure_stream()
        self._playing = True

    def pause(self) -> None:
        self._playing = False

    def toggle(self) -> bool:
        """Play when paused, pause when playing; returns the new playing state."""
        if self._playing:
            self.pause()
        else:
            self.play()
        return self._playing

    def stop(self) -> None:
        self.pause()
        self._request_seek(0)

    def seek(self, seconds: float) -> None:
        """Move the playback position (clamped to the take)."""
        seconds = float(seconds)
        if math.isnan(seconds):
            seconds = 0.0
        seconds = min(max(seconds, 0.0), self.duration_seconds)
        self._request_seek(min(round(seconds * self.samplerate), self._audio.shape[0]))

    @property
    def playing(self) -> bool:
        return self._playing

    @property
    def position_seconds(self) -> float:
        return self._position_frames() / self.samplerate

    @property
    def duration_seconds(self) -> float:
        return self._audio.shape[0] / self.samplerate

    @property
    def volume(self) -> float:
        return self._volume

    @volume.setter
    def volume(self, value: float) -> None:
        value = float(value)
        self._volume = 0.0 if math.isnan(value) else min(max(value, 0.0), 1.0)

    def close(self) -> None:
        """Stop and close the stream; safe to call twice. A later play() opens a new stream."""
        self._lookup.wait()  # PortAudio still starting on its thread must not meet its atexit
        self._playing = False
        stream, self._stream = self._stream, None
        if stream is None:
            return
        try:
            stream.stop()
        except Exception:  # noqa: BLE001 - closing must finish even when the device went away
            log.exception("stopping the audio stream failed")
        try:
            stream.close()
        except Exception:  # noqa: BLE001 - closing must finish: the stream is dropped anyway
            log.exception("closing the audio stream failed")

    # -- internals ---------------------------------------------------------------------------

    def _request_seek(self, frame: int) -> None:
        self._seek_target = int(frame)
        self._seek_serial += 1  # written after the target: the callback reads them the other way

    def _position_frames(self) -> int:
        if self._seek_serial != self._applied_serial:
            frame = self._seek_target
        else:
            frame = self._cursor
        return min(frame, self._audio.shape[0])

    def _ensure_stream(self) -> None:
        """Open and start the output stream on first use; it then stays open (silent when
        paused), so resuming and switching takes never wait on the device."""
        if self._stream is not None:
            return
        if not self.available:
            raise PlaybackUnavailable(self._reason)
        errors: tuple[type[BaseException], ...] = (OSError, ValueError)
        try:
            # a stream factory (tests) needs no PortAudio: its errors only when it is loaded
            sd = sys.modules.get("sounddevice") if self._stream_factory else import_sounddevice()
            errors += (sd.PortAudioError,) if sd is not None else ()
            factory = self._stream_factory or sd.OutputStream
        except (OSError, ImportError) as err:
            self._fail(NO_DEVICE.format(detail=f"the PortAudio library could not be loaded: "
                                               f"{detail_of(err)}"))
        stream = None
        try:
            stream = factory(
                samplerate=self.samplerate,
                channels=CHANNELS,
                dtype="float32",
                blocksize=self.blocksize,
                device=self._device,
                callback=self._callback,
            )
            stream.start()
        except errors as err:
            if stream is not None:
                try:
                    stream.close()
                except errors:
                    log.exception("closing the half-opened audio stream failed")
            log.exception("opening the audio stream failed")
            self._fail(OPEN_FAILED.format(detail=detail_of(err)))
        self._stream = stream

    def _fail(self, reason: str) -> NoReturn:
        self._reason = reason
        self._playing = False
        raise PlaybackUnavailable(reason)

    def _callback(self, outdata: np.ndarray, frames: int, time: Any, status: Any) -> None:
        # Runs on PortAudio's thread: only slice copies and cursor arithmetic. No allocation of
        # sample data, no logging, no locks, no Qt.
        source = self._source  # read once: load() may swap it during this block
        audio = source.audio
        cursor = self._cursor
        serial = self._seek_serial
        if serial != self._applied_serial:
            cursor = self._seek_target
            self._applied_serial = serial
            self._fade_from = None  # a seek ends a crossfade
        if source is not self._current:
            cursor = self._switch(source, cursor)
        cursor = min(cursor, audio.shape[0])
        if not self._playing:
            outdata.fill(0)
            self._cursor = cursor
            return
        if self._heard_serial != source.serial:
            self._heard_at = perf_counter() + output_latency(time)
            self._heard_serial = source.serial  # after the time: first_sample_at reads so
        cursor, _ = fill(audio, cursor, outdata, self.loop)
        outgoing = self._fade_from
        if outgoing is not None and source.fade is not None:
            self._fade_cursor, self._fade_position = mix_out(
                outdata, source.fade, self._fade_position, outgoing, self._fade_cursor,
                self.loop)
            if self._fade_position >= source.fade.frames:
                self._fade_from = None
        volume = self._volume
        if volume != 1.0:
            np.multiply(outdata, volume, out=outdata)
        if cursor >= audio.shape[0] and not self.loop:
            self._playing = False  # paused at the end; the next play() starts over
        self._cursor = cursor

    def _switch(self, source: Source, cursor: int) -> int:
        """Callback side of a new take: crossfade from the one playing (when it asks for it
        and something plays) and keep the position, wrapped into the new take while looping."""
        previous, self._current = self._current, source
        total = source.audio.shape[0]
        self._fade_from = None
        if source.fade is None:
            return cursor
        if self._playing and previous.audio.shape[0] > 0:
            self._fade_from = previous.audio
            self._fade_cursor = min(cursor, previous.audio.shape[0])
            self._fade_position = 0
        if self.loop and total > 0 and cursor >= total:
            cursor %= total
        return cursor

