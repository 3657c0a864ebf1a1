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

from engines.sound_import.extras import ExtrasReport, make_sound_extras
from engines.sound_import.importer import ImportProgress, ImportReport, import_folders

__all__ = ["ExtrasReport", "ImportProgress", "ImportReport", "import_folders",
           "make_sound_extras"]
