"""A kept take's audio, read: its samples (checked against what was saved, when asked) and the
request that makes them again. Putting new audio in place is keeper.py's part."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np
import soundfile as sf

from engines.audio_io import float_from_pcm16, pcm16_from_float, read_audio
from engines.constants import CHANNELS, SAMPLE_RATE
from engines.error_sentences import sentence, shown
from engines.errors import AudioFileError
from engines.request import init_frames_needed
from engines.store import wavmeta
from engines.store.files import content_sha256
from engines.store.lookup import TakeLookup
from engines.store.records import LibraryError, TakeRecord

if TYPE_CHECKING:
    from engines.request import GenerationRequest


class TakeAudio:
    """Reading takes' audio files; the takes are found through `lookup`."""

    def __init__(self, lookup: TakeLookup) -> None:
        self._lookup = lookup

    def _read(self, take_id: int, max_frames: int = -1) -> tuple[np.ndarray, str]:
        record = self._lookup.get(take_id)
        if record.is_sound_file:
            return _sound_file_audio(record, max_frames), "FLOAT"
        if record.missing:
            raise LibraryError(f"The audio of take #{record.id} is missing "
                               f"({shown(record.audio_path)}); regenerate it to bring it back.")
        try:
            with sf.SoundFile(wavmeta.sf_name(record.audio_path)) as handle:
                subtype = handle.subtype
                audio = handle.read(max_frames, dtype=wavmeta.stored_dtype(subtype),
                                    always_2d=True)
        except (OSError, MemoryError) as err:
            raise LibraryError(sentence(f"The audio of take #{record.id} "
                                        f"({shown(record.audio_path)}) cannot be read",
                                        err)) from err
        except (sf.SoundFileError, RuntimeError, ValueError, TypeError) as err:
            raise LibraryError(f"The audio of take #{record.id} ({shown(record.audio_path)}) "
                               "cannot be read: the file is damaged; regenerate the take to "
                               "replace it.") from err
        if audio.shape[1] == 1:
            audio = np.repeat(audio, 2, axis=1)
        return np.ascontiguousarray(audio[:, :CHANNELS]), subtype

    def load_audio(self, take_id: int) -> np.ndarray:
        """The take's samples as int16 (N, 2)."""
        audio, subtype = self._read(take_id)
        if audio.dtype == np.int16:
            return audio

        return pcm16_from_float(audio)

    def verified_audio(self, take_id: int) -> np.ndarray:
        """The take's samples as stored (int16, or float32 for imported float audio), checked
        against the frame count and hash recorded when it was saved, so a file changed or
        damaged outside the app is never exported as if it were the take."""
        record = self._lookup.get(take_id)
        audio, _ = self._read(take_id)
        if record.content_sha256 and (audio.shape[0] != record.samples
                                      or content_sha256(audio) != record.content_sha256):
            raise LibraryError(f"The audio of take #{record.id} ({shown(record.audio_path)}) "
                               "is damaged: it no longer holds the samples the take was saved "
                               "with, so nothing was exported; regenerate the take to replace "
                               "it.")
        return audio

    def audio_problem(self, take_id: int) -> str | None:
        """Why the take's audio file cannot be used (missing, unreadable, or not the samples
        it was saved with), as one sentence; None when it is sound. Reads the whole file."""
        try:
            self.verified_audio(take_id)
        except LibraryError as err:
            return str(err)
        return None

    def load_float_audio(self, take_id: int, max_frames: int = -1) -> np.ndarray:
        """float32 (N, 2) exactly as a request used it: int16 / 32767 (the GUI's scaling) for
        16-bit takes, the stored floats for imported float audio. `max_frames`: only the start
        (all of it when negative)."""
        audio, _ = self._read(take_id, max_frames)
        if audio.dtype == np.int16:
            return float_from_pcm16(audio)
        return audio

    def regeneration_request(self, take_id: int) -> GenerationRequest:
        """The request that re-makes a take exactly, init audio included (from the parent take,
        else the original init file)."""
        record = self._lookup.get(take_id)
        init = None
        if record.mode in ("a2a", "inpaint"):
            # Only what the request uses: the init audio may be far longer than the take.
            needed = init_frames_needed(record.seconds)
            if record.parent_id is not None:
                try:
                    init = self.load_float_audio(record.parent_id, needed)
                except LibraryError:
                    init = None
            if init is None and record.init_source and os.path.isfile(record.init_source):
                init = read_audio(record.init_source, max_seconds=needed / SAMPLE_RATE)
            if init is None:
                raise LibraryError(f"Take #{take_id} was made from init audio that is no longer "
                                   "in the library or on disk; choose the init audio again to "
                                   "regenerate it.")
        return record.request(init_audio=init)


def _sound_file_audio(record: TakeRecord, max_frames: int) -> np.ndarray:
    """A referenced sound file's audio as every request and embedding uses a take's: float32
    (N, 2) at SAMPLE_RATE (its own rate, channels and format converted by read_audio; the file
    itself is only read)."""
    if record.missing:
        raise LibraryError(f"The sound file {shown(record.audio_path)} is missing; reconnect "
                           "its drive or import its folder again.")
    seconds = None if max_frames is None or max_frames < 0 else max_frames / SAMPLE_RATE
    try:
        return read_audio(record.audio_path, max_seconds=seconds)
    except AudioFileError as err:
        raise LibraryError(str(err)) from err
