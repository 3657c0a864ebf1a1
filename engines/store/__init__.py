"""The sound library: takes on disk, their provenance in SQLite, a note inside each audio file,
and an edit journal that outlives a damaged database.

ClipLibrary is in engines.store.library. This package imports nothing, so that a module that
needs one small piece (rows, records, wavmeta) does not load the whole library with it."""
