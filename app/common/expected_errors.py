"""The failures a controller expects from the parts it calls, caught by name.

A handler catches what the call is meant to raise and turns it into one sentence; anything else is
a bug, and it travels on to the slot's safety net (app.shell.safety_net), which logs the
traceback and says one sentence too. So a bug is never dressed up as "could not save the tags".
"""

from __future__ import annotations

import sqlite3

from app.common.output_device import PlaybackUnavailable
from engines.errors import StudioError

# The settings file and the data folder: DataFolderError (a StudioError) when the folder cannot
# be made, OSError when the file cannot be written, ValueError for a value the engine refuses.
SETTINGS_ERRORS: tuple[type[Exception], ...] = (StudioError, OSError, ValueError)

# The local library (engines.store): LibraryError and the other StudioErrors, SQLite's own errors
# where a query meets a locked or damaged database, OSError for the take files beside it, and
# ValueError for a label or value it refuses.
LIBRARY_ERRORS: tuple[type[Exception], ...] = (StudioError, sqlite3.Error, OSError, ValueError)

# The player (app.common.playback): PlaybackUnavailable is its one sentence for a device that
# is missing or went away; ValueError for audio of a shape it cannot play.
PLAYBACK_ERRORS: tuple[type[Exception], ...] = (PlaybackUnavailable, ValueError)

# Reading or writing a sound file: soundfile raises its LibsndfileError (a RuntimeError), the
# engines' readers AudioFileError (a StudioError), the file system OSError.
FILE_ERRORS: tuple[type[Exception], ...] = (StudioError, OSError, RuntimeError, ValueError)

# The model catalog and the models folder: ModelUnavailableError and DataFolderError (both
# StudioErrors), OSError from a folder it lists, ValueError for a name or tier it refuses.
CATALOG_ERRORS: tuple[type[Exception], ...] = (StudioError, OSError, ValueError)
