"""Counting how often a take's request is validated and its codec tier normalised, wherever
those functions were imported: issue 33 asks for one of each per take, on every front end."""

from __future__ import annotations

import sys
from collections import Counter

import pytest

from engines import catalog, request

COUNTED = {"validate_request": request.validate_request,
           "normalize_tier": catalog.normalize_tier}


def count_calls(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """A Counter of calls to each COUNTED function, by name, from now on: every module holding
    one of them under any name gets a counting wrapper instead."""
    calls: Counter = Counter()

    def counting(name, original):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return original(*args, **kwargs)
        return wrapper

    wrappers = {id(fn): counting(name, fn) for name, fn in COUNTED.items()}
    for module in list(sys.modules.values()):
        if module is None or not getattr(module, "__name__", "").startswith(("engines", "app")):
            continue
        for attr, value in list(vars(module).items()):
            if id(value) in wrappers and any(value is fn for fn in COUNTED.values()):
                monkeypatch.setattr(module, attr, wrappers[id(value)])
    return calls
