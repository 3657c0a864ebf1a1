"""Opening the window: the data folder first, then the window, then the event loop.

Whatever stops the window from opening (a data folder that cannot be created, a library
folder in the way) is one sentence in a message box and exit status 2, the same status the
command line uses for a refusal; a bug is one sentence and status 1. Never a traceback.
"""

from __future__ import annotations

import logging
import sys

from PySide6.QtWidgets import QApplication, QMessageBox

from app.common.notifier import user_sentence
from app.common.theme import apply_theme
from app.shell.safety_net import SafetyNet, log_hint
from app.shell.secret_log import mask_secrets_in_log
from app.shell.studio import build_main_window
from engines import paths
from engines.error_sentences import sentence, shown
from engines.errors import StudioError

log = logging.getLogger(__name__)

EXIT_REFUSED = 2
EXIT_FAILED = 1
TITLE = "SA3 Studio"


def tell_fatal(text: str) -> None:
    """The sentence that explains why the window cannot open (tests replace this)."""
    QMessageBox.critical(None, TITLE, text)


def data_folder_problem() -> str | None:
    """One sentence when the data folder cannot be created or used, else None."""
    try:
        paths.data_dir()
    except StudioError as exc:  # engines.paths names the folder and SA3_STUDIO_HOME
        return str(exc)
    except OSError as exc:  # an engines.paths that still lets the OS error through
        folder = shown(exc.filename) if exc.filename else f"(${paths.HOME_ENV})"
        return sentence(f"SA3 Studio cannot create its data folder {folder}", exc,
                        advice=f"set {paths.HOME_ENV} to a folder you can write to")
    return None


def run_gui(argv: list[str] | None = None) -> int:
    """Open the window and run the Qt event loop; returns the exit status."""
    app = QApplication.instance() or QApplication([sys.argv[0], *(argv or [])])
    app.setApplicationName(TITLE)
    try:  # before anything is shown, the refusal boxes below included
        apply_theme(app)
    except Exception:  # noqa: BLE001 - a plain-looking window is no reason to refuse one
        log.warning("could not apply the theme", exc_info=True)
    problem = data_folder_problem()
    if problem is not None:
        _refuse(problem)
        return EXIT_REFUSED
    try:
        paths.setup_logging("sa3-studio.gui")
        mask_secrets_in_log()  # no connection line's password in the log file
    except Exception:  # noqa: BLE001 - no log file is no reason to refuse the window
        log.warning("could not set up the log file", exc_info=True)
    try:
        window = build_main_window()
    except (StudioError, OSError) as exc:
        log.info("the window could not open", exc_info=True)
        _refuse(user_sentence("SA3 Studio could not open its window", exc))
        return EXIT_REFUSED
    except Exception as exc:  # noqa: BLE001 - a bug: one sentence, the traceback to the log
        log.exception("building the window failed")
        _refuse(sentence("SA3 Studio could not open its window", exc,
                         advice=f"the details are in {log_hint()}"))
        return EXIT_FAILED
    net = SafetyNet(window.studio.notifier).install()
    try:
        window.show()
        return app.exec()
    finally:
        # The loop may end without the window closing (Ctrl+C in the terminal quits it):
        # every thread and pool still ends here, before Qt deletes the objects that own them.
        window.studio.shutdown()
        net.uninstall()


def _refuse(text: str) -> None:
    log.error("%s", text)
    try:
        tell_fatal(text)
    except Exception:  # noqa: BLE001 - no display at all: the terminal is all there is
        print(f"error: {text}", file=sys.stderr)
