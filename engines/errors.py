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


class Advice(str):
    """A sentence whose remedy names a setting, e.g. "pass {setting} (...)" with setting
    "init_audio". As a str it reads as the command line says it ("pass --init-audio FILE");
    `worded` lets another front end name the setting its own way (a sound list's column).
    Used as a RequestError's message and as a request's warning."""

    CLI_WORDS = {"init_audio": "--init-audio FILE", "cfg": "--cfg",
                 "loop_method": "make it by crossfade (--loop-method crossfade)"}

    template: str
    setting: str

    def __new__(cls, template: str, setting: str) -> Advice:
        text = template.format(setting=cls.CLI_WORDS.get(setting, setting))
        advice = super().__new__(cls, text)
        advice.template, advice.setting = template, setting
        return advice

    def __reduce__(self) -> tuple:  # worker processes send warnings back pickled
        return (Advice, (self.template, self.setting))

    def worded(self, words: dict[str, str]) -> str:
        """The sentence with the setting named as `words` names it (else as is)."""
        return self.template.format(setting=words.get(self.setting, self.setting))
