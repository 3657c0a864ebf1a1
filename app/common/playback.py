"""Audio playback of one take at a time through sounddevice, without Qt (the GUI wraps it).

Threads: the GUI thread calls the public methods; PortAudio's thread calls `Player._callback`.
They share a few plain attributes, each written by one side only, so no lock is needed and the
callback never waits:

- `_audio` (GUI writes): the take as one float32 (N, 2) array. `load` builds a new array and
  swaps the reference; the callback reads the reference once per block, so a block is always
  copied from a single take and an old array is never modified while the callback may read it.
- `_cursor` (callback writes): the next frame to play.
- `_seek_target` then `_seek_serial` (GUI writes, in that order): a position request. The
  callback applies it at the start of its next block when the serial changed, which keeps a seek
  from being overwritten by a block that was already running.
- `_playing`, `loop`, `_volume` (GUI writes; the callback only ever clears `_playing`).

sounddevice is imported lazily (engines.lazy): importing it initialises PortAudio, which probes
every audio device, and building the window must not do that.
"""

from __future__ import annotations

import logging
import math
from types import ModuleType
from typing import Any, NoReturn

import numpy as np

from engines.lazy import lazy_import, real_module

log = logging.getLogger(__name__)

sounddevice = lazy_import("sounddevice")

CHANNELS = 2
# int16 PCM maps to float by 1/32768, as libsndfile does: -32768 becomes exactly -1.0 and every
# value keeps its exact power-of-two scaled float32 representation.
INT16_SCALE = 1.0 / 32768.0

_NO_DEVICE = (
    "No audio output device was found ({detail}); playback is off, everything else works."
)
_OPEN_FAILED = (
    "The audio output could not be opened ({detail}); playback is off, everything else works."
)


class PlaybackUnavailable(Exception):
    """Playback cannot run on this machine; the message is one sentence for the user."""


def _import_sounddevice() -> ModuleType:
    """sounddevice, imported on first use (raises OSError when libportaudio is missing)."""
    return real_module(sounddevice)


def _detail(err: BaseException) -> str:
    """An exception as a short clause that fits inside one sentence."""
    text = " ".join(str(err).split()).rstrip(".")
    return text or type(err).__name__


def find_output_device(device: Any = None) -> tuple[Any, str | None]:
    """(device to open, None) when an output device exists, else (None, one-sentence reason).

    `device` is a sounddevice device id or name; None means the system default output, or the
    first output device when the system names no default.
    """
    try:
        sd = _import_sounddevice()
    except (OSError, ImportError) as err:
        return None, _NO_DEVICE.format(detail=f"the PortAudio library could not be loaded: "
                                              f"{_detail(err)}")
    try:
        devices = sd.query_devices()
        outputs = [i for i, info in enumerate(devices) if info["max_output_channels"] > 0]
        if not outputs:
            return None, _NO_DEVICE.format(detail="the system lists no output devices")
        if device is not None:
            sd.query_devices(device, kind="output")  # raises when it is not an output device
            return device, None
        try:
            default = sd.query_devices(kind="output")
        except sd.PortAudioError:
            return outputs[0], None  # no default output configured: take the first one
        return default.get("index", outputs[0]), None
    except sd.PortAudioError as err:
        return None, _NO_DEVICE.format(detail=f"PortAudio error: {_detail(err)}")
    except ValueError as err:  # a configured device name that matches nothing
        return None, _NO_DEVICE.format(detail=_detail(err))


class Player:
    """Plays one take at a time through sounddevice's OutputStream (44.1 kHz stereo float32).

    Nothing touches audio devices until `available` (or `unavailable_reason`) is first read or
    `play()` is first called. A missing device never raises from the constructor: `available`
    turns False, `unavailable_reason` says why in one sentence, and `play()` raises
    PlaybackUnavailable with that sentence. With `stream_factory` (tests) no device is looked
    up; the factory is called with OutputStream's keyword arguments.
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

        self._audio = np.zeros((0, CHANNELS), dtype=np.float32)
        self._loaded_from: object | None = None  # the array last loaded (see load)
        self._cursor = 0
        self._seek_target = 0
        self._seek_serial = 0
        self._applied_serial = 0
        self._playing = False
        self._volume = 1.0
        self.loop = False

    # -- availability ------------------------------------------------------------------------

    def _detect(self) -> None:
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
        if not keep_position:
            self._request_seek(0)
        self._audio = converted  # one reference swap: the callback sees the old or the new take
        self._loaded_from = source

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
        self._playing = False
        stream, self._stream = self._stream, None
        if stream is None:
            return
        try:
            stream.stop()
        except Exception:  # closing must finish even when the device went away
            log.exception("stopping the audio stream failed")
        try:
            stream.close()
        except Exception:
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
            sd = _import_sounddevice()
            errors += (sd.PortAudioError,)
            factory = self._stream_factory or sd.OutputStream
        except (OSError, ImportError) as err:
            self._fail(_NO_DEVICE.format(detail=f"the PortAudio library could not be loaded: "
                                                f"{_detail(err)}"))
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
            self._fail(_OPEN_FAILED.format(detail=_detail(err)))
        self._stream = stream

    def _fail(self, reason: str) -> NoReturn:
        self._reason = reason
        self._playing = False
        raise PlaybackUnavailable(reason)

    def _callback(self, outdata: np.ndarray, frames: int, time: Any, status: Any) -> None:
        # Runs on PortAudio's thread: only slice copies and cursor arithmetic. No allocation of
        # sample data, no logging, no locks, no Qt.
        audio = self._audio  # read once: load() may swap it during this block
        total = audio.shape[0]
        serial = self._seek_serial
        if serial != self._applied_serial:
            self._cursor = self._seek_target
            self._applied_serial = serial
        cursor = min(self._cursor, total)
        if not self._playing:
            outdata.fill(0)
            self._cursor = cursor
            return
        volume = self._volume
        written = 0
        while written < frames:
            count = min(frames - written, total - cursor)
            if count > 0:
                np.multiply(audio[cursor:cursor + count], volume,
                            out=outdata[written:written + count])
                written += count
                cursor += count
            if cursor >= total:
                if self.loop and total > 0:
                    cursor = 0
                else:
                    outdata[written:].fill(0)
                    self._playing = False  # paused at the end; the next play() starts over
                    break
        self._cursor = cursor
