"""Lengths of time as people read them, for every sentence the app and the CLI show.

"250 ms", "1.09 s", "2 s", "2 min 5 s". The value is rounded once, in whole units of the
precision its size deserves (1 ms under a second, 10 ms under a minute, 100 ms above), and the
text is made from that rounded count, so a length never reads "1000 ms" or "60 s".

Rule for comparisons in messages: compare what is shown (`same_when_shown`), never the raw
floats. 1.0899 s and 1.09 s both read "1.09 s"; a sentence saying one is shorter than the
other would contradict itself.
"""

from __future__ import annotations

import math

_MS_PER_S = 1000
_S_PER_MIN = 60


def duration_text(seconds: float) -> str:
    """`seconds` as a person reads it: "250 ms", "1.09 s", "2 s", "2 min 5.3 s"."""
    value = float(seconds)
    if not math.isfinite(value):
        return f"{value} s"
    sign, value = ("-", -value) if value < 0 else ("", value)
    ms = round(value * _MS_PER_S)
    if ms < _MS_PER_S:
        return f"{sign}{ms} ms"
    centis = round(value * 100)
    if centis < _S_PER_MIN * 100:
        return f"{sign}{_trim(centis, 100)} s"
    tenths = round(value * 10)
    minutes, rest = divmod(tenths, _S_PER_MIN * 10)
    if rest == 0:
        return f"{sign}{minutes} min"
    return f"{sign}{minutes} min {_trim(rest, 10)} s"


def same_when_shown(a: float, b: float) -> bool:
    """Whether two lengths read the same (then no message may say one is longer)."""
    return duration_text(a) == duration_text(b)


def _trim(count: int, per_unit: int) -> str:
    """`count` hundredths (or tenths) of a unit without trailing zeros: 109 -> "1.09"."""
    whole, part = divmod(count, per_unit)
    if part == 0:
        return str(whole)
    digits = len(str(per_unit)) - 1
    return f"{whole}.{part:0{digits}d}".rstrip("0")
