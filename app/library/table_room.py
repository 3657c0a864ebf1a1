"""Which library columns fit: the name gets the room the others leave, never under NAME_FLOOR;
when the page is too narrow for every shown column and that floor (1366x768 with the side
columns in view), the columns whose facts the inspector beside the table shows anyway fold
away for as long as the room lacks - tier first, then date, status, model, seed, source, tags
and length - and come back when there is room (a wider window, a side column folded). Never a
sideways scroll bar: it hid exactly those columns, one at a time, and cut the name."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from app.library.table import CREATED, LENGTH, MODEL, SEED, SOURCE, STATUS, TAGS, TIER

NAME_FLOOR = 240  # px: "footsteps on gravel, slow walk" reads whole beside its thumbnail
TAGS_MIN = 60  # px: the least the tags give way to the name (the inspector lists them all)
TAGS_MAX = 260  # px: longer tags are cut (and listed whole in the inspector)
# First to fold when room lacks (each is a line of the inspector's facts or an edit of it).
FOLD_ORDER = (TIER, CREATED, STATUS, MODEL, SEED, SOURCE, TAGS, LENGTH)


def columns_to_fold(room: int, widths: Mapping[int, int], floor: int = NAME_FLOOR,
                    order: Iterable[int] = FOLD_ORDER) -> list[int]:
    """The columns (of `widths`: those shown besides the name, with the width each wants) to
    fold so the rest and a name of `floor` px fit in `room` px; [] when all fit."""
    need = sum(widths.values()) + floor
    folded = []
    for column in order:
        if need <= room:
            break
        if column in widths:
            folded.append(column)
            need -= widths[column]
    return folded


def tags_width(room: int, name_wants: int, preferred: int, minimum: int = TAGS_MIN) -> int:
    """The tags' width when the name and the tags share `room` px: the name is read first,
    so the tags give it what it wants, down to `minimum`, and never grow past `preferred`."""
    return max(minimum, min(preferred, room - name_wants))
