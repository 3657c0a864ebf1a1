"""The finishing chain of a take as plain parameters (issue 11): stored beside the raw take, so
the finished audio is derived and reproducible and the raw take is never touched.

`validate()` refuses a value with one sentence naming the setting, the allowed range and the
fix; `from_dict()` reads what `to_dict()` wrote (a preset, a sidecar, the settings file), skips
keys it does not know (a newer version may add some) and refuses wrong types with a sentence.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from engines.audio_io.formats import FORMATS as DELIVERY_FORMATS
from engines.constants import SAMPLE_RATE
from engines.errors import RequestError
from engines.number_text import as_float, is_huge, short

FADE_CURVES = ("linear", "equal-power", "exponential")
RATES = (44100, 48000)
FORMATS = tuple(DELIVERY_FORMATS)  # engines.audio_io.formats: the one format table
PEAK_MODES = ("limit", "reduce")
LOOP_METHODS = ("model", "crossfade")  # who makes the seam: the take's model, or a crossfade

LOUDNESS_RANGE = (-60.0, -5.0)  # LUFS
TRUE_PEAK_RANGE = (-20.0, 0.0)  # dBTP
FADE_RANGE_MS = (0.0, 10000.0)
TRIM_DB_RANGE = (-120.0, -10.0)  # dBFS; above -10 the "silence" would be the sound itself
TRIM_PAD_RANGE_MS = (0.0, 1000.0)
LOOP_SEAM_RANGE_S = (0.1, 5.0)
MAX_TRIM_POINT_S = 3600.0
MAX_PRESET_NAME = 64


@dataclass(frozen=True)
class FinishSettings:
    trim: bool = False
    trim_db: float = -60.0
    trim_pad_ms: float = 10.0
    trim_in_s: float | None = None  # manual in point; cut before the silence trim
    trim_out_s: float | None = None
    fade_in_ms: float = 0.0
    fade_out_ms: float = 0.0
    fade_curve: str = "linear"
    loudness_lufs: float | None = None
    true_peak_dbtp: float | None = None
    peak_mode: str = "limit"  # over the ceiling: "limit" peaks or "reduce" the whole gain
    loop: bool = False  # the audio handed to finish() is already a seamless loop
    loop_seam_s: float = 0.5  # the loop maker snaps it to the 4096-sample latent grid
    loop_method: str = "model"  # "crossfade" never needs the model (and loses the seam)
    rate: int = SAMPLE_RATE
    mono: bool = False
    format: str = "wav16"
    preset: str = ""

    def validate(self) -> FinishSettings:
        """Raises RequestError (one sentence) for the first value out of range; returns self."""
        _check_range("trim threshold", self.trim_db, TRIM_DB_RANGE, "dBFS")
        _check_range("trim pad", self.trim_pad_ms, TRIM_PAD_RANGE_MS, "ms")
        for name, point in (("trim in point", self.trim_in_s),
                            ("trim out point", self.trim_out_s)):
            if point is not None:
                _check_range(name, point, (0.0, MAX_TRIM_POINT_S), "s")
        if (self.trim_in_s is not None and self.trim_out_s is not None
                and self.trim_out_s <= self.trim_in_s):
            raise RequestError(f"trim out point {_show(self.trim_out_s)} s is not after the in "
                               f"point {_show(self.trim_in_s)} s; move the out point later.")
        _check_range("fade in", self.fade_in_ms, FADE_RANGE_MS, "ms")
        _check_range("fade out", self.fade_out_ms, FADE_RANGE_MS, "ms")
        _check_choice("fade curve", self.fade_curve, FADE_CURVES)
        if self.loudness_lufs is not None:
            _check_range("loudness", self.loudness_lufs, LOUDNESS_RANGE, "LUFS")
        if self.true_peak_dbtp is not None:
            _check_range("true peak", self.true_peak_dbtp, TRUE_PEAK_RANGE, "dBTP")
        _check_choice("peak mode", self.peak_mode, PEAK_MODES)
        _check_range("loop seam", self.loop_seam_s, LOOP_SEAM_RANGE_S, "s")
        _check_choice("loop method", self.loop_method, LOOP_METHODS)
        if self.rate not in RATES:
            raise RequestError(f"sample rate {_shown_value(self.rate)} Hz is not offered; choose "
                               "44100 or 48000 Hz.")
        _check_choice("format", self.format, FORMATS)
        if len(self.preset) > MAX_PRESET_NAME:
            raise RequestError(f"preset name is {len(self.preset)} characters long; use at most "
                               f"{MAX_PRESET_NAME}.")
        return self

    @property
    def is_identity(self) -> bool:
        """True when finishing leaves the take's audio as it is (44.1 kHz stereo, no loop
        points). The file format is still the writer's choice."""
        return (not self.trim and self.trim_in_s is None and self.trim_out_s is None
                and self.fade_in_ms == 0 and self.fade_out_ms == 0
                and self.loudness_lufs is None and self.true_peak_dbtp is None
                and not self.loop and self.rate == SAMPLE_RATE and not self.mono)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values; `from_dict(to_dict())` gives the same settings. The default loop
        method is left out, so chains stored (and batch takes hashed) before it existed keep
        their exact form."""
        values = asdict(self)
        if values["loop_method"] == "model":
            del values["loop_method"]
        return values

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FinishSettings:
        """Settings from a stored dict: unknown keys are skipped, missing ones take defaults,
        wrong types and values out of range raise RequestError. Validated."""
        if not isinstance(data, dict):
            raise RequestError(f"finishing settings must be a JSON object, not "
                               f"{type(data).__name__}; save the preset again.")
        values: dict[str, Any] = {}
        for spec in fields(cls):
            if spec.name in data:
                values[spec.name] = _typed(spec.name, data[spec.name], _KINDS[spec.name])
        return cls(**values).validate()


# Each field's stored kind: what from_dict accepts for it.
_KINDS = {
    "trim": "bool", "trim_db": "number", "trim_pad_ms": "number",
    "trim_in_s": "number?", "trim_out_s": "number?",
    "fade_in_ms": "number", "fade_out_ms": "number", "fade_curve": "text",
    "loudness_lufs": "number?", "true_peak_dbtp": "number?", "peak_mode": "text",
    "loop": "bool", "loop_seam_s": "number", "loop_method": "text", "rate": "integer",
    "mono": "bool",
    "format": "text", "preset": "text",
}
_KIND_WORDS = {"bool": "true or false", "number": "a number", "number?": "a number or null",
               "integer": "a whole number", "text": "text"}


def _typed(name: str, value: Any, kind: str) -> Any:
    optional = kind.endswith("?")
    base = kind.rstrip("?")
    if value is None and optional:
        return None
    ok = {
        "bool": isinstance(value, bool),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "text": isinstance(value, str),
    }[base]
    if not ok:
        shown = _shown_value(value)
        raise RequestError(f"finishing setting '{name}' must be {_KIND_WORDS[kind]}, not "
                           f"{shown}; fix it in the preset or save the preset again.")
    return as_float(value) if base == "number" else value  # 400 digits: inf, refused below


def _shown_value(value: Any) -> str:
    """A stored value in a few characters, whatever it is (repr fails past 4300 digits)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and is_huge(value):
        return short(value)
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _show(value: float) -> str:
    """A number as people write it: -70, -0.5, 12.25; 1e+308 rather than 309 digits."""
    if is_huge(value):
        return short(value)
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _check_range(name: str, value: object, bounds: tuple[float, float], unit: str) -> None:
    low, high = bounds
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RequestError(f"{name} must be a number, not {_shown_value(value)}; choose a value "
                           f"from {_show(low)} to {_show(high)} {unit}.")
    if math.isinf(value):  # 1e999, or a stored integer of hundreds of digits
        raise RequestError(f"{name} is far out of range; choose a value from {_show(low)} to "
                           f"{_show(high)} {unit}.")
    if not math.isfinite(value):
        raise RequestError(f"{name} is {value}; choose a finite value from {_show(low)} to "
                           f"{_show(high)} {unit}.")
    if not low <= value <= high:
        shown = _show(value)
        if shown in (_show(low), _show(high)):  # -60.001 must not read as the limit -60
            shown = repr(float(value))
        raise RequestError(f"{name} {shown} {unit} is out of range; choose a value from "
                           f"{_show(low)} to {_show(high)} {unit}.")


def _check_choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise RequestError(f"{name} {value!r} is not offered; choose one of "
                           f"{', '.join(choices)}.")
