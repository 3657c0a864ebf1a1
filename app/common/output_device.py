"""Which audio output the player uses, and finding it off the GUI thread.

sounddevice is imported lazily (engines.lazy): importing it initialises PortAudio, which probes
every audio device (tens of ms here, far more with some drivers), and building the window must
not do that. The window looks its output up on a thread of its own once it has painted
(`OutputLookup.start`); PortAudio is then initialised before the first take wants to play.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

from engines.lazy import lazy_import, real_module

sounddevice = lazy_import("sounddevice")

NO_DEVICE = (
    "No audio output device was found ({detail}); playback is off, everything else works."
)
OPEN_FAILED = (
    "The audio output could not be opened ({detail}); playback is off, everything else works."
)


class PlaybackUnavailable(Exception):
    """Playback cannot run on this machine; the message is one sentence for the user."""


def import_sounddevice() -> ModuleType:
    """sounddevice, imported on first use (raises OSError when libportaudio is missing)."""
    return real_module(sounddevice)


def detail_of(err: BaseException) -> str:
    """An exception as a short clause that fits inside one sentence."""
    text = " ".join(str(err).split()).rstrip(".")
    return text or type(err).__name__


def find_output_device(device: Any = None) -> tuple[Any, str | None]:
    """(device to open, None) when an output device exists, else (None, one-sentence reason).

    `device` is a sounddevice device id or name; None means the system default output, or the
    first output device when the system names no default.
    """
    try:
        sd = import_sounddevice()
    except (OSError, ImportError) as err:
        return None, NO_DEVICE.format(detail=f"the PortAudio library could not be loaded: "
                                             f"{detail_of(err)}")
    try:
        devices = sd.query_devices()
        outputs = [i for i, info in enumerate(devices) if info["max_output_channels"] > 0]
        if not outputs:
            return None, NO_DEVICE.format(detail="the system lists no output devices")
        if device is not None:
            sd.query_devices(device, kind="output")  # raises when it is not an output device
            return device, None
        try:
            default = sd.query_devices(kind="output")
        except sd.PortAudioError:
            return outputs[0], None  # no default output configured: take the first one
        return default.get("index", outputs[0]), None
    except sd.PortAudioError as err:
        return None, NO_DEVICE.format(detail=f"PortAudio error: {detail_of(err)}")
    except ValueError as err:  # a configured device name that matches nothing
        return None, NO_DEVICE.format(detail=detail_of(err))


class OutputLookup:
    """Runs one look-up (`look` - the player's) on a daemon thread, and lets whoever needs its
    answer wait for it. PortAudio is never called from two threads at once: the player's GUI
    side waits here before it asks PortAudio anything. cffi releases the GIL during PortAudio's
    own calls, so the window keeps painting while the devices are probed."""

    def __init__(self, look: Callable[[], None]) -> None:
        self._look = look
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the look-up (once; later calls do nothing)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._look, name="audioOutputLookup",
                                            daemon=True)
            self._thread.start()

    def wait(self) -> None:
        """Return once a started look-up has finished (at once when none was started)."""
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
