"""Where SA3 Studio keeps its data, and the logging setup shared by the GUI and the CLI.

Everything lives under one data folder: $SA3_STUDIO_HOME when set (tests and portable installs),
otherwise the platform's user data folder. Subfolders are created on first use.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys
from pathlib import Path

import platformdirs

HOME_ENV = "SA3_STUDIO_HOME"
APP_NAME = "SA3 Studio"
LOG_FILE_NAME = "sa3-studio.log"
LOG_FILE_BYTES = 1_000_000
LOG_FILE_BACKUPS = 3

_REPO_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """The root data folder, created if missing."""
    override = os.environ.get(HOME_ENV)
    if override:
        root = Path(override).expanduser()
    else:
        root = Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
    root.mkdir(parents=True, exist_ok=True)
    return root


def _subdir(name: str) -> Path:
    path = data_dir() / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def models_dir() -> Path:
    """Downloaded or built engines and ONNX files (`models/<sm_XX>/<subdir>/...`)."""
    return _subdir("models")


def library_dir() -> Path:
    """The clip library: rendered audio, its metadata and the library database."""
    return _subdir("library")


def logs_dir() -> Path:
    """Log files; tracebacks end up here, never in front of the user."""
    return _subdir("logs")


def cache_dir() -> Path:
    """Rebuildable data (demo model graphs, waveform overviews); safe to delete."""
    return _subdir("cache")


def resources_dir() -> Path:
    """The repository's resources/ folder (icons, styles, demo recipe data)."""
    return _REPO_ROOT / "resources"


class _NoTracebackFormatter(logging.Formatter):
    """One line per record: users read the sentence, the traceback goes to the log file."""

    def format(self, record: logging.LogRecord) -> str:
        saved = record.exc_info, record.exc_text, record.stack_info
        # exc_text may already be cached by the file handler; hide it too.
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        try:
            return super().format(record)
        finally:
            record.exc_info, record.exc_text, record.stack_info = saved


_installed: list[logging.Handler] = []


def setup_logging(name: str, console_level: int = logging.WARNING) -> logging.Logger:
    """Send INFO+ (with tracebacks) to the rotating log file and `console_level`+ (one line) to
    stderr. Command-line tools print their own one-line messages and pass logging.CRITICAL, so
    a failure never shows up twice.

    Safe to call more than once: the handlers it installed before are replaced, so a changed
    $SA3_STUDIO_HOME takes effect. Returns the logger called `name`.
    """
    root = logging.getLogger()
    for handler in _installed:
        root.removeHandler(handler)
        handler.close()
    _installed.clear()

    console = logging.StreamHandler(sys.stderr)
    console.setLevel(console_level)
    console.setFormatter(_NoTracebackFormatter("%(levelname)s: %(message)s"))
    _installed.append(console)

    file_error: OSError | None = None
    try:
        file_handler = logging.handlers.RotatingFileHandler(
            logs_dir() / LOG_FILE_NAME,
            maxBytes=LOG_FILE_BYTES,
            backupCount=LOG_FILE_BACKUPS,
            encoding="utf-8",
        )
    except OSError as err:
        file_error = err
    else:
        file_handler.setLevel(logging.INFO)
        file_handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s")
        )
        _installed.append(file_handler)

    for handler in _installed:
        root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > logging.INFO:
        root.setLevel(logging.INFO)

    logger = logging.getLogger(name)
    if file_error is not None:
        logger.warning(
            "Cannot write the log file (%s); messages go to the terminal only. "
            "Set %s to a writable folder to keep a log.",
            file_error,
            HOME_ENV,
        )
    return logger
