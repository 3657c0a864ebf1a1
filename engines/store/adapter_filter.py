"""The library's adapter filter: takes made with one adapter, named by its file name (with or
without .safetensors, in any case) or by the start of its SHA-256. A take keeps its adapters
in its engine files (role "adapter", engines.provenance.library_adapter_files), so the filter
reads that JSON with SQLite's JSON functions and the schema needs no new column."""

from __future__ import annotations

import re

from engines.error_sentences import printable
from engines.store.records import LibraryError
from engines.text import storable

MIN_SHA_PREFIX = 6  # fewer hex digits would name many files by chance
_HEX = re.compile(r"^[0-9a-f]+$")
# A row salvaged from a damaged file may hold text that is not JSON: it reads as no adapters
# (json_each of it would stop the whole search).
_ADAPTERS = ("SELECT 1 FROM json_each(CASE WHEN json_valid(t.engine_files) THEN t.engine_files "
             "ELSE '[]' END) AS a WHERE json_extract(a.value, '$.role') = 'adapter'")


def adapter_clause(name_or_sha: str) -> tuple[str, list]:
    """SQL (over `takes t`) for takes made with the adapter `name_or_sha`, with its
    parameters; LibraryError (one sentence) for an empty name."""
    wanted = storable(str(name_or_sha)).strip()
    if not wanted:
        raise LibraryError("The adapter filter is empty; give an adapter's file name or the "
                           "start of its SHA-256.")
    if len(wanted) > 255:
        raise LibraryError(f"'{printable(wanted[:40])}...' is too long to be an adapter's file "
                           "name; give its name or the start of its SHA-256.")
    name = wanted.lower()
    stem = name.removesuffix(".safetensors")
    tests = ["lower(json_extract(a.value, '$.file_name')) IN (?, ?)"]
    params: list = [name, f"{stem}.safetensors"]
    if len(name) >= MIN_SHA_PREFIX and _HEX.match(name):
        tests.append("substr(json_extract(a.value, '$.sha256'), 1, ?) = ?")
        params += [len(name), name]
    return f"EXISTS ({_ADAPTERS} AND ({' OR '.join(tests)}))", params
