"""One row of a sound list checked and turned into a RowSpec: every value parsed (a CSV cell is
text, a JSON value may already be a number), defaults from the command line filled in, the
init file found next to the list, and the whole request run through the same validation
`generate` uses, so a bad value is refused here with its line, not halfway through the batch.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from engines.adapters.choice import AdapterChoice
from engines.catalog import get_model_set
from engines.error_sentences import printable, sentence
from engines.errors import Advice, AudioFileError, RequestError
from engines.number_text import as_float, is_huge, json_int, short
from engines.provenance import init_entry
from engines.request import MAX_SEED, MAX_STEPS, GenerationRequest, validate_request
from engines.request_adapters import parse_adapter_cell
from engines.seeds import MAX_VARIATIONS, check_seed_run
from engines.text_display import blank_label_sentence, looks_blank

# How a remedy names a setting in a sound list: a column of the row, never a flag.
LIST_WORDS = {"init_audio": "an init_audio file in the row", "cfg": "the row's cfg",
              "lora": "the row's lora column",
              "lora_strength": "FILE:STRENGTH in the row's lora column",
              "loop_method": "make it by crossfade (loop_method crossfade in the row)"}
LOOP_METHODS = ("model", "crossfade")
_TRUE = {"1", "true", "yes", "y", "on", "x"}
_FALSE = {"0", "false", "no", "n", "off", ""}
_SPAN_SEPARATORS = re.compile(r"[\s,;]+")
_WHOLE = re.compile(r"[+-]?\d+")


class RowError(Exception):
    """A row that cannot be rendered; the message is one sentence starting with its place."""


@dataclass(frozen=True)
class RowDefaults:
    """What the command line gives rows that leave a value out."""

    model: str = "demo"
    precision: str | None = None
    codec_tier: str | None = None
    seconds: float | None = None
    steps: int = 8
    backend: str = "auto"


@dataclass(frozen=True)
class RowSpec:
    where: str
    name: str
    prompt: str
    negative_prompt: str
    model: str
    decoder: str | None
    precision: str | None
    seconds: float | None
    steps: int
    seed: int | None  # None: drawn at random, once for the row (variation k gets seed + k - 1)
    variations: int
    cfg: float
    apg: float
    init_audio: Path | None
    init_entry: dict | None  # path and SHA-256 of the init file, as the sidecar records it
    init_noise_level: float | None
    inpaint: tuple[tuple[float, float], ...]
    loop: bool | None  # None: as the command line's finishing says
    loop_method: str | None  # "model" or "crossfade"; None: as the command line says
    preset: str | None
    category: str  # a UCS CatID (checked against the user's UCS list) or a free tag
    backend: str
    codec_tier: str | None = None  # None: the default rule (engines.catalog.tiers.DEFAULT_RULE)
    fx_name: str = ""  # UCS blocks for the files' names and metadata ("": the run's)
    creator: str = ""
    source: str = ""
    # The `lora` column: adapters (paths absolute after the check) and, for the parameters
    # hash, each file's SHA-256 (so an edited adapter file renders its takes again).
    adapters: tuple[AdapterChoice, ...] = ()
    adapter_sha256: tuple[str, ...] = ()

    def request(self, seed: int) -> GenerationRequest:
        return GenerationRequest(
            prompt=self.prompt, negative_prompt=self.negative_prompt, model=self.model,
            decoder=self.decoder, precision=self.precision, seconds=self.seconds,
            steps=self.steps, seed=seed, cfg=self.cfg, apg=self.apg, init_audio=self.init_audio,
            init_noise_level=self.init_noise_level, inpaint_spans=list(self.inpaint),
            backend=self.backend, codec_tier=self.codec_tier, adapters=self.adapters)


def parse_row(where: str, values: dict[str, Any], folder: Path,
              defaults: RowDefaults) -> RowSpec:
    """The row's RowSpec; RowError (one sentence naming `where`) for the first bad value."""
    try:
        return _checked(_spec(where, values, folder, defaults))
    except RequestError as exc:
        raise RowError(f"{where}: {_lower_first(for_list(exc.args[0]))}") from None
    except AudioFileError as exc:  # an init_audio that is empty, text, not audio at all
        raise RowError(f"{where}: {_lower_first(str(exc))}") from None
    except OSError as exc:  # an init_audio that vanished or cannot be read while checked
        raise RowError(sentence(f"{where}: could not read its init_audio", exc)) from None


