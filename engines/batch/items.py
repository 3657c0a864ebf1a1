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
from pathlib import Path
from typing import Any

from engines.errors import RequestError
from engines.failures import printable
from engines.request import MAX_SEED, GenerationRequest

MAX_VARIATIONS = 100
_TRUE = {"1", "true", "yes", "y", "on", "x"}
_FALSE = {"0", "false", "no", "n", "off", ""}
_SPAN_SEPARATORS = re.compile(r"[\s,;]+")


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
    preset: str | None
    category: str
    backend: str
    codec_tier: str | None = None  # None: the default rule (engines.tiers.DEFAULT_RULE)

    def request(self, seed: int) -> GenerationRequest:
        return GenerationRequest(
            prompt=self.prompt, negative_prompt=self.negative_prompt, model=self.model,
            decoder=self.decoder, precision=self.precision, seconds=self.seconds,
            steps=self.steps, seed=seed, cfg=self.cfg, apg=self.apg, init_audio=self.init_audio,
            init_noise_level=self.init_noise_level, inpaint_spans=list(self.inpaint),
            backend=self.backend, codec_tier=self.codec_tier)


def parse_row(where: str, values: dict[str, Any], folder: Path,
              defaults: RowDefaults) -> RowSpec:
    """The row's RowSpec; RowError (one sentence naming `where`) for the first bad value."""
    try:
        return _checked(_spec(where, values, folder, defaults))
    except RequestError as exc:
        raise RowError(f"{where}: {_lower_first(str(exc))}") from None


def _spec(where: str, values: dict[str, Any], folder: Path, defaults: RowDefaults) -> RowSpec:
    get = values.get
    name = _text(get("name"), "name")
    if not name:
        raise RequestError("name is empty; give every sound a name, e.g. door_creak.")
    prompt = _text(get("prompt"), "prompt")
    if not prompt:
        raise RequestError("prompt is empty; describe the sound, e.g. \"old door creaking\".")
    init_audio = _init_audio(get("init_audio"), folder)
    from engines.catalog import get_model_set
    from engines.provenance import init_entry

    entry = init_entry(init_audio) if init_audio is not None else None
    if init_audio is not None and entry is None:
        raise RequestError(f"init_audio '{printable(init_audio)}' could not be read; check "
                           "that it is a readable audio file.")
    seconds = _number(get("seconds"), "seconds", "1.5")
    steps = _whole(get("steps"), "steps")
    return RowSpec(
        where=where, name=name, prompt=prompt,
        negative_prompt=_text(get("negative_prompt"), "negative_prompt"),
        model=get_model_set(_text(get("model"), "model") or defaults.model).key,
        decoder=_text(get("decoder"), "decoder") or None,
        precision=_text(get("precision"), "precision") or defaults.precision,
        seconds=defaults.seconds if seconds is None else seconds,
        steps=defaults.steps if steps is None else steps,
        seed=_whole(get("seed"), "seed"),
        variations=_variations(get("variations")),
        cfg=_or(_number(get("cfg"), "cfg", "3"), 1.0),
        apg=_or(_number(get("apg"), "apg", "0.5"), 1.0),
        init_audio=init_audio, init_entry=entry,
        init_noise_level=_number(get("init_noise_level"), "init_noise_level", "0.6"),
        inpaint=_spans(get("inpaint")),
        loop=_flag(get("loop"), "loop"),
        preset=_text(get("preset"), "preset") or None,
        category=_text(get("category"), "category"),
        backend=defaults.backend,
        codec_tier=_text(get("codec_tier"), "codec_tier") or defaults.codec_tier)


def _checked(spec: RowSpec) -> RowSpec:
    """The request the row makes, validated as `generate` would (ranges, init audio, spans)."""
    from engines.catalog import get_model_set
    from engines.request import validate_request

    if spec.seed is not None and not 0 <= spec.seed <= MAX_SEED - (spec.variations - 1):
        top = MAX_SEED - (spec.variations - 1)
        raise RequestError(f"seed {spec.seed} with {spec.variations} variation(s) needs seeds "
                           f"up to {spec.seed + spec.variations - 1}; choose a seed from 0 to "
                           f"{top}.")
    checked = validate_request(spec.request(0 if spec.seed is None else spec.seed),
                               get_model_set(spec.model).max_seconds)
    # The tier as the request names it ("FP8-Fast" is fp8_fast), so the parameters hash of a
    # take does not change with how the list spells it.
    return dataclasses.replace(spec, codec_tier=checked.codec_tier)


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def _text(value: Any, key: str) -> str:
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise RequestError(f"{key} must be text, not {_shown(value)}.")
    return str(value).strip()


def _number(value: Any, key: str, example: str) -> float | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            pass
    raise RequestError(f"{key} {_shown(value)} is not a number; write it like {example}.")


def _whole(value: Any, key: str) -> int | None:
    try:
        number = _number(value, key, "8")
    except RequestError:
        number = math.nan
    if number is None:
        return None
    if not math.isfinite(number) or not number.is_integer():
        raise RequestError(f"{key} {_shown(value)} is not a whole number; write it like 8.")
    return int(number)


def _variations(value: Any) -> int:
    count = _whole(value, "variations")
    if count is None:
        return 1
    if not 1 <= count <= MAX_VARIATIONS:
        raise RequestError(f"variations {count} is out of range; choose 1 to "
                           f"{MAX_VARIATIONS}.")
    return count


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
    text = repr(value) if not isinstance(value, str) else f"'{value}'"
    return printable(text if len(text) <= 40 else text[:37] + "...")


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text
