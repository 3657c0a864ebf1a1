"""Runs of seeds: `generate --variations N` and a sound list's `variations` column give
variation k the seed seed + k - 1. One rule for both front ends: at most MAX_VARIATIONS takes,
and every seed of the run within 0..MAX_SEED, never wrapping past the last seed (so the seed a
user reads next to a take is the one that made it).
"""

from __future__ import annotations

import secrets

from engines.errors import RequestError
from engines.number_text import short
from engines.request import MAX_SEED

MAX_VARIATIONS = 99  # variation k of a name is <name>_NN: two digits


def check_seed_run(seed: int | None, variations: int) -> None:
    """Variation k gets seed + k - 1, for `generate --variations` and a sound list's row alike:
    the seeds never wrap past MAX_SEED, so every seed a user reads is the one used. RequestError
    when the count or the seeds do not fit."""
    if not 1 <= variations <= MAX_VARIATIONS:
        raise RequestError(f"variations {short(variations)} is out of range; choose 1 to "
                           f"{MAX_VARIATIONS}.")
    top = MAX_SEED - (variations - 1)
    if seed is None or 0 <= seed <= top:
        return
    if not 0 <= seed <= MAX_SEED:
        raise RequestError(f"seed {short(seed)} is out of range; choose a whole number from 0 "
                           f"to {MAX_SEED}.")
    raise RequestError(f"seed {seed} with {variations} variations needs seeds up to "
                       f"{seed + variations - 1}; choose a seed from 0 to {top}.")


def random_seed_run(variations: int) -> int:
    """A random first seed whose `variations` consecutive seeds all fit (see check_seed_run)."""
    return secrets.randbelow(MAX_SEED - variations + 2)