def for_list(text: object) -> str:
    """An engine sentence as a sound list's user needs it: a remedy that names a setting
    names the row's column (init_audio, cfg) instead of the command line's flag."""
    if isinstance(text, Advice):
        return text.worded(LIST_WORDS)
    return str(text)


def _spec(where: str, values: dict[str, Any], folder: Path, defaults: RowDefaults) -> RowSpec:
    get = values.get
    name = _text(get("name"), "name")
    if not name:
        raise RequestError("name is empty; give every sound a name, e.g. door_creak.")
    if looks_blank(name):  # zero-width or direction characters only: a file named "_01.wav"
        raise RequestError(blank_label_sentence("The name", name))
    prompt = _text(get("prompt"), "prompt")
    if not prompt:
        raise RequestError("prompt is empty; describe the sound, e.g. \"old door creaking\".")
    init_audio = _init_audio(get("init_audio"), folder)

    entry = init_entry(init_audio) if init_audio is not None else None
    if init_audio is not None and entry is None:
        raise RequestError(f"init_audio '{printable(init_audio)}' could not be read; check "
                           "that it is a readable audio file.")
    seconds = _number(get("seconds"), "seconds", "1.5")
    steps = _whole(get("steps"), "steps", 1, MAX_STEPS)
    return RowSpec(
        where=where, name=name, prompt=prompt,
        negative_prompt=_text(get("negative_prompt"), "negative_prompt"),
        model=get_model_set(_text(get("model"), "model") or defaults.model).key,
        decoder=_text(get("decoder"), "decoder") or None,
        precision=_text(get("precision"), "precision") or defaults.precision,
        seconds=defaults.seconds if seconds is None else seconds,
        steps=defaults.steps if steps is None else steps,
        seed=_whole(get("seed"), "seed", 0, MAX_SEED),
        variations=_variations(get("variations")),
        cfg=_or(_number(get("cfg"), "cfg", "3"), 1.0),
        apg=_or(_number(get("apg"), "apg", "0.5"), 1.0),
        init_audio=init_audio, init_entry=entry,
        init_noise_level=_number(get("init_noise_level"), "init_noise_level", "0.6"),
        inpaint=_spans(get("inpaint")),
        loop=_flag(get("loop"), "loop"),
        loop_method=_loop_method(get("loop_method")),
        preset=_text(get("preset"), "preset") or None,
        category=_text(get("category"), "category"),
        backend=defaults.backend,
        codec_tier=_text(get("codec_tier"), "codec_tier") or defaults.codec_tier,
        fx_name=_text(get("fx_name"), "fx_name"), creator=_text(get("creator"), "creator"),
        source=_text(get("source"), "source"),
        adapters=parse_adapter_cell(get("lora"), folder))


def _checked(spec: RowSpec) -> RowSpec:
    """The request the row makes, validated as `generate` would (ranges, init audio, spans)."""
    check_seed_run(spec.seed, spec.variations)
    checked = validate_request(spec.request(0 if spec.seed is None else spec.seed),
                               get_model_set(spec.model).max_seconds)
    # The tier as the request names it ("FP8-Fast" is fp8_fast), so the parameters hash of a
    # take does not change with how the list spells it.
    return dataclasses.replace(spec, codec_tier=checked.codec_tier, adapters=checked.adapters,
                               adapter_sha256=tuple(i.sha256 for i in checked.adapter_infos))


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def _text(value: Any, key: str) -> str:
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise RequestError(f"{key} must be text, not {_shown(value)}.")
    return str(value).strip()


