"""Where SA3 Studio keeps its data, and the logging setup shared by the GUI and the CLI.

Everything lives under one data folder: $SA3_STUDIO_HOME when set (tests and portable installs),
otherwise the platform's user data folder. Subfolders are created on first use.
"""

from __future__ import annotations

import functools
import importlib.resources
import importlib.util
import logging
import logging.handlers
import os
import sys
from pathlib import Path

import platformdirs

from engines.error_sentences import os_reason, printable
from engines.errors import StudioError
from engines.private_files import PRIVATE_FILE_MODE, PRIVATE_FOLDER_MODE, make_private
from engines.secret_text import MaskSecrets

log = logging.getLogger(__name__)

HOME_ENV = "SA3_STUDIO_HOME"
APP_NAME = "SA3 Studio"
LOG_FILE_NAME = "sa3-studio.log"
LOG_FILE_BYTES = 1_000_000
LOG_FILE_BACKUPS = 3

_REPO_ROOT = Path(__file__).resolve().parent.parent
# resources/ as installed (pyproject's package-dir maps the folder to this package name)
RESOURCES_PACKAGE = "sa3_studio_resources"


class DataFolderError(StudioError):
    """The data folder (or one of its subfolders) cannot be created or used."""


class ResourceMissingError(StudioError):
    """A file SA3 Studio ships with (demo recipes, theme, icons) is not where it belongs: the
    install is incomplete, which no setting fixes."""


def data_root() -> Path:
    """Where the data folder is meant to be; nothing is created."""
    override = os.environ.get(HOME_ENV)
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def _make_folder(path: Path) -> Path:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise DataFolderError(_folder_sentence(path, err)) from err
    if not path.is_dir():  # exist_ok hides a file of that name on some systems
        raise DataFolderError(_folder_sentence(path, FileExistsError(17, "File exists")))
    return path


def _folder_sentence(path: Path, err: OSError) -> str:
    happened, _ = os_reason(err)
    return (f"SA3 Studio cannot use its data folder {printable(path)} ({happened}); set "
            f"{HOME_ENV} to a folder you can write to, or fix that one.")


def data_dir() -> Path:
    """The root data folder, created if missing; DataFolderError (one sentence naming the
    folder and SA3_STUDIO_HOME) when it cannot be."""
    return _make_folder(data_root())


def _subdir(name: str) -> Path:
    return _make_folder(data_dir() / name)


def models_dir() -> Path:
    """Downloaded or built engines and ONNX files (`models/<sm_XX>/<subdir>/...`)."""
    return _subdir("models")


def library_dir() -> Path:
    """The clip library: rendered audio, its metadata and the library database."""
    return _subdir("library")


def library_path() -> Path:
    """Where the library folder is (or will be), without creating or checking it: for refusing
    outputs inside it, which must work even where it cannot be made."""
    return data_root() / "library"


def logs_dir() -> Path:
    """Log files; tracebacks end up here, never in front of the user. Private (0700): a log
    may say more about the user's work than anyone else on this computer should read."""
    folder = _subdir("logs")
    make_private(folder, PRIVATE_FOLDER_MODE)  # an older release made it 0755
    return folder


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating log file readable by its owner alone (0600), the rotated ones too (a
    rotation renames a file, which keeps its mode, and opens a new one through here)."""

    def _open(self):  # noqa: ANN202 - the stream type logging.FileHandler._open returns
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE_MODE)
        try:
            make_private(Path(self.baseFilename), PRIVATE_FILE_MODE)
            return open(fd, self.mode, encoding=self.encoding, errors=self.errors)  # noqa: SIM115
        except BaseException:
            os.close(fd)
            raise


def cache_dir() -> Path:
    """Rebuildable data (demo model graphs, waveform overviews); safe to delete."""
    return _subdir("cache")


@functools.cache
def resources_dir() -> Path:
    """The folder of the files SA3 Studio ships with (icons, theme, demo recipe data).

    Installed (a wheel, an editable install, a PyInstaller bundle): the package
    `sa3_studio_resources`, found with importlib.resources. A clone run without installing:
    the repository's resources/ folder. Nothing is checked here (a missing icon costs a
    picture, not the window); `resource_file` is for files that cannot be done without."""
    try:
        found = importlib.util.find_spec(RESOURCES_PACKAGE) is not None
    except (ImportError, ValueError):  # a broken install: treat it as not installed
        found = False
    if found:
        folder = importlib.resources.files(RESOURCES_PACKAGE)
        if isinstance(folder, Path):  # a folder on disk (every way SA3 Studio is installed)
            return folder
        # a zip import: its files cannot be handed out as paths
        log.warning("the resources package %s is not a folder on disk (%r); using %s",
                    RESOURCES_PACKAGE, folder, _REPO_ROOT / "resources")
    return _REPO_ROOT / "resources"


def resource_file(*parts: str) -> Path:
    """resources_dir()/parts..., which must be a file: ResourceMissingError (one sentence:
    the file is missing, reinstall) when it is not, instead of a "No such file" that a caller
    would word as a disk problem."""
    path = resources_dir().joinpath(*parts)
    if not path.is_file():
        name = "/".join(parts)
        raise ResourceMissingError(
            f"SA3 Studio's resource file {name} is missing (looked in "
            f"{printable(resources_dir())}); the installation is incomplete: reinstall SA3 "
            f"Studio.")
    return path


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
    # A log record that cannot be written (full disk, a closed stream) must not print
    # "--- Logging error ---" and a traceback over the sentence the user is reading.
    logging.raiseExceptions = False
    root = logging.getLogger()
    for handler in _installed:
        root.removeHandler(handler)
        handler.close()
    _installed.clear()

    console = logging.StreamHandler(sys.stderr)
    console.setLevel(console_level)
    console.setFormatter(_NoTracebackFormatter("%(levelname)s: %(message)s"))
    _installed.append(console)

    file_error: OSError | DataFolderError | None = None
    try:
        # backslashreplace: a path with bytes that are not UTF-8 (a surrogate escape in a str)
        # must reach the log as \xff, not end in "--- Logging error ---".
        file_handler = PrivateRotatingFileHandler(
            logs_dir() / LOG_FILE_NAME,
            maxBytes=LOG_FILE_BYTES,
            backupCount=LOG_FILE_BACKUPS,
            encoding="utf-8",
            errors="backslashreplace",
        )
    except (OSError, DataFolderError) as err:
        file_error = err
    else:
        file_handler.setLevel(logging.INFO)
        file_handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s")
        )
        _installed.append(file_handler)

    for handler in _installed:
        # no connection line's password reaches the log file or the terminal, whoever logs it
        handler.addFilter(MaskSecrets())
        root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > logging.INFO:
        root.setLevel(logging.INFO)

    logger = logging.getLogger(name)
    global _log_file
    _log_file = None if file_error is not None else logs_dir_path() / LOG_FILE_NAME
    if file_error is not None:
        logger.warning(
            "Cannot write the log file (%s); messages go to the terminal only. "
            "Set %s to a writable folder to keep a log.",
            file_error,
            HOME_ENV,
        )
    return logger


_log_file: Path | None = None


def logs_dir_path() -> Path:
    """Where log files go, without creating anything (safe inside error handlers)."""
    try:
        return data_root() / "logs"
    except Exception:  # platformdirs on a broken environment: an error handler must not raise
        return Path("logs")


def log_file() -> Path | None:
    """The log file in use, or None when logs go only to the terminal."""
    return _log_file
