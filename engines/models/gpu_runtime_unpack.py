"""Unpacking the GPU runtime's downloads into a folder laid out like site-packages, the way an
installer puts a wheel there (its files, its .dist-info, the purelib/platlib parts of its
.data), and reading each download's dependencies.

One project comes as an sdist only: `tensorrt-cu12`/`tensorrt-cu13` (the `tensorrt` import
package is a few pure-Python lines over `tensorrt_bindings`). Nothing is built: only the
named import package's .py files are taken from it, and its PKG-INFO becomes the METADATA of a
.dist-info so `importlib.metadata` (engines.gpu) sees which TensorRT is there. Any other sdist
is refused before it is downloaded (gpu_runtime_index.best_file).

Member names that would land outside the folder (absolute, `..`, a drive) are refused.
"""

from __future__ import annotations

import email.parser
import os
import shutil
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from engines.models.gpu_runtime_fetch import GpuRuntimeError

# project -> the import package its sdist holds
SDIST_PACKAGES = {"tensorrt-cu12": "tensorrt", "tensorrt-cu13": "tensorrt"}
INSTALLER = "sa3-studio"
COPY_BYTES = 1 << 20


def _safe_target(folder: Path, member: str, archive: Path) -> Path:
    parts = PurePosixPath(member.replace("\\", "/")).parts
    if not parts or member.startswith(("/", "\\")) or ".." in parts or ":" in parts[0]:
        raise GpuRuntimeError(f"{archive.name} holds a file named '{member}' that would land "
                              f"outside the runtime folder; it was not unpacked.")
    return folder.joinpath(*parts)


def _wheel_target(name: str) -> str | None:
    """Where a wheel member goes, relative to the folder; None for parts an installer puts
    elsewhere (scripts, headers, data)."""
    parts = PurePosixPath(name).parts
    if parts and parts[0].endswith(".data"):
        if len(parts) > 2 and parts[1] in ("purelib", "platlib"):
            return "/".join(parts[2:])
        return None
    return name


def unpacked_bytes(archive: Path) -> int:
    """What unpacking archive writes (for the disk-space check)."""
    if archive.name.endswith(".whl"):
        with zipfile.ZipFile(archive) as wheel:
            return sum(i.file_size for i in wheel.infolist() if not i.is_dir())
    with tarfile.open(archive, "r:*") as sdist:
        return sum(m.size for m in sdist.getmembers() if m.isfile())


def _metadata_text(archive: Path) -> str:
    if archive.name.endswith(".whl"):
        with zipfile.ZipFile(archive) as wheel:
            name = next((n for n in wheel.namelist() if n.count("/") == 1
                         and n.endswith(".dist-info/METADATA")), None)
            if name is None:
                raise GpuRuntimeError(f"{archive.name} has no METADATA; it is not a wheel.")
            return wheel.read(name).decode("utf-8", "replace")
    with tarfile.open(archive, "r:*") as sdist:
        member = next((m for m in sdist.getmembers()
                       if m.isfile() and m.name.count("/") == 1
                       and m.name.endswith("/PKG-INFO")), None)
        handle = sdist.extractfile(member) if member is not None else None
        if handle is None:
            raise GpuRuntimeError(f"{archive.name} has no PKG-INFO; it is not an sdist.")
        return handle.read().decode("utf-8", "replace")


def requirements(archive: Path) -> list[Requirement]:
    """The Requires-Dist of a downloaded wheel or sdist (markers not yet evaluated)."""
    headers = email.parser.HeaderParser().parsestr(_metadata_text(archive))
    found = []
    for line in headers.get_all("Requires-Dist") or []:
        try:
            found.append(Requirement(line))
        except InvalidRequirement as exc:
            raise GpuRuntimeError(f"{archive.name} names a dependency that cannot be read "
                                  f"('{line}').") from exc
    return found


def _copy(source, target: Path, executable: bool) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as out:
        shutil.copyfileobj(source, out, COPY_BYTES)
    if executable:
        os.chmod(target, 0o755)


def unpack_wheel(archive: Path, folder: Path) -> None:
    with zipfile.ZipFile(archive) as wheel:
        for info in wheel.infolist():
            if info.is_dir():
                continue
            relative = _wheel_target(info.filename)
            if relative is None:
                continue
            target = _safe_target(folder, relative, archive)
            with wheel.open(info) as source:
                _copy(source, target, executable=bool((info.external_attr >> 16) & 0o111))


def unpack_sdist_package(archive: Path, project: str, folder: Path) -> None:
    """The pure-Python import package of project's sdist, and a .dist-info for it."""
    package = SDIST_PACKAGES[canonicalize_name(project)]
    written: list[str] = []
    with tarfile.open(archive, "r:*") as sdist:
        for member in sdist.getmembers():
            parts = PurePosixPath(member.name).parts
            if not member.isfile() or len(parts) < 3 or parts[1] != package \
                    or not member.name.endswith(".py"):
                continue
            relative = "/".join(parts[1:])
            handle = sdist.extractfile(member)
            if handle is None:
                continue
            _copy(handle, _safe_target(folder, relative, archive), executable=False)
            written.append(relative)
    if not written:
        raise GpuRuntimeError(f"{archive.name} does not hold the {package} package.")
    metadata = _metadata_text(archive)
    headers = email.parser.HeaderParser().parsestr(metadata)
    name = canonicalize_name(headers["Name"] or project).replace("-", "_")
    info = folder / f"{name}-{headers['Version']}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(metadata, encoding="utf-8")
    (info / "INSTALLER").write_text(INSTALLER + "\n", encoding="utf-8")
    record = [*written, f"{info.name}/METADATA", f"{info.name}/INSTALLER", f"{info.name}/RECORD"]
    (info / "RECORD").write_text("".join(f"{path},,\n" for path in record), encoding="utf-8")


def unpack(archive: Path, project: str, folder: Path) -> None:
    """archive (a wheel, or the sdist of an SDIST_PACKAGES project) into folder."""
    try:
        if archive.name.endswith(".whl"):
            unpack_wheel(archive, folder)
        else:
            unpack_sdist_package(archive, project, folder)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError) as exc:
        raise GpuRuntimeError(f"{archive.name} cannot be unpacked ({exc}) although it matches "
                              f"its published sha256; nothing was installed.") from exc
