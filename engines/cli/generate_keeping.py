"""`generate` keeping its take in the sound library: the take, its init file (as an imported
take) and the finishing chain that made the --out file. The library failing never costs the
user the file they asked for: whatever goes wrong here is one warning, and --out is written.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from engines.audio_io import read_audio
from engines.cli.support import warn
from engines.constants import SAMPLE_RATE
from engines.error_sentences import path_text, reason
from engines.paths import library_dir
from engines.request import init_frames_needed
from engines.store.library import ClipLibrary

if TYPE_CHECKING:
    from engines.delivery.delivery_take import Labels
    from engines.finish.finished_take import FinishedTake
    from engines.generation_result import GenerationResult
    from engines.store.records import TakeRecord

log = logging.getLogger(__name__)


def keep_in_library(result: GenerationResult, init_audio: Path | None,
                    finished: FinishedTake | None = None, labels: Labels | None = None,
                    variation: tuple[int, int] = (1, 1)) -> TakeRecord | None:
    """Record the take (and its init file, as an imported take) in the library, with the
    finishing chain that made the --out file when there is one, the UCS labels it was given
    and its number in its set of variations (n, of). The library failing never costs the user
    the file they asked for: whatever goes wrong here is one warning, and the take is still
    written to --out."""
    try:
        library = ClipLibrary(library_dir())
    except Exception as exc:  # never lose the take: see the docstring
        return _not_kept(result, exc)
    try:
        record = _add_take(library, result, init_audio, labels, variation)
        if record is not None and finished is not None:
            record = _keep_finishing(library, record, finished)
        return record
    finally:
        try:
            library.close()
        except Exception:
            log.warning("could not close the library", exc_info=True)


def _add_take(library: ClipLibrary, result: GenerationResult, init_audio: Path | None,
              labels: Labels | None, variation: tuple[int, int]) -> TakeRecord | None:
    try:
        if library.notice:
            warn(library.notice)
        parent_id = None
        source = path_text(Path(init_audio).resolve()) if init_audio is not None else None
        if init_audio is not None:
            # Only the part the take was made from: a 30-minute file is not copied whole.
            used_s = init_frames_needed(result.request.seconds) / SAMPLE_RATE
            origin = library.identify(init_audio)  # a take exported earlier, if it is one
            parent_id = library.add_imported(
                read_audio(init_audio, max_seconds=used_s), source,
                parent_id=origin.id if origin is not None else None).id
        return library.add(result, parent_id=parent_id, init_source=source, labels=labels,
                           variation=variation[0], variations=variation[1])
    except Exception as exc:  # never lose the take: see keep_in_library
        return _not_kept(result, exc)


def _keep_finishing(library: ClipLibrary, record: TakeRecord,
                    finished: FinishedTake) -> TakeRecord:
    """The chain that finished --out, kept with the take so exports can finish it again."""
    try:
        return library.set_finishing(record.id, finished.record())
    except Exception as exc:  # the take is kept, only its chain is not: see keep_in_library
        log.warning("could not keep the finishing chain in the library", exc_info=True)
        happened, todo = reason(exc)
        warn(f"The take was kept in the library as #{record.id}, but not its finishing "
             f"chain: {happened}; {todo} (the --out file is finished all the same).")
        return record


def _not_kept(result: GenerationResult, exc: BaseException) -> None:
    log.warning("could not keep the take in the library", exc_info=True)
    need = result.pcm.shape[0] * 4 + (1 << 16)  # 16-bit stereo, plus the note
    happened, todo = reason(exc)
    warn(f"The take was not kept in the library: {happened}, and it needs about "
         f"{need / 1e6:.1f} MB there; {todo} (the --out file is written all the same).")
    return None
