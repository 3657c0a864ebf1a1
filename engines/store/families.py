"""A take's variation number: its place in the set of variations it was made in, which is what
{n} in a file name says (engines.delivery.names) and what UCS names number (`Gravel Step 02`).

A take made since schema 4 keeps its number and its set's size from the front end that made it
(generate --variations, a sound list's row, the window's Variations). For a take kept before,
its family tells: the takes of the same prompt and settings (everything that made it but the
seed) whose seeds run on without a gap from one to the next, as `--variations` gives them. Its
number is its seed's place in that run. Imported audio is a set of one.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from typing import Any

from engines.store.records import TakeRecord

# The settings that make takes one sound; a column that is NULL matches NULL (IS).
_SAME = ("mode", "prompt", "negative_prompt", "model", "decoder", "precision", "decoder_tier",
         "seconds", "steps", "cfg", "apg", "limiter_ceiling", "init_noise_level",
         "init_source", "inpaint_spans")

Rows = Callable[[str, Any], list[sqlite3.Row]]


def variation_number(record: TakeRecord, rows: Rows) -> tuple[int, int]:
    """(n, of): the take's number in its set of variations and the set's size."""
    if record.variation is not None and record.variations is not None:
        return record.variation, record.variations
    if record.is_imported:
        return 1, 1
    values = [getattr(record, column) for column in _SAME]
    values[_SAME.index("inpaint_spans")] = json.dumps([list(s) for s in record.inpaint_spans])
    where = " AND ".join(f"{column} IS ?" for column in _SAME)
    seeds = {row[0] for row in rows(f"SELECT seed FROM takes WHERE deleted = 0 AND {where}",
                                     tuple(values))}
    seeds.add(record.seed)
    low = high = record.seed
    while low - 1 in seeds:
        low -= 1
    while high + 1 in seeds:
        high += 1
    return record.seed - low + 1, high - low + 1


def variation_numbers(records: Iterable[TakeRecord], rows: Rows) -> dict[int, tuple[int, int]]:
    """variation_number of each record, by take id."""
    return {record.id: variation_number(record, rows) for record in records}
