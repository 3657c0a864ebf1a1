"""A kept take's audio: loading its samples, the request that makes them again, and putting the
regenerated audio in place of the old."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import soundfile as sf

from engines.audio_io import float_from_pcm16, pcm16_from_float, read_audio
from engines.constants import CHANNELS, SAMPLE_RATE
from engines.failures import sentence, shown
from engines.request import init_frames_needed
from engines.store import wavmeta
from engines.store.embeddings import Embedded, result_embedding
from engines.store.files import content_sha256
from engines.store.lookup import TakeLookup
from engines.store.placement import audio_file_name, place_audio
from engines.store.records import LibraryError, TakeRecord
from engines.store.rows import flag_codes, note_for_regenerated, result_pcm16

if TYPE_CHECKING:
    from engines.generation_result import GenerationResult
    from engines.request import GenerationRequest

log = logging.getLogger(__name__)


class TakeAudio(TakeLookup):
    """The audio part of ClipLibrary."""

    # Defined by ClipLibrary, where adding a take hashes engine files the same way.
    _engine_entries: Callable[[Any, str], tuple[list[dict], list[tuple]]]
    # Defined by TakeEmbeddings: new audio gets a new sound embedding.
    _insert_embedding: Callable[[int, Embedded], None]
    _index_put: Callable[[int, Embedded], None]

    def _read(self, take_id: int, max_frames: int = -1) -> tuple[np.ndarray, str]:
        record = self.get(take_id)
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
        record = self.get(take_id)
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
        record = self.get(take_id)
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
        tier = getattr(result.files, "decoder_tier", "") or record.decoder_tier
        note = note_for_regenerated(record.id, record, result.backend, tier)
        timings = json.dumps({k: round(float(v), 3) for k, v in result.timings_ms.items()})
        warnings = json.dumps([str(w) for w in result.warnings])
        quality = json.dumps(flag_codes(getattr(result, "quality", None)))
        embedded = result_embedding(result, pcm)
        with self._write() as undo:
            place_audio(folder, file_name, pcm, note,
                        wavmeta.title_for(record.name, record.prompt), undo)
            self._conn.execute(
                "UPDATE takes SET audio_file = ?, samples = ?, sample_rate = ?, backend = ?, "
                "decoder_tier = ?, timings_ms = ?, engine_files = ?, content_sha256 = ?, "
                "warnings = ?, quality = ? WHERE id = ?",
                (file_name, int(pcm.shape[0]), int(result.sample_rate), result.backend, tier,
                 timings, json.dumps(engine_files), content_sha256(pcm), warnings, quality,
                 record.id))
            self._conn.executemany(
                "INSERT OR REPLACE INTO file_hashes (path, size, mtime_ns, sha256) "
                "VALUES (?, ?, ?, ?)", fresh_hashes)
            self._journal.append(record.id, record.created, {
                "backend": result.backend, "decoder_tier": tier, "timings_ms": timings,
                "engine_files": json.dumps(engine_files), "warnings": warnings,
                "quality": quality})
            self._insert_embedding(record.id, embedded)
        self._index_put(record.id, embedded)
        if old_path.parent == folder and old_path.name != file_name:
            try:  # a stale copy in our folder; files elsewhere stay
                old_path.unlink(missing_ok=True)
            except OSError:
                log.warning("Could not remove the old audio file %s", old_path, exc_info=True)
        return self.get(take_id)
