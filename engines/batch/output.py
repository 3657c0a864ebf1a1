"""One rendered take into the output folder: kept in the library first (its id goes into the
sidecar), then the audio and its sidecar written to temporaries and moved into place together
(engines.cli.output.deliver), so a crash leaves either both files or the earlier ones.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from engines.batch.keeping import LibraryKeeper
from engines.batch.plan import Take
from engines.batch.workers import Rendered
from engines.cli.support import UsageError
from engines.failures import path_text
from engines.provenance import build_sidecar, sidecar_path


class TakeWriter:
    def __init__(self, out_dir: Path, list_path: Path, keeper: LibraryKeeper) -> None:
        self.out_dir = out_dir
        self._list = path_text(list_path.resolve())
        self._keeper = keeper

    def write(self, take: Take, rendered: Rendered) -> dict[str, Any]:
        """The manifest changes for the take: status ok, or failed with the reason."""
        from engines.cli.output import deliver

        result, finished = rendered.result, rendered.finished
        out = self.out_dir / take.file
        started = time.perf_counter()
        record = self._keeper.keep(result, name=out.stem, init_audio=take.spec.init_audio,
                                   category=take.spec.category,
                                   finishing=finished.record() if finished else None)
        kept_ms = (time.perf_counter() - started) * 1e3
        sidecar = build_sidecar(result, out, take.fmt, take.spec.init_entry)
        sidecar["library_id"] = record.id if record is not None else None
        sidecar["batch"] = {"list": self._list, "where": take.where, "name": take.spec.name,
                            "variation": take.variation, "category": take.spec.category or None,
                            "params_hash": take.params_hash}
        if finished is not None:
            sidecar["finishing"] = finished.record()
            write_temp = finished.writer(_note(result, record, finished),
                                         result.request.prompt[:120])
        else:
            write_temp = _raw_writer(result, record, take.fmt)
        try:
            deliver(out, write_temp, sidecar)
        except UsageError as exc:
            kept = (f"; the take is kept in the library as #{record.id}" if record is not None
                    else f"; render it again (seed {result.seed})")
            return {"status": "failed", "reason": f"{str(exc).rstrip('.')}{kept}.",
                    "library_id": record.id if record is not None else None}
        written_ms = (time.perf_counter() - started) * 1e3 - kept_ms
        timings = {k: round(v, 1) for k, v in result.timings_ms.items()}
        timings.update(engine=round(rendered.engine_ms, 1), finish=round(rendered.finish_ms, 1),
                       library=round(kept_ms, 1), write=round(written_ms, 1))
        return {"status": "ok", "reason": None, "sidecar": sidecar_path(out).name,
                "library_id": record.id if record is not None else None,
                "seed": result.seed, "seconds": round(result.seconds, 6),
                "timings_ms": timings}


def _raw_writer(result: Any, record: Any, fmt: str):
    """The take as the model made it: a copy of the library's file when that is the same
    16-bit WAV (it carries the embedded note), else the PCM written in `fmt`."""
    if record is not None and fmt == "wav16" and not record.missing:
        from engines.cli.output import copy_temp

        return lambda target: copy_temp(record.audio_path, target)
    from engines.audio_io.writing import write_audio_temp

    return lambda target: write_audio_temp(target, result.pcm, fmt)


def _note(result: Any, record: Any, finished: Any) -> str:
    from engines.store.wavmeta import build_comment

    return build_comment({"prompt": result.request.prompt, "seed": result.seed,
                          "model": result.request.model,
                          "decoder_tier": getattr(result, "codec_tier", None) or None,
                          "library_id": record.id if record is not None else None,
                          "finish": finished.note()})
