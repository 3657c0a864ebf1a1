"""Errors a user can meet. Each carries one sentence: what happened and what to do."""

from __future__ import annotations


class StudioError(Exception):
    """Base class: `str(err)` is shown to the user as is, never a traceback."""


class RequestError(StudioError, ValueError):
    """A generation parameter is out of range or inconsistent."""


class AudioFileError(StudioError):
    """An audio file could not be read or written."""


class ModelUnavailableError(StudioError):
    """The chosen model set cannot run here (missing files, wrong arch, no backend)."""


class BackendError(StudioError):
    """An engine failed while generating."""


class CancelledError(StudioError):
    """The user cancelled a generation."""

    def __init__(self, message: str = "Generation cancelled; nothing was written.") -> None:
        super().__init__(message)
