"""Compare tiers (issue 14): the selected take decoded again through every other codec tier that
is installed and runs here - the very same latents, no new sampling - each added to the session
right after it as "<name> [<tier> tier]", so Up/Down flips between them from the same place
(app.takes.controller keeps the playhead inside a take's tier group).

The decodes run on the one GPU worker, as a Task (engines live on that thread only); which tiers
to decode is asked there too, of the catalog the Generator that made the take uses.
"""

from __future__ import annotations

import logging
import re

from PySide6.QtCore import QObject, Signal

from app.common.displaydata import for_result
from app.common.expected_errors import LIBRARY_ERRORS
from app.common.gpu_jobs import task_job
from app.common.gpu_service import GpuService
from app.common.notifier import Notifier
from app.common.own_jobs import OwnJobs
from app.common.session import TakeModel
from app.common.session_take import Take
from app.common.tiers import tier_words
from app.generate.advanced_group import AdvancedGroup
from engines.catalog import tier_choice
from engines.errors import CancelledError, StudioError

log = logging.getLogger(__name__)

_TIER_SUFFIX = re.compile(r"\s*\[[\w-]+ tier\]$")


def compare_name(take: Take, tier: str) -> str:
    """"coin pickup [coarse tier]"; a tier take's own suffix is replaced, not stacked."""
    return f"{_TIER_SUFFIX.sub('', take.title())} [{tier} tier]"


def refusal(take: Take | None) -> str | None:
    """Why the take cannot be compared, in one sentence; None when it can."""
    if take is None:
        return "Select a take in the session to compare its codec tiers."
    if take.imported:
        return ("That is imported audio; only takes generated in this session can be decoded "
                "through another codec tier.")
    latents = getattr(take.result, "latents", None)
    if latents is None or getattr(latents, "size", 0) == 0:
        return ("This take has no latents to decode again (only takes made in this session "
                "keep them); generate it again to compare tiers.")
    return None


def decode_other_tiers(worker, result, report, cancel,
                       name_of=None) -> list[tuple[object, dict, int | None]]:
    """On the GPU worker: `result` through every other available codec tier, each with its
    display data (app.common.displaydata) and its library id, in the decoder's tier order.
    Each is kept in the library as `name_of(tier)` (every session take is: a restart brings
    the session back from there); one the library refuses stays in the session only."""
    generator = worker.generator()
    req = result.request
    # through the module, so a test can stand in for the catalog's answer
    options = tier_choice.codec_tier_options(generator.catalog, req.model, req.decoder,
                                             req.precision, backend=result.backend)
    tiers = [o.name for o in options if o.available and o.name != result.codec_tier]
    if not tiers:
        raise StudioError(f"No other codec tier is installed that runs here, so there is "
                          f"nothing to compare the {result.codec_tier or 'current'} tier with.")
    compared = []
    for tier in tiers:
        if cancel.is_set():
            raise CancelledError()
        report(f"Decoding through the {tier} codec tier...")
        again = generator.decode_with_tier(result, tier, cancel.is_set)
        compared.append((again, for_result(again), keep(worker, again, name_of, tier)))
    return compared


def keep(worker, result, name_of, tier: str) -> int | None:
    """`result` kept in the worker's library; its id, or None (logged) when it was not."""
    try:
        library = worker.library() if name_of is not None else None
        if library is None:
            return None
        return library.add(result, name=name_of(tier)).id
    except LIBRARY_ERRORS:  # the comparison itself worked: it stays in the session
        log.warning("the %s tier's take could not be kept in the library", tier, exc_info=True)
        return None


class CompareTiersController(OwnJobs, QObject):
    """Compare tiers (the button of the generation panel's Advanced group; the Take menu's and
    the takes list's items are connected by app.shell.studio), and that group's line saying
    which tiers and engine files made the selected take (the status bar stays in plain
    words)."""

    libraryChanged = Signal()  # the compared takes were kept in the library

    def __init__(self, advanced: AdvancedGroup, notifier: Notifier, session: TakeModel,
                 gpu: GpuService, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.notifier = notifier
        self.session = session
        self.gpu = gpu
        self.advanced = advanced
        self.pending: dict[int, Take] = {}  # task id -> the take being compared
        advanced.compare_tiers_button.clicked.connect(self.compare_current)
        session.list.currentItemChanged.connect(self._show_details)
        self.listen_to(gpu)

    def _show_details(self, *_args) -> None:
        take = self.session.current_take()
        self.advanced.show_details(take.engine_details() if take is not None else "")

    def compare_current(self) -> bool:
        """Start decoding the selected take through the other tiers; False after saying why
        it cannot be done."""
        take = self.session.current_take()
        why = refusal(take)
        if why is None and (self.gpu.host is None or self.gpu.busy or self.pending):
            why = "The graphics card is busy; compare tiers when it is done."
        if why is not None:
            self.notifier.status(why)
            return False
        worker, result = self.gpu.worker, take.result

        def task(report, cancel):
            return decode_other_tiers(worker, result, report, cancel,
                                      lambda tier: compare_name(take, tier))

        key = self.gpu.submit(task_job(task, "Comparing tiers"))
        self.pending[key] = take
        self.notifier.status(f"Decoding \"{take.title()}\" through the other codec tiers...")
        return True

    def _report(self, text: str) -> None:
        self.notifier.status(text)

    def _done(self, task_id: int, compared) -> None:
        take = self.pending.pop(task_id, None)
        if take is None or take.take_id not in self.session.takes:
            return  # someone else's task, or the take was removed meanwhile
        group = take.tier_group if take.tier_group is not None else take.take_id
        take.tier_group = group
        self.session.show_row(take)  # its row now says its tier, beside the others'
        anchor, added = take, []
        for result, display, library_id in compared:
            tier = result.codec_tier
            sibling = Take(prompt=take.prompt, pcm=result.pcm, seed=result.seed,
                           model=take.model, result=result, name=compare_name(take, tier),
                           init_path=take.init_path, display=display, library_id=library_id,
                           quality=list(getattr(result, "quality", []) or []),
                           variation=take.variation, tier_group=group)
            # the first one is selected: heard at once, from where the original was
            self.session.add_take(sibling, select=not added, after=anchor)
            anchor = sibling
            added.append(tier)
        if any(library_id is not None for _result, _display, library_id in compared):
            self.libraryChanged.emit()
        names = ", ".join(f"the {tier} tier" for tier in added)
        self.notifier.status(f"Added {names} of \"{_TIER_SUFFIX.sub('', take.title())}\" "
                             f"right after it: the same latents through another codec; "
                             f"Up/Down flips between them from the same place.")

    def _failed(self, task_id: int, message: str) -> None:
        if self.pending.pop(task_id, None) is not None:
            self.notifier.error(tier_words(message))
