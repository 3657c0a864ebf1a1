"""Downloads for the Models dialog, on their own QThread (network and disk only): every
failure comes back through `failed` as one sentence, never as an exception in a slot."""

from __future__ import annotations

import logging
import threading

from PySide6.QtCore import QObject, Signal, Slot

from app.common.notifier import user_sentence
from app.common.remedy_words import MODELS
from engines.errors import StudioError
from engines.models import download as dl

log = logging.getLogger(__name__)


class DownloadWorker(QObject):
    """Runs one download plan on a plain thread; cancel with the event."""

    progress = Signal(str, int, int, int, int)
    planned = Signal(object)
    finished = Signal(list)
    failed = Signal(str)

    def __init__(self) -> None:
        super().__init__()
        self.cancel = threading.Event()

    @Slot(object)
    def plan(self, request: dict) -> None:
        try:
            self.planned.emit(dl.plan_download(request["sets"], request["arch"],
                                               request["precisions"], request["fmt"],
                                               request["models_dir"]))
        except StudioError as exc:
            self.failed.emit(str(exc))
        except Exception as exc:  # noqa: BLE001 - top of the download thread: one sentence, the log
            log.info("planning the download failed", exc_info=True)
            self.failed.emit(user_sentence("Could not list the files on the hub", exc, MODELS))

    @Slot(object, object)
    def run(self, plan, models_dir) -> None:
        self.cancel.clear()
        try:
            dl.check_disk_space(plan, models_dir)
            written = dl.download(plan, models_dir, progress=self.progress.emit,
                                  cancel=self.cancel, token=dl.resolve_token())
            self.finished.emit([str(p) for p in written])
        except StudioError as exc:
            self.failed.emit(str(exc))
        except Exception as exc:  # noqa: BLE001 - top of the download thread: one sentence
            log.info("download failed", exc_info=True)
            self.failed.emit(user_sentence("The download failed", exc, MODELS))
