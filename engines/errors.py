"""Errors a user can meet. Each carries one sentence: what happened and what to do; the what to
do is a structured Remedy (in an Advice) that each front end words its own way."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from string import Formatter


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


SETTING, VALUE, FILE, COMMAND = "setting", "value", "file", "command"


@dataclass(frozen=True)
class Remedy:
    """What a user can do about an error, in no front end's words: change a `setting`, give a
    setting one of `values` (`value`), pick a `file` for a setting, or run a `command` (key
    "models download", "models build", "models token", "demo once") on `values` (model sets).
    Each front end words it its own way: the CLI as flags and commands (engines.cli.words),
    the window as the control's label and where it is (app.common.remedy_words), a sound list as its
    columns (engines.batch.items)."""

    kind: str
    key: str
    values: tuple[str, ...] = ()
    backend: str | None = None  # a download's files: "onnxruntime" for ONNX graphs

    @classmethod
    def setting(cls, key: str) -> Remedy:
        return cls(SETTING, key)

    @classmethod
    def value(cls, key: str, *values: str) -> Remedy:
        return cls(VALUE, key, tuple(values))

    @classmethod
    def file(cls, key: str) -> Remedy:
        return cls(FILE, key)

    @classmethod
    def command(cls, key: str, *values: str, backend: str | None = None) -> Remedy:
        return cls(COMMAND, key, tuple(values), backend)

    def plain(self) -> str:
        """Words no front end owns: what `str()` of an Advice (and so the log file) shows."""
        name = self.key.replace("_", " ")
        if self.kind == VALUE:
            return f"{name} {' or '.join(self.values)}"
        if self.kind == FILE:
            return f"an {name} file"
        if self.kind == COMMAND:
            what = " ".join(self.values)
            onnx = " (ONNX graphs)" if self.backend == "onnxruntime" else ""
            return f"the {name} command{' for ' + what if what else ''}{onnx}"
        return name


Words = Callable[[Remedy], str] | Mapping[str, str]


class Advice(str):
    """A sentence with remedies: `template` is a str.format template with one numbered field
    per remedy ("...; use {0} or {1}."; a lone "{setting}" is field 0). As a str it reads in
    plain words (Remedy.plain); `worded` gives it in a front end's words, so no engine module
    writes a flag or a control's label. Used as an error's message, a reason, a warning."""

    template: str
    remedies: tuple[Remedy, ...]

    def __new__(cls, template: str, *remedies: Remedy | str) -> Advice:
        fixes = tuple(r if isinstance(r, Remedy) else Remedy.setting(r) for r in remedies)
        numbered = _renumber(template, 0)
        advice = super().__new__(cls, numbered.format(*(r.plain() for r in fixes)))
        advice.template, advice.remedies = numbered, fixes
        return advice

    def __reduce__(self) -> tuple:  # worker processes send warnings back pickled
        return (Advice, (self.template, *self.remedies))

    @property
    def setting(self) -> str:
        """The key of the first remedy (the one a one-remedy sentence names)."""
        return self.remedies[0].key

    def worded(self, words: Words) -> str:
        """The sentence with each remedy in `words`: a function of the remedy, or a table of
        setting key -> words (a remedy it lacks keeps its plain words)."""
        if callable(words):
            said = [words(r) for r in self.remedies]
        else:
            said = [words.get(r.key, r.plain()) for r in self.remedies]
        return self.template.format(*said)

    def edited(self, edit: Callable[[str], str]) -> Advice:
        """The same remedies in a template changed by `edit` (which must keep its fields)."""
        return Advice(edit(self.template), *self.remedies)


def join(*parts: object) -> str:
    """The parts (text, Advice, Remedy) as one sentence; an Advice when any part carries a
    remedy, so remedies survive being embedded in a longer sentence. Text parts are taken as
    is (braces in a path need no escaping):
    join(f"{model} needs '{name}'; download it with ", Remedy.command(...), ".")."""
    if not any(isinstance(p, (Advice, Remedy)) for p in parts):
        return "".join(str(p) for p in parts)
    template: list[str] = []
    remedies: list[Remedy] = []
    for part in parts:
        if isinstance(part, Remedy):
            template.append(f"{{{len(remedies)}}}")
            remedies.append(part)
        elif isinstance(part, Advice):
            template.append(_renumber(part.template, len(remedies)))
            remedies += part.remedies
        else:
            template.append(str(part).replace("{", "{{").replace("}", "}}"))
    return Advice("".join(template), *remedies)


def worded(text: object, words: Words) -> str:
    """`text` (a sentence, or an error whose message is one) in a front end's words when it
    carries remedies, else as is."""
    if isinstance(text, BaseException) and len(text.args) == 1:
        if isinstance(text.args[0], Advice):
            text = text.args[0]
    return text.worded(words) if isinstance(text, Advice) else str(text)


def _renumber(template: str, offset: int) -> str:
    """`template` with its fields numbered from `offset` ("{}" and "{setting}" count as the
    next and the first field)."""
    out, auto = [], 0
    for literal, field, spec, conversion in Formatter().parse(template):
        out.append(literal.replace("{", "{{").replace("}", "}}"))
        if field is None:
            continue
        if field == "":
            index, auto = auto, auto + 1
        elif field == "setting":
            index = 0
        else:
            index = int(field)
        conv = f"!{conversion}" if conversion else ""
        out.append(f"{{{index + offset}{conv}{':' + spec if spec else ''}}}")
    return "".join(out)
