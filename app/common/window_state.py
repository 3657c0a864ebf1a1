"""What the window remembers between runs: its geometry, the column widths (a folded side
column stays folded), the last model, whether the generation panel's Advanced group was open,
the last finishing preset and the last folder a take was saved to. (The session itself - its
takes, prompt and settings - is app.common.session_memory's.)

Kept with QSettings in an INI file in the data folder (window.ini), so $SA3_STUDIO_HOME keeps
a test run or a portable install apart from the user's own, and a user can delete the file to
start over. The key names below are a contract with files already on users' disks: add keys,
never rename one. Nothing here may stop the window from opening or closing: a value that
cannot be read or used is skipped, a file that cannot be written is logged.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings
from PySide6.QtWidgets import QComboBox, QMainWindow, QSplitter

from engines import paths

log = logging.getLogger(__name__)

SETTINGS_FILE = "window.ini"
KEY_GEOMETRY = "window/geometry"
KEY_STATE = "window/state"
KEY_SPLITTER = "window/splitter"
KEY_MODEL = "generation/model"
KEY_PRESET = "finish/preset"
KEY_EXPORT_FOLDER = "export/folder"
KEY_ADVANCED = "generation/advanced"
KEY_LIBRARY_FOLDS = "window/libraryFolds"  # the side columns folded on the Library page


@dataclass
class Choices:
    """The remembered choices that belong to controllers rather than to the window's layout."""

    model: str | None = None  # a model set key (engines.catalog.MODEL_SETS)
    preset: str | None = None  # a finishing preset name
    export_folder: Path | None = None  # where Save As last saved a take
    advanced: bool = False  # the generation panel's Advanced group was open
    # the side columns (app.shell.columns indexes) the Library page had folded; None: never
    # arranged
    library_folds: frozenset[int] | None = None


def settings_path() -> Path:
    return paths.data_dir() / SETTINGS_FILE


def select_enabled(combo: QComboBox, data: str) -> bool:
    """Make the item whose data is `data` current, if it is there and enabled (a model that
    cannot run on this machine is not chosen just because it was chosen elsewhere)."""
    index = combo.findData(data)
    model = combo.model()
    item = model.item(index) if index >= 0 and hasattr(model, "item") else None
    if index < 0 or (item is not None and not item.isEnabled()):
        return False
    combo.setCurrentIndex(index)
    return True


class WindowState:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else settings_path()

    def _settings(self) -> QSettings:
        return QSettings(str(self.path), QSettings.Format.IniFormat)

    def save(self, window: QMainWindow, splitter: QSplitter, choices: Choices) -> bool:
        """Write everything; False (and a log line) when the file could not be written."""
        settings = self._settings()
        settings.setValue(KEY_GEOMETRY, window.saveGeometry())
        settings.setValue(KEY_STATE, window.saveState())
        settings.setValue(KEY_SPLITTER, splitter.saveState())
        for key, value in ((KEY_MODEL, choices.model), (KEY_PRESET, choices.preset),
                           (KEY_EXPORT_FOLDER, choices.export_folder)):
            if value:
                settings.setValue(key, str(value))
            else:
                settings.remove(key)
        settings.setValue(KEY_ADVANCED, "true" if choices.advanced else "false")
        if choices.library_folds is None:
            settings.remove(KEY_LIBRARY_FOLDS)
        else:
            settings.setValue(KEY_LIBRARY_FOLDS,
                              ",".join(str(index) for index in sorted(choices.library_folds)))
        settings.sync()
        if settings.status() != QSettings.Status.NoError:
            log.warning("could not write the window settings %s (%s)", self.path,
                        settings.status())
            return False
        return True

    def restore(self, window: QMainWindow, splitter: QSplitter) -> Choices:
        """Put back the geometry and column widths; the choices for the controllers."""
        settings = self._settings()
        if settings.status() != QSettings.Status.NoError:
            log.warning("could not read the window settings %s (%s)", self.path,
                        settings.status())
            return Choices()
        geometry = _bytes(settings.value(KEY_GEOMETRY))
        if geometry is not None:
            window.restoreGeometry(geometry)
        state = _bytes(settings.value(KEY_STATE))
        if state is not None:
            window.restoreState(state)
        layout = _bytes(settings.value(KEY_SPLITTER))
        if layout is not None:
            collapsible = splitter.childrenCollapsible()
            splitter.restoreState(layout)
            # the saved state carries the flag too; the window's own choice wins
            splitter.setChildrenCollapsible(collapsible)
        folder = _text(settings.value(KEY_EXPORT_FOLDER))
        return Choices(model=_text(settings.value(KEY_MODEL)),
                       preset=_text(settings.value(KEY_PRESET)),
                       export_folder=Path(folder) if folder and Path(folder).is_dir()
                       else None,
                       advanced=_text(settings.value(KEY_ADVANCED)) == "true",
                       library_folds=_folds(settings.value(KEY_LIBRARY_FOLDS)))


def _bytes(value) -> QByteArray | None:
    if isinstance(value, QByteArray) and not value.isEmpty():
        return value
    if isinstance(value, bytes | bytearray) and value:
        return QByteArray(bytes(value))
    return None  # missing, or edited by hand into something else


def _folds(value) -> frozenset[int] | None:
    """"0,2" -> {0, 2}; "" -> nothing folded; missing or edited into nonsense -> None."""
    if not isinstance(value, str):
        return None
    parts = [part.strip() for part in value.split(",") if part.strip()]
    if not all(part in ("0", "2") for part in parts):  # the foldable columns' indexes
        return None
    return frozenset(int(part) for part in parts)


def _text(value) -> str | None:
    return (value.strip() or None) if isinstance(value, str) else None
