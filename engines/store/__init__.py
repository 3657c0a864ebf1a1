"""The sound library: takes on disk, their provenance in SQLite, a note inside each audio file,
and an edit journal that outlives a damaged database."""

from engines.store.library import (
    SCHEMA_VERSION,
    ClipLibrary,
    LibraryError,
    TakeRecord,
)

__all__ = ["SCHEMA_VERSION", "ClipLibrary", "LibraryError", "TakeRecord"]
