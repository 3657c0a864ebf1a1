"""The sound library: takes on disk, their provenance in SQLite, metadata inside the WAVs."""

from engines.store.library import (
    SCHEMA_VERSION,
    ClipLibrary,
    LibraryError,
    TakeRecord,
)

__all__ = ["SCHEMA_VERSION", "ClipLibrary", "LibraryError", "TakeRecord"]
