"""The designer's own sound folders, referenced in place in the library (issue 34).

    walk        the files under the folders (symlink loops followed once)
    probe       one file: header, metadata and fingerprint, read without decoding its audio
    riff_meta, ixml_meta, vorbis_meta, ucs_filename, metadata   what a file says about itself
    sound_rows  what the library keeps of one (engines.store.sound_files holds the tables)
    importer    import and rescan: added, changed, moved and deleted files, with progress
    extras      thumbnail peaks and sound embeddings, made afterwards in the background
    watch       rescans on changes (watchdog when installed, else polling)

Files are only ever opened for reading. Front ends call `import_folders` and
`make_sound_extras` (see /docs/cli.md, `library import`).
"""

from importlib import import_module

# Loaded when first asked for: the window's thumbnails use engines.sound_import.peaks alone and
# must not pay for the importer at start.
_HOMES = {"ExtrasReport": "extras", "make_sound_extras": "extras",
          "ImportProgress": "importer", "ImportReport": "importer",
          "import_folders": "importer"}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
