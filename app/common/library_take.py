"""How a library record becomes a session Take: its audio, and the quality flags, rating and
finishing chain the library keeps for it. Loading a take from the Library page uses it, and so
does bringing the last session back at start (app.shell.session_restore), before the Library
page's code is loaded."""

from __future__ import annotations

import logging

from app.common.session_take import Take
from engines.finish.settings import FinishSettings

log = logging.getLogger(__name__)


def take_from_record(record, pcm) -> Take:
    """A session take of a library record and its audio (int16 (N, 2)), with the quality
    flags, rating and finishing chain the library keeps for it."""
    take = Take(prompt=record.name or record.prompt, pcm=pcm,
                seed=None if record.model == "imported" else record.seed,
                model=record.model, library_id=record.id, rating=record.rating)
    restore_finishing(take, record)
    return take


def restore_finishing(take: Take, record) -> None:
    """The quality flags and finishing chain the library keeps for a take (when it keeps them:
    older libraries do not). A chain that cannot be read is left out: the take is raw then."""
    take.quality = [str(flag) for flag in (getattr(record, "quality", None) or [])]
    stored = getattr(record, "finishing", None)
    if not isinstance(stored, dict) or not isinstance(stored.get("chain"), dict):
        return
    try:
        take.finishing = FinishSettings.from_dict(stored["chain"])
    except ValueError:  # RequestError: a damaged record: the raw take still works
        log.info("ignoring the stored finishing chain of take %s", record.id, exc_info=True)
        return
    loop = stored.get("loop")
    if take.finishing.loop and isinstance(loop, dict):
        take.loop_recipe = {"method": loop.get("method"), "seed": loop.get("seed")}