def _float(value: Any) -> float | None:
    """None for an empty cell, NaN for what is not a number, +-inf for a number too large for
    a float (1e999, or 400 digits: never OverflowError)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return as_float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            pass
    return math.nan


def _number(value: Any, key: str, example: str) -> float | None:
    number = _float(value)
    if number is not None and math.isinf(number):
        raise RequestError(f"{_named(key, value)} is far out of range; write a number like "
                           f"{example}.")
    if number is not None and math.isnan(number):
        raise RequestError(f"{key} {_shown(value)} is not a number; write it like {example}.")
    return number


def _whole(value: Any, key: str, low: int, high: int) -> int | None:
    """A whole number from `low` to `high`. Integers stay exact on the way (a float would
    round a seed past 2**53 into another seed); "1e3" and 8.0 are whole numbers too."""
    number: int | float | None
    if isinstance(value, str) and _WHOLE.fullmatch(value.strip()):
        number = json_int(value.strip())
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        number = _float(value)
        if number is None:
            return None
        if math.isnan(number) or (math.isfinite(number) and not number.is_integer()):
            raise RequestError(f"{key} {_shown(value)} is not a whole number; write it like "
                               "8.")
    if not low <= number <= high:
        # As the number reads ("steps 0", not "steps '0'"); a cell of many digits as typed.
        typed = isinstance(value, str) and len(value.strip()) > 15
        raise RequestError(f"{_named(key, value if typed else number)} is out of range; choose "
                           f"a whole number from {low} to {high}.")
    return int(number)


def _variations(value: Any) -> int:
    count = _whole(value, "variations", 1, MAX_VARIATIONS)
    return 1 if count is None else count


def _loop_method(value: Any) -> str | None:
    method = _text(value, "loop_method").lower()
    if method and method not in LOOP_METHODS:
        raise RequestError(f"loop_method {_shown(value)} is not one of {', '.join(LOOP_METHODS)}; "
                           "write model or crossfade, or leave it empty.")
    return method or None


def _flag(value: Any, key: str) -> bool | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    word = str(value).strip().lower() if isinstance(value, str) else None
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False if word else None
    raise RequestError(f"{key} {_shown(value)} is not yes or no; write 1 or 0 (true or "
                       "false).")


def _spans(value: Any) -> tuple[tuple[float, float], ...]:
    """"1:1.5 2:2.5" (or "1:1.5, 2:2.5"), or in JSON ["1:1.5", [2, 2.5]]."""
    if value is None:
        return ()
    if isinstance(value, str):
        parts: list[Any] = [part for part in _SPAN_SEPARATORS.split(value.strip()) if part]
    elif isinstance(value, list):
        parts = value
    else:
        raise RequestError(f"inpaint {_shown(value)} is not a list of spans; write START:END "
                           "pairs in seconds, e.g. \"0.5:1 2:2.5\".")
    spans = []
    for part in parts:
        if isinstance(part, list) and len(part) == 2 and all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in part):
            spans.append((float(part[0]), float(part[1])))
            continue
        pieces = part.split(":") if isinstance(part, str) else []
        try:
            start, end = (float(piece) for piece in pieces)
        except ValueError:
            start = end = math.nan
        if len(pieces) != 2 or not (math.isfinite(start) and math.isfinite(end)):
            raise RequestError(f"inpaint span {_shown(part)} is not START:END in seconds; "
                               "write spans like \"0.5:1 2:2.5\".")
        spans.append((start, end))
    return tuple(spans)


def _init_audio(value: Any, folder: Path) -> Path | None:
    text = _text(value, "init_audio")
    if not text:
        return None
    path = Path(text).expanduser()
    if not path.is_absolute():
        path = folder / path
    if not path.is_file():
        what = "is not a file" if path.exists() else "was not found"
        raise RequestError(f"init_audio '{printable(text)}' {what} (looked at "
                           f"'{printable(path)}'); give a path relative to the list's folder.")
    return path


def _shown(value: Any) -> str:
    """A value as the row holds it, in a few characters: 400 digits read 1e+400 (repr would
    spell them out, and fails past Python's digit limit)."""
    if isinstance(value, str) and len(value.strip()) > 15 and _WHOLE.fullmatch(value.strip()):
        return short(Decimal(value.strip()))  # Decimal reads any number of digits
    if isinstance(value, (int, float)) and not isinstance(value, bool) and is_huge(value):
        return short(value)
    text = repr(value) if not isinstance(value, str) else f"'{value}'"
    return printable(text if len(text) <= 40 else text[:37] + "...")


def _named(key: str, value: Any) -> str:
    """"seed 1e+400", or for a number no float holds (a JSON integer of 5000 digits reads as
    infinite) just the key: "inf" is not what the user wrote."""
    if isinstance(value, float) and math.isinf(value):
        return key
    return f"{key} {_shown(value)}"


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text
