"""One rendered take into the output folder: kept in the library first (its id goes into the
sidecar and the file's metadata), then delivered by the one delivery layer (engines.delivery):
the audio and its sidecar written to temporaries and moved into place together, so a crash
leaves either both files or the earlier ones.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from engines.batch.library_keeper import LibraryKeeper
from engines.batch.plan import PlannedTake
from engines.batch.workers import RenderedTake
from engines.delivery.deliver import deliver
from engines.delivery.delivery_take import from_result
from engines.delivery.sidecar import sidecar_path
from engines.error_sentences import path_text
from engines.errors import StudioError


class TakeWriter:
    def __init__(self, out_dir: Path, list_path: Path, keeper: LibraryKeeper) -> None:
        self.out_dir = out_dir
        self._list = path_text(list_path.resolve())
        self._keeper = keeper

    def write(self, take: PlannedTake, rendered: RenderedTake) -> dict[str, Any]:
        """The manifest changes for the take: status ok, or failed with the reason."""
        result, finished = rendered.result, rendered.finished
        out = self.out_dir / take.file
        started = time.perf_counter()
        labels = take.labels
        if labels.catid and not labels.fx_name:  # the FXName its UCS name carries
            labels = replace(labels, fx_name=take.spec.name)
        # Kept under its sound's name: its number in the row's variations is kept beside it
        # (a name template's {n}), so a later export never says the number twice.
        record = self._keeper.keep(result, name=take.spec.name,
                                   init_audio=take.spec.init_audio,
                                   category=take.spec.category,
                                   finishing=finished.record() if finished else None,
                                   labels=labels,
                                   variation=(take.variation, take.spec.variations))
        kept_ms = (time.perf_counter() - started) * 1e3
        batch = {"list": self._list, "where": take.where, "name": take.spec.name,
                 "variation": take.variation, "category": take.spec.category or None,
                 "params_hash": take.params_hash}
        try:
            delivery = from_result(result, record=record, init=take.spec.init_entry,
                                   finished=finished, name=out.stem).with_labels(take.labels)
            deliver(delivery, out, fmt=take.fmt, extra={"batch": batch})
        except StudioError as exc:
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
