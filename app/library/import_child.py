"""The window's sound folder import, in a process of its own:

    python -m app.library.import_child LIBRARY_FOLDER [SOUND_FOLDER...]   (none: rescan all)

Why a process: reading thousands of files and computing their sound embeddings is CPU work in
numpy and BLAS, whose threads took both cores of a small machine and whose calls held the GIL
the window needs to paint (stalls of over a second while 2,000 files were imported). Here it
runs at a lower priority, with one BLAS thread, and the window's process keeps its GIL; the
window's import thread only relays what this prints (app.library.import_worker).

No Qt here. It prints one JSON object per line on stdout - {"progress": {...}}, {"listed":
report}, {"done": [report, extras]} or {"error": sentence} - and stops between two files when
a line "cancel" arrives on stdin (what was done stays). Files are only ever read.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from dataclasses import asdict
from pathlib import Path

# The window's process never imports this module (it runs it: app.library.import_worker), so
# the importer loads at the top. Its numeric libraries get one thread each from the
# environment the window starts it with (ONE_THREAD there, read before numpy loads).
from engines.errors import StudioError
from engines.sound_import import import_folders, make_sound_extras
from engines.store.library import ClipLibrary

log = logging.getLogger(__name__)

NICE = 10  # below the window: the scheduler serves the GUI first on a busy machine


def _say(kind: str, value) -> None:
    sys.stdout.write(json.dumps({kind: value}) + "\n")
    sys.stdout.flush()


def _watch_stdin(cancel: threading.Event) -> None:
    """A line "cancel" (or the parent gone: end of input) stops the work between two files."""
    for line in sys.stdin:
        if line.strip() == "cancel":
            break
    cancel.set()


def run(library_root: Path, folders: list[Path] | None) -> int:
    cancel = threading.Event()
    threading.Thread(target=_watch_stdin, args=(cancel,), daemon=True).start()

    def progress(p) -> None:
        _say("progress", {"phase": p.phase, "done": p.done, "total": p.total})

    try:
        with ClipLibrary(library_root) as library:
            report = import_folders(library, folders, progress=progress, cancel=cancel)
            _say("listed", asdict(report))
            extras = None
            if not cancel.is_set():
                extras = make_sound_extras(library, progress=progress, cancel=cancel)
    except StudioError as exc:  # one sentence, made by the engine
        log.info("the import failed", exc_info=True)
        _say("error", str(exc))
        return 1
    # Anything else is a bug: its traceback goes to stderr, which the window logs, and the
    # window says so when no "done" came.
    _say("done", [asdict(report), None if extras is None else asdict(extras)])
    return 0


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        os.nice(NICE)
    except (AttributeError, OSError):  # (no nice on Windows; the GIL still is this one's own)
        log.info("could not lower the import process's priority", exc_info=True)
    if not argv:
        _say("error", "No library folder was given to the import process.")
        return 2
    folders = [Path(arg) for arg in argv[1:]] or None
    return run(Path(argv[0]), folders)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
