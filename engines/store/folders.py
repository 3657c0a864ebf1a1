"""Where a library keeps what, under its folder (`engines.paths.library_dir()` unless told):

    library.sqlite3      one row per take (WAL mode, schema version in PRAGMA user_version)
    audio/               the takes, as WAV or FLAC with a JSON note inside (see wavmeta)
    trash/               deleted takes' audio; `restore` moves it back
    library-edits.jsonl  the edit journal (journal.py)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DB_NAME = "library.sqlite3"
AUDIO_DIR = "audio"
TRASH_DIR = "trash"


@dataclass(frozen=True)
class LibraryFolders:
    """The paths of one library, as the parts that read and write its files are handed them."""

    root: Path
    audio_dir: Path
    trash_dir: Path
    db_path: Path

    @classmethod
    def under(cls, root: Path) -> LibraryFolders:
        root = Path(root)
        return cls(root, root / AUDIO_DIR, root / TRASH_DIR, root / DB_NAME)

    def audio_folder(self, deleted: bool) -> Path:
        """Where a take's audio lies: in trash/ while the take is deleted."""
        return self.trash_dir if deleted else self.audio_dir
