"""Numbers from files people edit (sound lists, settings.json) and numbers in sentences.

JSON allows integers of any length, but Python refuses to parse one past 4300 digits (and its
message then quotes `sys.set_int_max_str_digits` at the user), and an integer of 400 digits
cannot become a float. The readers here turn such a number into an infinite float, which
every range check already refuses with a sentence of its own; `short` writes any number in a
few characters ("1e+308"), so a sentence never echoes hundreds of digits back.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

HUGE = 1e15  # from here on a number is written in exponent form


def json_int(text: str) -> int | float:
    """`parse_int` for json.loads: the integer, or an infinite float past the digit limit."""
    try:
        return int(text)
    except ValueError:
        return float(text)  # float() has no digit limit: past the float range it is +-inf


def json_loads(text: str | bytes) -> Any:
    """json.loads for files people edit: integers of any length read (see json_int).
    Raises ValueError for text that is not JSON, RecursionError for nesting too deep."""
    return json.loads(text, parse_int=json_int)


def as_float(value: int | float) -> float:
    """`value` as a float; an integer past the float range becomes +-inf, not OverflowError."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def is_huge(value: int | float | Decimal) -> bool:
    """True for a number a sentence should write in exponent form (or that is not finite)."""
    try:
        return not abs(value) < HUGE
    except TypeError:
        return False


def short(value: int | float | Decimal) -> str:
    """A number in a dozen characters at most: 12, -0.5, 1e+308, -7e+20, 9.99e+399, inf."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if not is_huge(value):
        return f"{value:g}" if isinstance(value, float) else str(value)
    text = f"{Decimal(value):.3g}"  # Decimal: exact for integers past the float range
    mantissa, _, exponent = text.partition("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{exponent}" if exponent else mantissa
