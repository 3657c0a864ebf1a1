"""A kept take's audio: loading its samples, the request that makes them again, and putting the
regenerated audio in place of the old."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import soundfile as sf

from engines.constants import CHANNELS
from engines.store import wavmeta
from engines.store.files import content_sha256
from engines.store.lookup import TakeLookup
from engines.store.placement import audio_file_name, place_audio
from engines.store.records import LibraryError, TakeRecord
from engines.store.rows import note_for_regenerated, result_pcm16

if TYPE_CHECKING:
    from engines.backends.base import GenerationResult
    from engines.request import GenerationRequest


class TakeAudio(TakeLookup):
    """The audio part of ClipLibrary."""

    # Defined by ClipLibrary, where adding a take hashes engine files the same way.
    _engine_entries: Callable[[Any, str], tuple[list[dict], list[tuple]]]

    def _read(self, take_id: int) -> tuple[np.ndarray, str]:
        record = self.get(take_id)
        if record.missing:
            raise LibraryError(f"The audio of take #{take_id} is missing ({record.audio_path}); "
                               "regenerate it to bring it back.")
        try:
            with sf.SoundFile(str(record.audio_path)) as handle:
                subtype = handle.subtype
                audio = handle.read(dtype="int16" if subtype == "PCM_16" else "float32",
                                    always_2d=True)
        except (sf.SoundFileError, RuntimeError, ValueError, OSError) as err:
            raise LibraryError(f"The audio of take #{take_id} ({record.audio_path}) cannot be "
                               f"read ({err}); regenerate it to replace the file.") from err
        if audio.shape[1] == 1:
            audio = np.repeat(audio, 2, axis=1)
        return np.ascontiguousarray(audio[:, :CHANNELS]), subtype

    def load_audio(self, take_id: int) -> np.ndarray:
        """The take's samples as int16 (N, 2)."""
        audio, subtype = self._read(take_id)
        if audio.dtype == np.int16:
            return audio
        from engines.audio_io import pcm16_from_float

        return pcm16_from_float(audio)

    def load_float_audio(self, take_id: int) -> np.ndarray:
        """float32 (N, 2) exactly as a request used it: int16 / 32767 (the GUI's scaling) for
        16-bit takes, the stored floats for imported float audio."""
        audio, _ = self._read(take_id)
        if audio.dtype == np.int16:
            from engines.audio_io import float_from_pcm16

            return float_from_pcm16(audio)
        return audio

    def regeneration_request(self, take_id: int) -> GenerationRequest:
        """The request that re-makes a take exactly, init audio included (from the parent take,
        else the original init file)."""
        record = self.get(take_id)
        init = None
        if record.mode in ("a2a", "inpaint"):
            if record.parent_id is not None:
                try:
                    init = self.load_float_audio(record.parent_id)
                except LibraryError:
                    init = None
            if init is None and record.init_source and Path(record.init_source).is_file():
                from engines.audio_io import read_audio

                init = read_audio(record.init_source)
            if init is None:
                raise LibraryError(f"Take #{take_id} was made from init audio that is no longer "
                                   "in the library or on disk; choose the init audio again to "
                                   "regenerate it.")
        return record.request(init_audio=init)

    def replace_audio(self, take_id: int, result: GenerationResult) -> TakeRecord:
        """Give a take (usually one whose file went missing) the audio of its regeneration: same
        row, new file; the run's backend, timings and engine files are updated."""
        record = self.get(take_id)
        if record.is_imported:
            raise LibraryError(f"Take #{take_id} is imported audio and cannot be regenerated; "
                               "import the file again instead.")
        if int(result.seed) != record.seed or result.request.model != record.model:
            raise LibraryError(f"That result (seed {result.seed}, {result.request.model}) is not "
                               f"a regeneration of take #{take_id} (seed {record.seed}, "
                               f"{record.model}); regenerate it from its own settings.")
        pcm = result_pcm16(result)
        engine_files, fresh_hashes = self._engine_entries(result.files, record.mode)
        old_path = record.audio_path
        folder = self.trash_dir if record.deleted else self.audio_dir
        file_name = audio_file_name(take_id, record.name or record.prompt)
        note = note_for_regenerated(take_id, record, result.backend)
        with self._write() as undo:
            place_audio(folder, file_name, pcm, note,
                        wavmeta.title_for(record.name, record.prompt), undo)
            self._conn.execute(
                "UPDATE takes SET audio_file = ?, samples = ?, sample_rate = ?, backend = ?, "
                "timings_ms = ?, engine_files = ?, content_sha256 = ?, warnings = ? "
                "WHERE id = ?",
                (file_name, int(pcm.shape[0]), int(result.sample_rate), result.backend,
                 json.dumps({k: round(float(v), 3) for k, v in result.timings_ms.items()}),
                 json.dumps(engine_files), content_sha256(pcm),
                 json.dumps([str(w) for w in result.warnings]), take_id))
            self._conn.executemany(
                "INSERT OR REPLACE INTO file_hashes (path, size, mtime_ns, sha256) "
                "VALUES (?, ?, ?, ?)", fresh_hashes)
        if old_path.parent == folder and old_path.name != file_name:
            old_path.unlink(missing_ok=True)  # a stale copy in our folder; files elsewhere stay
        return self.get(take_id)
