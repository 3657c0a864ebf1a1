"""Small checked readers for a generation request's values, and the numbers its messages show:
each returns the value or raises RequestError with one sentence saying what to give."""

from __future__ import annotations

import math
import numbers
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal

import numpy as np

from engines.errors import RequestError
from engines.number_text import short


def is_number(value: object) -> bool:
    """A real number, not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


# Numbers in messages are for people: computed lengths and limits are rounded (to 10 ms for
# seconds), and a limit is rounded towards the inside of its range, so the number a message
# offers is always one the check accepts (2.21878 s allowed reads "up to 2.21 s", never a
# "2.22 s" that would be refused). Values the user typed are echoed as typed; whole numbers a
# user must type exactly (seeds, steps) are never rounded.
SECONDS_PLACES = 2
VALUE_PLACES = 3


def fmt(value: float, places: int = VALUE_PLACES, rounding: str = ROUND_HALF_EVEN) -> str:
    """`value` with at most `places` decimals and no trailing zeros: 2.21878 -> "2.22"."""
    try:
        step = Decimal(1).scaleb(-places)
        text = format(Decimal(repr(float(value))).quantize(step, rounding=rounding), "f")
    except (ArithmeticError, ValueError):  # huge or not finite: no rounding to speak of
        return f"{value:g}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def echo(value: float, avoid: str = "") -> str:
    """A value the user gave, as they would recognise it; fully when six digits would make it
    read like `avoid` (the limit it broke)."""
    text = f"{value:.6g}"
    if text == avoid:
        text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def checked_number(name: str, value: object, low: float, high: float, *, low_open: bool = False,
            unit: str = "", fix: str = "") -> float:
    """A finite real in [low, high] (or (low, high] with low_open), else RequestError."""
    places = SECONDS_PLACES if unit == " s" else VALUE_PLACES
    shown_low = fmt(low, places, ROUND_CEILING)  # rounded into the range
    shown_high = fmt(high, places, ROUND_FLOOR)
    if not is_number(value):
        raise RequestError(f"{name} must be a number, got {value!r}; give a value from "
                           f"{shown_low} to {shown_high}{unit}.")
    try:
        number = float(value)  # type: ignore[arg-type]
    except OverflowError:  # an integer of hundreds of digits
        number = math.inf if value > 0 else -math.inf  # type: ignore[operator]
    if not math.isfinite(number):
        raise RequestError(f"{name} is {number}; give a finite number from {shown_low} to "
                           f"{shown_high}{unit}.")
    too_low = number <= low if low_open else number < low
    if too_low or number > high:
        bracket = "above" if low_open else "from"
        tail = f" ({fix})" if fix else ""
        given = echo(number, shown_low if too_low else shown_high)
        raise RequestError(f"{name} {given}{unit} is out of range; choose a value "
                           f"{bracket} {shown_low} to {shown_high}{unit}{tail}.")
    return number


def checked_integer(name: str, value: object, low: int, high: int) -> int:
    """A whole number in [low, high], else RequestError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise RequestError(f"{name} must be a whole number from {low} to {high}, got "
                           f"{value!r}.")
    number = int(value)
    if not low <= number <= high:
        raise RequestError(f"{name} {short(number)} is out of range; choose a whole number "
                           f"from {low} to {high}.")
    return number


def checked_text(name: str, value: object) -> str:
    """Text, stripped, else RequestError."""
    if not isinstance(value, str):
        raise RequestError(f"{name} must be text, got {type(value).__name__} {value!r}.")
    return value.strip()
